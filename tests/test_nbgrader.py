"""infralab.nbgrader without a kernel: answer cells, test splitting, points, the cell runner."""
from __future__ import annotations

import ast
import sys
import warnings
from decimal import Decimal
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbgrader")

from infralab.course import load_course  # noqa: E402
from infralab.nbgrader import notebook  # noqa: E402
from infralab.nbgrader.export import exercise_notebook, export_course  # noqa: E402
from infralab.nbgrader.extract import answer_source, fill_answer, is_answer_cell  # noqa: E402
from infralab.nbgrader.gradebook import cell_verdicts, grade_id  # noqa: E402
from infralab.nbgrader.source import BEGIN, END, answer_cell, strip_solution_markers  # noqa: E402
from infralab.nbgrader.testsource import read_test_file  # noqa: E402
from infralab.testing import assert_close  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
COURSE = load_course(ROOT)
EXERCISES = [ex for ex in COURSE.exercises]


def _student_version(source: str) -> str:
    """What nbgrader's ClearSolutions leaves of an answer cell."""
    from nbformat.v4 import new_code_cell
    from nbgrader.preprocessors import ClearSolutions
    cell = new_code_cell(source, metadata={"nbgrader": {"solution": True, "grade": False, "grade_id": "a",
                                                        "locked": False, "schema_version": 3, "task": False}})
    cell, _ = ClearSolutions().preprocess_cell(cell, {"language": "python"}, 0)
    return cell.source


def _module_from(code: str, package: str | None = None) -> dict:
    """Run an answer cell as a module; a capstone's cell (relative imports of the parts it uses) runs as a
    module of ``package``, a part of the reference solutions loaded as a target."""
    import types
    name = "answer_under_test" if package is None else f"{package}.answer_under_test"
    module = types.ModuleType(name)
    module.__package__ = package
    sys.modules[name] = module  # dataclasses look their module up while the cell runs
    try:
        exec(compile(code, "<answer>", "exec"), module.__dict__)  # noqa: S102 - the course's own code
    finally:
        del sys.modules[name]
    return module.__dict__


@pytest.mark.parametrize("ex", EXERCISES, ids=[ex.id for ex in EXERCISES])
def test_answer_cell_keeps_the_stub_and_hides_the_solution(ex):
    stub = (ROOT / "exercises" / ex.module_path).read_text(encoding="utf-8")
    solution = (ROOT / "solutions" / ex.module_path).read_text(encoding="utf-8")
    cell = answer_cell(stub, solution)
    assert cell.count(BEGIN) == cell.count(END) > 0
    for node in ast.walk(ast.parse(stub)):  # every docstring of the stub is in the cell, word for word
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node, clean=False):
            assert ast.get_docstring(node, clean=False) in cell, f"{node.name}'s docstring is missing"
    package = None
    if ex.uses:  # its relative imports resolve in a part of the reference solutions
        from infralab.targets import InProcessTarget, parse_target
        package = f"{InProcessTarget(parse_target('solutions', ROOT)).package}.{ex.part}"
    filled = _module_from(strip_solution_markers(cell), package)
    student = _module_from(_student_version(cell), package)  # defines everything, raises nothing at import
    for name in ex.public:
        assert name in filled and name in student, f"{name} missing from the answer cell"


def test_filled_answer_matches_the_solution_and_student_version_raises():
    ex = COURSE.exercise("part01_transformer.rmsnorm")
    stub = (ROOT / "exercises" / ex.module_path).read_text(encoding="utf-8")
    solution = (ROOT / "solutions" / ex.module_path).read_text(encoding="utf-8")
    cell = answer_cell(stub, solution)
    import torch
    x, w = torch.randn(3, 16), torch.randn(16)
    filled = _module_from(strip_solution_markers(cell))
    assert_close(filled["rms_norm"](x, w), _module_from(solution)["rms_norm"](x, w))
    with pytest.raises(NotImplementedError):
        _module_from(_student_version(cell))["rms_norm"](x, w)
    body_line = "h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)"
    assert body_line in cell and body_line not in _student_version(cell)


def test_helpers_the_stub_lacks_go_in_a_region_that_fails_softly():
    stub = 'import torch\n\n\ndef f(x):\n    """Doc."""\n    raise NotImplementedError("f")\n'
    solution = ('import math\nimport torch\n\nSCALE = 2.0\n\n\ndef _double(x):\n    return x * SCALE\n\n\n'
                'def f(x):\n    """Doc."""\n    return _double(x) + math.pi\n')
    cell = answer_cell(stub, solution)
    assert "import math" in cell.split(BEGIN)[0]  # imports stay visible
    assert _module_from(strip_solution_markers(cell))["f"](1.0) == pytest.approx(2.0 + 3.141592653589793)
    student = _module_from(_student_version(cell))
    assert "_double" not in student and "SCALE" not in student
    with pytest.raises(NotImplementedError):
        student["f"](1.0)


