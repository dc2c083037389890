"""Triton exercises from a plain script on a CPU: importing the package (Part 03) or the module (Part 04's
paged_decode_kernel) picks the Triton interpreter."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = {  # a Triton exercise's module imported first, in a process without TRITON_INTERPRET: (script, stdout)
    "part03_vector_add": ("import torch; from solutions.part03_kernels.vector_add import vector_add; "
                          "x = torch.arange(5.0); print(vector_add(x, x).tolist())", "[0.0, 2.0, 4.0, 6.0, 8.0]"),
    # Part 04's kernel module sets TRITON_INTERPRET itself (its package is plain torch): against paged_attention
    "part04_paged_decode_kernel": (
        "import torch; from solutions.part04_serving.paged_decode_kernel import paged_decode_attention; "
        "from solutions.part04_serving.paged_attention import paged_decode_attention as gathered; "
        "from infralab.mistakes.part04_serving.paged_attention import make_batch; "
        "b = make_batch(torch.Generator().manual_seed(2), [7, 30], 8, 4, 1, 16); "
        "print(bool((paged_decode_attention(*b) - gathered(*b)).abs().max() < 1e-5))", "True"),
}


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CPU-only check: with a GPU the kernel compiles")
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_plain_script_runs_a_triton_exercise_on_the_cpu(name):
    script, expected = SCRIPTS[name]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == expected
