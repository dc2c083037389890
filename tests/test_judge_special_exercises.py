"""Exercises that need more than plain calls are graded in the cage too: Triton exercises must
launch a kernel (as in-process), and multi-rank exercises run all their ranks in the executor."""
from pathlib import Path

import pytest

from infralab.course import load_course
from infralab.runner import TestRun, run_tests

ROOT = Path(__file__).resolve().parents[1]
COURSE = load_course(ROOT)
TORCH_ONLY_ADD = "import torch\n\n\ndef vector_add(x, y):\n    return x + y\n"


def grade(tmp_path: Path, name: str, files: dict[str, str], exercise_ids: list[str]) -> dict:
    """Grade a submission made of ``files`` (path -> source) in isolation; the record's entry of each
    exercise by id, and its flags under "flags"."""
    for rel, text in files.items():
        (tmp_path / name / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name / rel).write_text(text)
    record = run_tests(COURSE, TestRun(target=str(tmp_path / name), exercises=COURSE.select(exercises=exercise_ids),
                                       hidden=True, isolated=True, seed=0, mode="grade"))
    return {**{ex["id"]: ex for ex in record["exercises"]}, "flags": record["flags"],
            "notes": record["protections"].get("notes", [])}


def source(tree: str, module: str) -> str:
    return (ROOT / tree / module).read_text()


@pytest.mark.timeout(600)
def test_isolated_grading_requires_a_triton_kernel(tmp_path):
    ex = "part03_kernels.vector_add"
    good = grade(tmp_path, "kernel", {"part03_kernels/vector_add.py": source("solutions", "part03_kernels/vector_add.py")}, [ex])[ex]
    bad = grade(tmp_path, "torch_only", {"part03_kernels/vector_add.py": TORCH_ONLY_ADD}, [ex])[ex]
    assert good["failed"] == 0 and good["passed"] > 0
    assert bad["passed"] == 0
    # torch arithmetic is refused at the dispatcher (the torch side may only allocate, view, copy,
    # cast, fill) before the missing launch is noticed
    assert any("BannedCall" in t["message"] and "Triton exercise" in t["message"] for t in bad["tests"])
    gpu = [t for t in good["tests"] if "on_gpu" in t["name"]]  # never run in the judge's process, even on a GPU
    assert gpu, good["tests"]
    assert all(t["outcome"] == "skipped" and "isolated judge" in t["message"] for t in gpu), gpu


@pytest.mark.timeout(600)
def test_isolated_grading_runs_multi_rank_exercises_in_the_cage(tmp_path):
    modules = ("collectives", "zero", "tensor_parallel")  # tensor_parallel: its traffic (ops) crosses the cage
    ids = [f"part02_parallelism.{m}" for m in modules]
    files = {f"part02_parallelism/{m}.py": source("solutions", f"part02_parallelism/{m}.py") for m in modules}
    solved = grade(tmp_path, "solved", files, ids)
    stubs = grade(tmp_path, "stubs", {k: source("exercises", k) for k in files}, ids)
    for ex in ids:
        assert solved[ex]["failed"] == 0 and solved[ex]["points"] == solved[ex]["max_points"]
        assert stubs[ex]["passed"] == 0 and stubs[ex]["status"] == "not implemented"
    kinds = {f["kind"] for f in solved["flags"]}
    assert "harness-import" not in kinds, solved["flags"]  # the executor's own imports are no flag
    assert "backend" not in kinds, solved["flags"]  # how it ran is no flag on every student: a note
    assert any("simulated group" in n for n in solved["notes"]), solved["notes"]