def test_test_files_split_into_preamble_and_weighted_tests():
    ex = COURSE.exercise("part01_transformer.rmsnorm")
    hidden = read_test_file(ROOT / ex.hidden_tests)
    names = [t.name for t in hidden.tests]
    assert "test_rms_norm_eps_is_inside_the_square_root" in names
    assert all(t.source.lstrip().startswith(("def ", "@")) for t in hidden.tests)
    assert "reference_rms_norm" in hidden.preamble and "def test_" not in hidden.preamble  # its imports and helpers
    weights = {t.name: t.weight for t in hidden.tests}
    assert weights["test_rms_norm_eps_is_inside_the_square_root"] == 2
    assert weights["test_rms_norm_reduces_over_the_last_dimension_only"] == 1


def test_notebook_points_add_up_to_course_yml_and_hidden_tests_are_marked():
    ex = COURSE.exercise("part01_transformer.rmsnorm")
    nb, points, n_tests = exercise_notebook(COURSE, ex)
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    hidden_tests = read_test_file(ROOT / ex.hidden_tests).tests
    assert n_tests == len(read_test_file(ROOT / ex.visible_tests).tests) + len(hidden_tests)
    assert len(graded) == len(hidden_tests)  # visible tests carry no points
    assert sum(Decimal(str(c.metadata["nbgrader"]["points"])) for c in graded) == Decimal(str(ex.points))
    assert all("_h_" in c.metadata["nbgrader"]["grade_id"] and "### BEGIN HIDDEN TESTS" in c.source
               and "### END HIDDEN TESTS" in c.source for c in graded)
    for c in graded:  # the magic line carries the cell's points (nbgrader partial credit)
        assert c.source.splitlines()[0] == f"%%infralab_test hidden {c.metadata['nbgrader']['points']:g}"
    ids = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if "nbgrader" in c.metadata]
    assert len(ids) == len(set(ids))


