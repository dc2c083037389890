"""``infralab gradescope``: the autograder zip, run as Gradescope runs it, in a temporary /autograder."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import zipfile
from decimal import Decimal
from pathlib import Path

import pytest

from infralab.course import load_course
from infralab.gradescope import build_bundle

ROOT = Path(__file__).resolve().parents[1]
COURSE = load_course(ROOT)
EXERCISE = "part01_transformer.rmsnorm"
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}


def check_results_json(data: dict, points: float) -> None:
    """Gradescope's results.json (its specification's fields and types), and our own promise:
    the tests' max scores sum exactly to the points and the score is the sum of the tests' scores."""
    allowed = {"score", "execution_time", "output", "output_format", "visibility", "stdout_visibility",
               "extra_data", "tests", "leaderboard", "test_output_format", "test_name_format"}
    assert set(data) <= allowed, set(data) - allowed
    assert isinstance(data["score"], (int, float)) and not isinstance(data["score"], bool)
    assert data.get("visibility", "visible") in VISIBILITY and data.get("stdout_visibility", "visible") in VISIBILITY
    assert isinstance(data.get("execution_time", 0), int) and isinstance(data.get("output", ""), str)
    test_keys = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format",
                 "tags", "visibility", "extra_data"}
    for t in data["tests"]:
        assert set(t) <= test_keys, set(t) - test_keys
        assert isinstance(t["name"], str) and isinstance(t.get("output", ""), str)
        assert isinstance(t["max_score"], (int, float)) and 0 <= t["score"] <= t["max_score"]
        assert t.get("status", "passed") in ("passed", "failed") and t.get("visibility", "visible") in VISIBILITY
    for entry in data.get("leaderboard", []):
        assert set(entry) <= {"name", "value", "order"} and entry.get("order", "desc") in ("asc", "desc")
    assert sum(Decimal(str(t["max_score"])) for t in data["tests"]) == Decimal(str(points))
    assert sum(Decimal(str(t["score"])) for t in data["tests"]) == Decimal(str(data["score"]))


def test_bundle_holds_the_scripts_and_hidden_tests_and_never_the_solutions(tmp_path):
    names = build_bundle(COURSE, tmp_path / "autograder.zip", [EXERCISE])
    assert {"setup.sh", "run_autograder", "course.yml", "graders/part01_transformer/test_rmsnorm.py"} <= set(names)
    assert not [n for n in names if n.startswith(("solutions/", "fixtures/", "graders/part02"))]
    with zipfile.ZipFile(tmp_path / "autograder.zip") as zf:
        for script in ("setup.sh", "run_autograder"):
            assert (zf.getinfo(script).external_attr >> 16) & stat.S_IXUSR
        setup = zf.read("setup.sh").decode()
    assert 'TORCH="${TORCH:-torch==2.13.0' in setup and 'pip install -q "$ROOT/source"' in setup
    assert subprocess.run(["bash", "-n", "-c", setup]).returncode == 0


@pytest.mark.parametrize("student,points", [("complete", 5.0), ("stub", 0.0)])
def test_run_autograder_grades_a_submission_in_a_simulated_autograder_folder(tmp_path, student, points):
    autograder = tmp_path / "autograder"
    build_bundle(COURSE, tmp_path / "autograder.zip", [EXERCISE])
    with zipfile.ZipFile(tmp_path / "autograder.zip") as zf:
        zf.extractall(autograder / "source")
    shutil.copyfile(autograder / "source" / "run_autograder", autograder / "run_autograder")
    submission = ROOT / "fixtures" / "submissions" / student
    shutil.copytree(submission if (submission / "exercises").is_dir() else ROOT / "exercises" / "part01_transformer",
                    autograder / "submission" / ("" if (submission / "exercises").is_dir() else "part01_transformer"),
                    ignore=shutil.ignore_patterns("tests", "__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the bundle's own engine, nothing else
    env |= {"INFRALAB_AUTOGRADER_ROOT": str(autograder), "INFRALAB_PYTHON": sys.executable}
    proc = subprocess.run(["bash", str(autograder / "run_autograder")], cwd=autograder, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    import json
    data = json.loads((autograder / "results" / "results.json").read_text(encoding="utf-8"))
    check_results_json(data, 5.0)
    assert data["score"] == points
