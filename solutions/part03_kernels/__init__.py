"""Part 03: Triton kernels, from vector add to FlashAttention.

On a machine without a CUDA GPU the kernels run under the Triton interpreter: importing this
package sets ``TRITON_INTERPRET=1`` (unless already set), as the pytest plugin does, so that
``python -c "from solutions.part03_kernels.vector_add import vector_add; ..."`` works on a CPU with CPU
tensors instead of failing with Triton's "0 active drivers". Set ``TRITON_INTERPRET=1`` yourself
before importing triton if your script imports triton first.

中文：没有 CUDA GPU 时，导入本包会设置 TRITON_INTERPRET=1（若尚未设置），核函数在 Triton 解释器里
用 CPU 张量运行；如果你的脚本先导入了 triton，请在导入之前自己设置 TRITON_INTERPRET=1。
"""
import os as _os

if "TRITON_INTERPRET" not in _os.environ:
    import torch as _torch

    if not _torch.cuda.is_available():
        _os.environ["TRITON_INTERPRET"] = "1"
