"""The isolated judge enforces the Triton-launch check of `triton: true` exercises, as the
in-process target does: a torch-only answer fails, a kernel passes."""
from pathlib import Path

import pytest

from infralab.course import load_course
from infralab.runner import TestRun, run_tests

ROOT = Path(__file__).resolve().parents[1]
TORCH_ONLY = "import torch\n\n\ndef vector_add(x, y):\n    return x + y\n"


@pytest.mark.timeout(600)
def test_isolated_grading_requires_a_triton_kernel(tmp_path):
    course = load_course(ROOT)
    kernel = tmp_path / "kernel" / "part03_kernels"
    torch_only = tmp_path / "torch_only" / "part03_kernels"
    kernel.mkdir(parents=True)
    torch_only.mkdir(parents=True)
    (kernel / "vector_add.py").write_text((ROOT / "solutions/part03_kernels/vector_add.py").read_text())
    (torch_only / "vector_add.py").write_text(TORCH_ONLY)
    exercises = course.select(exercises=["part03_kernels.vector_add"])
    records = {name: run_tests(course, TestRun(target=str(tmp_path / name), exercises=exercises, hidden=True,
                                               isolated=True, seed=0, mode="grade"))
               for name in ("kernel", "torch_only")}
    good, bad = (records[n]["exercises"][0] for n in ("kernel", "torch_only"))
    assert good["failed"] == 0 and good["passed"] > 0
    assert bad["passed"] == 0
    assert any("NoKernelLaunched" in t["message"] for t in bad["tests"])
