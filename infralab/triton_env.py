"""The one rule for where Triton kernels run: without a CUDA GPU, under the interpreter.

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