def test_student_export_has_the_stub_and_only_visible_tests(tmp_path):
    written = export_course(COURSE, tmp_path, exercises=["rmsnorm"], student=True)
    nb = nbformat.read(written[0].notebook, as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    assert "BEGIN" not in text and "%%infralab_test hidden" not in text
    assert 'raise NotImplementedError("rms_norm")' in answer_source(nb)
    (nb.cells[0]).source = "my notes"
    nbformat.write(nb, written[0].notebook)
    assert export_course(COURSE, tmp_path, exercises=["rmsnorm"], student=True) == []  # work is kept
    assert nbformat.read(written[0].notebook, as_version=4).cells[0].source == "my notes"


@pytest.mark.parametrize("student", [True, False])
def test_exported_notebooks_carry_their_headings_and_instructions_in_chinese_and_english(tmp_path, monkeypatch,
                                                                                           student):
    from infralab.i18n import tr
    monkeypatch.setenv("INFRALAB_LANG", "en")  # the export's language does not choose the notebook's
    written = export_course(COURSE, tmp_path, exercises=["rmsnorm"], parts=["part01_transformer"], student=student)
    nb = nbformat.read(written[0].notebook, as_version=4)
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    headings = [line for text in markdown for line in text.splitlines() if line.startswith("## ")]
    expected = ["answer", "visible"] + ([] if student else ["hidden"])
    assert headings == [f"## {tr(f'notebook.{k}_heading', 'en')} · {tr(f'notebook.{k}_heading', 'zh')}"
                        for k in expected]
    assert "## Your answer · 你的实现" in headings and "## Tests you can run · 可见测试" in headings
    text = "\n".join(markdown)
    for key in [f"notebook.{k}_intro" for k in expected]:
        assert tr(key, "en") in text and tr(key, "zh") in text, key
    assert "10 points · textbook:" not in text and "5 points · textbook:" in text and "5 分 · 教材：" in text
    setup = next(c.source for c in nb.cells if "setup(" in c.source)
    assert "# 准备单元（只读）" in setup and "# Setup (read-only)" in setup


def test_runner_messages_follow_the_language_in_the_kernel(session, monkeypatch, capsys):
    monkeypatch.setenv("INFRALAB_LANG", "zh")

    def test_stub():
        raise NotImplementedError("rms_norm")
    with pytest.raises(notebook.TestFailed, match="rms_norm 尚未实现（你的 notebook 的答案单元）"):
        notebook.run_test(test_stub, session)
    notebook.infralab_test("hidden", "")
    assert "隐藏测试" in capsys.readouterr().out

def test_answer_extraction_comments_out_ipython_lines_and_fill_replaces_the_answer():
    ex = COURSE.exercise("part01_transformer.rmsnorm")
    nb, _, _ = exercise_notebook(COURSE, ex)
    nb = fill_answer(nb, "%timeit 1\n!ls\ndef rms_norm(x, weight, eps=1e-6):\n    return x\n")
    code = answer_source(nb)
    ast.parse(code)
    assert "# (IPython line left out) %timeit 1" in code
    assert sum(is_answer_cell(c) for c in nb.cells) == 1


def test_cell_verdicts_are_the_records_points_and_fail_closed():
    record = {"max_points": 3.0, "tests": [
        {"name": "test_a", "visibility": "hidden", "outcome": "passed", "weight": 1.0, "message": ""},
        {"name": "test_b[1]", "visibility": "hidden", "outcome": "passed", "weight": 1.0, "message": ""},
        {"name": "test_b[2]", "visibility": "hidden", "outcome": "failed", "weight": 1.0, "message": "wrong"},
        {"name": "test_gpu", "visibility": "visible", "outcome": "skipped", "weight": 1.0, "message": "no GPU"},
    ]}
    cells = {grade_id("ex", "hidden", "test_a"): 1.5, grade_id("ex", "hidden", "test_b"): 1.5,
             grade_id("ex", "hidden", "test_missing"): 1.0}
    v = cell_verdicts(record, "ex", cells)
    assert v["ex_h_test_a"].score == 1.5 and v["ex_h_test_a"].passed
    assert v["ex_h_test_b"].score == 0.75 and not v["ex_h_test_b"].passed and "wrong" in v["ex_h_test_b"].message
    assert v["ex_h_test_missing"].score == 0.0 and not v["ex_h_test_missing"].passed


# --- the kernel-side runner, called directly -------------------------------------------------

@pytest.fixture
def session():
    return notebook._Session("part01_transformer.rmsnorm", ())


def test_runner_keeps_warnings_and_stderr_off_stderr(session, capfd):
    def test_noisy(seed):
        warnings.warn("torch says something", UserWarning)
        print("to python stderr", file=sys.stderr)
        import os
        os.write(2, b"to fd 2\n")
    line = notebook.run_test(test_noisy, session).summary
    out, err = capfd.readouterr()
    assert err == ""
    assert "to fd 2" in out and "to python stderr" in out
    assert line.startswith("PASSED test_noisy") and "UserWarning: torch says something" in line


def test_runner_reports_failures_with_the_message(session):
    def test_wrong():
        import torch
        assert_close(torch.ones(3), torch.zeros(3), mistakes={"ones instead of zeros": torch.ones(3)})
    with pytest.raises(notebook.TestFailed) as info:
        notebook.run_test(test_wrong, session)
    assert "This looks like: ones instead of zeros" in str(info.value)
    assert info.value._render_traceback_()[0].startswith("\x1b[31mFAILED")

    def test_stub():
        raise NotImplementedError("rms_norm")
    with pytest.raises(notebook.TestFailed, match="not implemented yet"):
        notebook.run_test(test_stub, session)


def test_runner_expands_parametrize_and_gives_fresh_generators(session):
    seen = []

    @pytest.mark.parametrize("n", [1, 2, 3])
    def test_cases(n, gen, seed):
        seen.append((n, seed))
        assert gen.initial_seed() == seed

    notebook.run_test(test_cases, session)
    assert [n for n, _ in seen] == [1, 2, 3]

    @pytest.mark.parametrize("n", [1, 2])
    def test_second_fails(n):
        assert n == 1, "n must be 1"
    with pytest.raises(notebook.TestFailed, match=r"test_second_fails\[n=2\]"):
        notebook.run_test(test_second_fails, session)
    # worth points (a graded cell): the passed cases' share, split as the record splits it
    partial = notebook.run_test(test_second_fails, session, points=1.0)
    assert partial.partial == 0.5 and "test_second_fails[n=2]" in partial.summary


def test_runner_rejects_unknown_fixtures(session):
    def test_needs_monkeypatch(monkeypatch):
        pass
    with pytest.raises(notebook.TestFailed, match="monkeypatch"):
        notebook.run_test(test_needs_monkeypatch, session)


def test_the_next_step_export_prints_runs_as_printed_without_the_venv_on_path(tmp_path, capsys, monkeypatch):
    import os
    import subprocess

    from infralab.cli import main
    monkeypatch.chdir(ROOT)
    assert main(["nbgrader", "export", "--out", str(tmp_path / "course"), "--exercise", "rmsnorm"]) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("next: ")]
    assert len(printed) == 1
    venv_bin = str(Path(sys.executable).parent)
    clean_path = os.pathsep.join(p for p in ("/usr/local/bin", "/usr/bin", "/bin") if p != venv_bin)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",)} | {"PATH": clean_path}
    proc = subprocess.run(printed[0][len("next: "):], shell=True, cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert (tmp_path / "course" / "release" / "part01_transformer" / "rmsnorm.ipynb").is_file()


def test_the_whole_course_exports_with_the_visible_goldens_beside_the_notebooks(tmp_path):
    """Every exercise becomes a notebook (hypothesis strategies given by position, the golden fixture);
    the recorded cases of the visible tests travel beside the notebooks that replay them."""
    course = load_course()
    written = export_course(course, tmp_path)
    assert len(written) == len(course.exercises)
    from infralab.golden import golden_files
    for ex in course.exercises:
        for f in golden_files(course.root, ex):
            if f.is_file():
                assert (tmp_path / "source" / ex.part / "golden" / f.name).read_bytes() == f.read_bytes()
