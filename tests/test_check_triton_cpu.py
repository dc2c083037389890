"""Part 03 from a plain script on a CPU: importing the package picks the Triton interpreter."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ("import torch; from solutions.part03_kernels.vector_add import vector_add; "
          "x = torch.arange(5.0); print(vector_add(x, x).tolist())")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CPU-only check: with a GPU the kernel compiles")
def test_a_plain_script_runs_a_part03_kernel_on_the_cpu():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[0.0, 2.0, 4.0, 6.0, 8.0]"
