"""The one rule for where Triton kernels run: without a CUDA GPU, under the interpreter.

``TRITON_INTERPRET=1`` must be set before triton is imported; the pytest plugin and the Part 03
packages (``exercises/part03_kernels``, ``solutions/part03_kernels``) call this at import.
"""
from __future__ import annotations

import os


def interpret_without_gpu() -> None:
    """Set ``TRITON_INTERPRET=1`` unless it is set already or a CUDA GPU is present."""
    if "TRITON_INTERPRET" not in os.environ:
        import torch

        if not torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"
