"""The one rule for where Triton kernels run: without a CUDA GPU, under the interpreter; and how
they compute: an fp32 ``tl.dot`` in IEEE fp32 on the GPU too (:func:`fp32_dot_env`).

``TRITON_INTERPRET=1`` must be set before triton is imported; the pytest plugin calls this at
start-up. The Part 03 packages (``exercises/part03_kernels``, ``solutions/part03_kernels``) repeat
the same four lines on purpose: they are the student's code, and student code that imports the
harness is flagged ``harness-import`` by the isolated judge (tests/test_judge_special_exercises.py).
"""
from __future__ import annotations

import os


def interpret_without_gpu() -> None:
    """Set ``TRITON_INTERPRET=1`` unless it is set already or a CUDA GPU is present."""
    if "TRITON_INTERPRET" not in os.environ:
        import torch

        if not torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"


FP32_DOT = "ieee"
"""``TRITON_F32_DEFAULT`` where kernels compile: a ``tl.dot`` of fp32 operands without an explicit
``input_precision`` multiplies in fp32, as the interpreter does, instead of Triton's TF32 default.
Without it every fp32 hidden test of matmul, flash, decode and paged-decode attention failed on the
H200 for the reference solutions (about 1e-3 relative off against tolerances of 1e-5: TF32 keeps a
10-bit mantissa), so one kernel got two verdicts, right on the CPU and wrong on the GPU. The
challenges time bf16 and are not affected. A variable set already (by a course team) is kept."""


def fp32_dot_env(environ: dict | None = None) -> dict[str, str]:
    """The environment entry that makes compiled fp32 ``tl.dot`` IEEE fp32 (:data:`FP32_DOT`); the
    pytest plugin applies it to its own process, the cage to an executor that sees a GPU."""
    environ = os.environ if environ is None else environ
    return {"TRITON_F32_DEFAULT": environ.get("TRITON_F32_DEFAULT", FP32_DOT)}
