"""A real nbgrader round trip on the exported course, and the exported notebooks run in a kernel.

export -> ``nbgrader generate_assignment`` -> student notebooks (reference answer, untouched,
a known mistake) -> ``nbgrader autograde`` -> gradebook -> ``nbgrader generate_feedback``; then
the same submissions through the secure path (``infralab nbgrader grade``). Kept to
part01_transformer.rmsnorm so that ``make test`` stays quick.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbgrader")
pytest.importorskip("nbclient")

from infralab.course import load_course  # noqa: E402
from infralab.nbgrader.export import export_course  # noqa: E402
from infralab.nbgrader.extract import fill_answer, reference_answer  # noqa: E402
from infralab.nbgrader.testsource import read_test_file  # noqa: E402
from infralab.nbgrader.tool import run_nbgrader  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
COURSE = load_course(ROOT)
PART, NAME = "part01_transformer", "rmsnorm"
MUTANT = ROOT / "fixtures" / "mutants" / PART / NAME / "eps_outside_sqrt.py"
BIN = Path(sys.executable).parent
# Kernels and the judge on a shared 2-core machine: more room than the suite's 300 s per test.
pytestmark = pytest.mark.timeout(900)


def _nbgrader(course_dir: Path, *args: str) -> subprocess.CompletedProcess:
    proc = run_nbgrader(course_dir, *args, capture=True)
    assert proc.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{proc.stdout[-3000:]}"
    return proc


def standalone_mutant(reference_code: str, mutant_file: Path) -> str:
    """A mutant as a student would hand it in: the reference, then the mutant's wrong definitions
    (the mutant's own imports from ``solutions`` dropped: the judge cannot see solutions/)."""
    text = mutant_file.read_text(encoding="utf-8")
    keep = [n for n in ast.parse(text).body
            if not (isinstance(n, ast.ImportFrom) and (n.module or "").startswith("solutions"))]
    lines = text.splitlines()
    return reference_code + "\n\n" + "\n\n".join(
        "\n".join(lines[min([n.lineno] + [d.lineno for d in getattr(n, "decorator_list", [])]) - 1:n.end_lineno])
        for n in keep) + "\n"


def _scores(course_dir: Path) -> dict[str, float]:
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        return {s: gb.find_submission(PART, s).score for s in ("reference", "untouched", "mistake")}


def _graded_outputs(nb_path: Path) -> list:
    nb = nbformat.read(nb_path, as_version=4)
    return [o for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") for o in c.get("outputs", [])]


@pytest.fixture(scope="module")
def course_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("nbgrader-course")
    export_course(COURSE, out, exercises=[NAME])
    _nbgrader(out, "generate_assignment", PART, "--force")
    release = nbformat.read(out / "release" / PART / f"{NAME}.ipynb", as_version=4)
    source = nbformat.read(out / "source" / PART / f"{NAME}.ipynb", as_version=4)
    reference = reference_answer(source)
    for student, nb in (("reference", fill_answer(release, reference)), ("untouched", release),
                        ("mistake", fill_answer(release, standalone_mutant(reference, MUTANT)))):
        folder = out / "submitted" / student / PART
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{NAME}.ipynb")
        (folder / "timestamp.txt").write_text("2026-12-01 10:00:00.000000 UTC\n")
    return out


def test_student_notebook_has_no_solution_and_no_hidden_test(course_dir):
    text = (course_dir / "release" / PART / f"{NAME}.ipynb").read_text(encoding="utf-8")
    solution = (ROOT / "solutions" / PART / f"{NAME}.py").read_text(encoding="utf-8")
    body_lines = {line.strip() for line in solution.splitlines()
                  if line.startswith("    ") and not line.strip().startswith(('"""', "#")) and len(line.strip()) > 12}
    body_lines -= {line.strip() for line in (ROOT / "exercises" / PART / f"{NAME}.py").read_text().splitlines()}
    assert body_lines, "the solution should have body lines to look for"
    nb = nbformat.reads(text, as_version=4)
    code = "\n".join(c.source for c in nb.cells)
    assert not [line for line in body_lines if line in code], "solution code leaked into the student notebook"
    assert "BEGIN SOLUTION" not in code and "BEGIN HIDDEN TESTS" not in code
    for test in read_test_file(ROOT / "graders" / PART / f"test_{NAME}.py").tests:
        assert f"def {test.name}(" not in code, f"hidden test {test.name} leaked"
    assert "def reference_rms_norm" not in code
    for test in read_test_file(ROOT / "exercises" / PART / "tests" / f"test_{NAME}.py").tests:
        assert f"def {test.name}(" in code, f"visible test {test.name} is missing"


def test_autograde_gives_full_zero_and_partial_credit_and_feedback_runs(course_dir):
    _nbgrader(course_dir, "autograde", PART, "--force")
    scores = _scores(course_dir)
    assert scores["reference"] == pytest.approx(5.0, abs=1e-6)
    assert scores["untouched"] == 0
    assert 0 < scores["mistake"] < 5.0
    outputs = _graded_outputs(course_dir / "autograded" / "reference" / PART / f"{NAME}.ipynb")
    assert outputs and not [o for o in outputs if o.output_type == "error" or o.get("name") == "stderr"]
    _nbgrader(course_dir, "generate_feedback", PART, "--force")
    page = (course_dir / "feedback" / "mistake" / PART / f"{NAME}.html").read_text(encoding="utf-8")
    assert "This looks like: eps added outside the square root" in page
    assert "def reference_rms_norm" not in page and "def test_rms_norm_eps_is_inside_the_square_root" not in page


def test_secure_path_writes_the_same_verdicts_into_the_gradebook(course_dir, capsys, monkeypatch):
    from infralab.cli import main
    monkeypatch.chdir(ROOT)
    assert main(["grade", "--notebooks", str(course_dir / "submitted"), "--jobs", "3"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.strip()}
    assert "not implemented" in rows["untouched"] and "passed" in rows["reference"]
    scores = _scores(course_dir)
    assert scores["reference"] == pytest.approx(5.0, abs=1e-6)
    assert scores["untouched"] == 0
    assert 0 < scores["mistake"] < 5.0
    _nbgrader(course_dir, "generate_feedback", PART, "--force")
    page = (course_dir / "feedback" / "mistake" / PART / f"{NAME}.html").read_text(encoding="utf-8")
    assert "eps added outside the square root" in page and "def reference_rms_norm" not in page


@pytest.mark.parametrize("ex", COURSE.select([PART]), ids=lambda ex: ex.name)
def test_part01_notebooks_run_top_to_bottom_with_the_solutions(ex, tmp_path):
    from nbclient import NotebookClient
    export_course(COURSE, tmp_path, exercises=[ex.id])
    path = tmp_path / "source" / ex.part / f"{ex.name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb = fill_answer(nb, reference_answer(nb))
    for cell in nb.cells:  # the instructor's view: hidden tests in, markers out
        cell.source = "\n".join(l for l in cell.source.splitlines() if "HIDDEN TESTS" not in l)
    # the kernel starts in the notebook's folder, as JupyterLab and nbgrader start it (golden/ is there)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    bad = [(c.metadata["nbgrader"]["grade_id"], o) for c in graded for o in c.outputs
           if o.output_type == "error" or o.get("name") == "stderr"]
    assert not bad, f"cells failed or wrote to stderr: {bad[:2]}"
    printed = "".join(o.get("text", "") for c in graded for o in c.outputs)
    assert printed.count("PASSED") + printed.count("SKIPPED") >= len(graded)


def test_warnings_and_fd2_writes_in_a_test_cell_do_not_reach_stderr():
    """nbgrader zeroes a graded cell with stderr output; the runner must keep torch's warnings off it."""
    from nbclient import NotebookClient
    from nbformat.v4 import new_code_cell, new_notebook
    noisy = ("def test_noisy(impl, gen):\n"
             "    import os, torch, warnings\n"
             "    torch.tensor(torch.ones(2))  # torch's UserWarning about copy-constructing a tensor\n"
             "    warnings.warn('a triton-like warning', RuntimeWarning)\n"
             "    os.write(2, b'written to fd 2 by C code\\n')\n"
             "    assert impl('part01_transformer.rmsnorm').rms_norm(torch.ones(2), torch.ones(2)).shape == (2,)\n")
    nb = new_notebook(cells=[
        new_code_cell("from infralab.nbgrader.notebook import setup\nsetup('part01_transformer.rmsnorm')"),
        new_code_cell("def rms_norm(x, weight, eps=1e-6):\n    return x * weight"),
        new_code_cell("import torch\ntorch.tensor(torch.ones(2))"),  # the premise: a bare warning is stderr
        new_code_cell(f"%%infralab_test visible\n{noisy}"),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    assert any(o.get("name") == "stderr" for o in nb.cells[2].outputs), "a warning outside the runner is stderr"
    outputs = nb.cells[3].outputs
    assert not [o for o in outputs if o.output_type == "error" or o.get("name") == "stderr"], outputs
    text = "".join(o.get("text", "") for o in outputs)
    assert "PASSED test_noisy" in text and "UserWarning" in text and "RuntimeWarning" in text
