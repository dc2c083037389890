"""A capstone built on other exercises (course.yml ``uses:``): its two runs, in-process and in the cage,
their score lines and the record of whose parts each ran on; the errors of a broken ``uses:``."""
from __future__ import annotations

import csv
import html
import json
import textwrap
from pathlib import Path

import pytest

from tests.conftest import write_mini_course
from infralab.course import load_course
from infralab.errors import CourseError
from infralab.i18n import tr
from infralab.runner import TestRun, run_tests
from infralab.uses import line_text

CAPSTONE_YML = """
  - id: part02_cap
    title: {en: Capstone, zh: 综合}
    exercises:
      - id: combo
        title: {en: combo, zh: 综合练习}
        public: [combo]
        points: 10
        textbook: "P1"
        uses: [part01_demo.double, part01_demo.negate]
        reference_parts_points: 4
"""

# the convention of a capstone: the parts it uses, imported relatively inside the course package
STUB = '''"""combo: x -> negate(double(x)). 中文：组合。"""
from ..part01_demo import double, negate


def combo(x):
    """Return negate(double(x)). 中文：返回 negate(double(x))。"""
    raise NotImplementedError("combo")
'''
SOLUTION = '''"""combo: x -> negate(double(x))."""
from ..part01_demo import double, negate


def combo(x):
    return negate.negate(double.double(x))
'''
HIDDEN = '''
import torch
from infralab.testing import assert_close


def test_combo_of_random(impl, gen):
    x = torch.randn(5, generator=gen)
    assert_close(impl("part02_cap.combo").combo(x), -2 * x)


def test_combo_of_ones(impl):
    assert_close(impl("part02_cap.combo").combo(torch.ones(3)), -2 * torch.ones(3))
'''
VISIBLE = '''
import torch
from infralab.testing import assert_close


def test_combo_of_twos(impl):
    assert_close(impl("part02_cap.combo").combo(2 * torch.ones(3)), -4 * torch.ones(3))
'''
MUTANT = '''"""Mistake: forgets to negate."""
from ..part01_demo import double


def combo(x):
    return double.double(x)
'''


def write_capstone_course(root: Path) -> Path:
    """The mini course (double, negate) and a capstone ``part02_cap.combo`` that uses both."""
    write_mini_course(root)
    (root / "course.yml").write_text((root / "course.yml").read_text(encoding="utf-8") + CAPSTONE_YML,
                                     encoding="utf-8")
    files = {"exercises/part02_cap/combo.py": STUB, "solutions/part02_cap/combo.py": SOLUTION,
             "graders/part02_cap/test_combo.py": HIDDEN, "exercises/part02_cap/tests/test_combo.py": VISIBLE,
             "fixtures/mutants/part02_cap/combo/no_negate.py": MUTANT}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def write_student(folder: Path, course: Path, broken_double: bool) -> Path:
    """A submission: the capstone right, the parts right or ``double`` wrong (returns x + 1)."""
    for module in ("part01_demo/double.py", "part01_demo/negate.py", "part02_cap/combo.py"):
        (folder / module).parent.mkdir(parents=True, exist_ok=True)
        mine = "# the student's own\n" + (course / "solutions" / module).read_text(encoding="utf-8")
        (folder / module).write_text(mine, encoding="utf-8")
    if broken_double:
        (folder / "part01_demo/double.py").write_text("def double(x):\n    return 3 * x\n", encoding="utf-8")
    return folder


@pytest.fixture
def capstone(tmp_path: Path) -> Path:
    return write_capstone_course(tmp_path / "course")


def _capstone_tests(record: dict) -> list[dict]:
    return next(ex for ex in record["exercises"] if ex["id"] == "part02_cap.combo")


# -- course.yml ----------------------------------------------------------------------------------
def test_uses_is_on_the_exercise_model_with_its_points_split(capstone):
    ex = load_course(capstone).exercise("part02_cap.combo")
    assert ex.uses == ("part01_demo.double", "part01_demo.negate")
    assert (ex.reference_parts_points, ex.own_parts_points) == (4.0, 6.0)
    assert load_course(capstone).exercise("part01_demo.double").uses == ()


def _edit(root: Path, old: str, new: str) -> None:
    text = (root / "course.yml").read_text(encoding="utf-8")
    assert old in text
    (root / "course.yml").write_text(text.replace(old, new), encoding="utf-8")


@pytest.mark.parametrize("old, new, key, expected", [
    ("part01_demo.negate]", "part01_demo.negat]", "uses[1]", tr("uses.expected_exercise_id",
                                                                    hint=tr("uses.did_you_mean", name="part01_demo.negate"))),
    ("part01_demo.negate]", "part02_cap.combo]", "uses[1]", tr("uses.expected_not_itself", exercise="part02_cap.combo")),
    ("part01_demo.negate]", "part01_demo.double]", "uses[1]", tr("uses.expected_once")),
    ("uses: [part01_demo.double, part01_demo.negate]", "uses: []", "uses", tr("uses.expected_list")),
    ("uses: [part01_demo.double, part01_demo.negate]", "uses: part01_demo.double", "uses", "a list"),
    ("reference_parts_points: 4", "reference_parts_points: 11", "reference_parts_points",
     tr("uses.expected_share", points="10")),
    ("reference_parts_points: 4", "reference_parts_points: -1", "reference_parts_points", "a number >= 0"),
])
def test_a_broken_uses_value_names_course_yml_the_key_and_what_was_expected(capstone, old, new, key, expected):
    _edit(capstone, old, new)
    with pytest.raises(CourseError) as err:
        load_course(capstone)
    assert err.value.file == str(capstone / "course.yml")
    assert err.value.key == f"parts[1].exercises[0].{key}"
    assert expected in str(err.value)


def test_a_cycle_of_uses_is_an_error_naming_the_cycle(capstone):
    _edit(capstone, "        points: 4\n        textbook: \"00\"\n", "        points: 4\n        textbook: \"00\"\n"
          "        uses: [part02_cap.combo]\n")  # double uses combo, which uses double
    with pytest.raises(CourseError) as err:
        load_course(capstone)
    assert "part01_demo.double -> part02_cap.combo -> part01_demo.double" in str(err.value)
    assert err.value.key.endswith(".uses")


def test_reference_parts_off_for_the_course_moves_every_point_to_the_own_parts_run(capstone):
    _edit(capstone, "        reference_parts_points: 4\n", "")
    assert load_course(capstone).exercise("part02_cap.combo").reference_parts_points == 5.0  # default: half
    _edit(capstone, "course:\n", "reference_parts: false\ncourse:\n")
    ex = load_course(capstone).exercise("part02_cap.combo")
    assert (ex.reference_parts_points, ex.own_parts_points) == (0.0, 10.0)
    _edit(capstone, "        uses: [part01_demo.double, part01_demo.negate]\n",
          "        uses: [part01_demo.double, part01_demo.negate]\n        reference_parts_points: 2\n")
    with pytest.raises(CourseError) as err:
        load_course(capstone)
    assert tr("uses.expected_no_share") in str(err.value)


def test_a_module_the_capstone_imports_but_uses_does_not_list_is_an_error(capstone):
    _edit(capstone, "uses: [part01_demo.double, part01_demo.negate]", "uses: [part01_demo.double]")
    with pytest.raises(CourseError) as err:
        load_course(capstone)
    assert "solutions/part02_cap/combo.py" in str(err.value) and "part01_demo.negate" in str(err.value)


# -- in-process: a student checks the capstone on their own parts and on ours ------------------
def test_in_process_parts_reference_runs_the_capstone_on_the_reference_parts(capstone, tmp_path):
    from infralab.uses import merge_runs

    course = load_course(capstone)
    student = write_student(tmp_path / "correct", capstone, broken_double=False)
    (student / "part01_demo/negate.py").unlink()  # not handed in: the stub
    runs = {}
    for parts in ("own", "reference"):
        run = TestRun(target=str(student), exercises=(course.exercise("part02_cap.combo"),), visible=False,
                      hidden=True, seed=3, extra_args=["--parts", parts])
        runs[parts] = run_tests(course, run)
    own, reference = _capstone_tests(runs["own"]), _capstone_tests(runs["reference"])
    assert own["passed"] == 0 and "NotImplementedError" in own["first_failure"]  # the stub negate
    assert reference["passed"] == 2 and reference["points"] == 10.0  # one run alone: all its points
    assert {t["parts"] for t in reference["tests"]} == {"reference"}
    assert own["lines"][0]["whose"] == {"part01_demo.double": "student", "part01_demo.negate": "stub"}
    assert reference["lines"][0]["whose"] == {"part01_demo.double": "reference", "part01_demo.negate": "reference"}
    merged = _capstone_tests(merge_runs(course, runs["own"], runs["reference"], ["part02_cap.combo"]))
    assert [(line["parts"], line["points"], line["max_points"]) for line in merged["lines"]] == [
        ("own", 0.0, 6.0), ("reference", 4.0, 4.0)]


# -- infralab grade: the isolated judge grades a capstone twice --------------------------------
def test_grade_credits_the_own_parts_and_the_reference_parts_runs_separately(capstone, tmp_path):
    from infralab.grade import GradeOptions, grade
    from infralab.judge.intake import discover

    klass = tmp_path / "klass"
    write_student(klass / "broken", capstone, broken_double=True)
    course, out = load_course(capstone), tmp_path / "out"
    options = GradeOptions(exercises=("part02_cap.combo",), seed=5, call_timeout_s=10.0, budget_s=60.0,
                           memory_bytes=2 << 30)
    records = {r["student"]: r for r in grade(course, discover([klass]), out, options)}
    lines = {name: {line["parts"]: line for line in _capstone_tests(r)["lines"]} for name, r in records.items()}
    assert [(lines["broken"][p]["points"], lines["broken"][p]["max_points"]) for p in ("own", "reference")] == \
        [(0.0, 6.0), (4.0, 4.0)], records["broken"]["flags"]  # a bug upstream costs the own-parts line only
    assert records["broken"]["points"] == 4.0
    assert lines["broken"]["own"]["whose"] == {"part01_demo.double": "student", "part01_demo.negate": "student"}
    assert lines["broken"]["reference"]["whose"] == {"part01_demo.double": "reference",
                                                     "part01_demo.negate": "reference"}
    assert any("part01_demo.double, part01_demo.negate" in n for n in records["broken"]["notes"])
    rows = list(csv.reader((out / "gradebook.csv").open(encoding="utf-8")))
    assert rows[0][1:4] == ["part02_cap.combo:own_parts (6)", "part02_cap.combo:reference_parts (4)", "total (10)"]
    assert rows[1][:4] == ["broken", "0", "4", "4"]
    results = json.loads((out / "broken/results.json").read_text(encoding="utf-8"))
    by_name = {t["name"]: t for t in results["tests"]}
    reference_name = f"part02_cap.combo: [{tr('uses.parts_reference')}] test_combo_of_ones"
    assert by_name[reference_name]["score"] == by_name[reference_name]["max_score"] == 2.0
    assert sum(t["max_score"] for t in results["tests"]) == 10.0 and results["score"] == 4.0
    page = (out / "broken/feedback.html").read_text(encoding="utf-8")
    assert html.escape(line_text("part02_cap.combo", lines["broken"]["reference"])) in page


def test_in_the_cage_the_reference_parts_tree_holds_the_used_modules_and_nothing_else_of_solutions(capstone, tmp_path):
    from infralab.judge.config import JudgeConfig
    from infralab.judge.isolated import IsolatedTarget
    from infralab.targets import submission_target
    from infralab.uses import reference_parts_spec

    course = load_course(capstone)
    student = write_student(tmp_path / "student", capstone, broken_double=False)
    solutions = {f.read_bytes(): f.relative_to(capstone / "solutions").as_posix()
                 for f in (capstone / "solutions").rglob("*.py")}
    own = submission_target(student, capstone)
    trees = {}
    for name, spec in (("own", own), ("reference", reference_parts_spec(own, course.exercise("part02_cap.combo").uses,
                                                                         capstone))):
        target = IsolatedTarget(spec, JudgeConfig.from_course(course))
        try:
            code = target.cage.lib / "code"
            files = {f.relative_to(code).as_posix(): f.read_bytes() for f in code.rglob("*.py") if f.stat().st_size}
        finally:
            target.close()
        trees[name] = {rel: solutions.get(data) for rel, data in files.items()}
    assert {rel for rel, ref in trees["own"].items() if ref} == set()
    assert {rel: ref for rel, ref in trees["reference"].items() if ref} == {
        "exercises/part01_demo/double.py": "part01_demo/double.py",
        "exercises/part01_demo/negate.py": "part01_demo/negate.py"}
    assert trees["reference"]["exercises/part02_cap/combo.py"] is None  # the student's capstone


# -- infralab validate: a capstone's stub and mutants run on the reference parts ---------------
def test_validate_runs_the_capstone_stub_on_the_reference_parts_and_only_its_own_mutants(capstone):
    from infralab.soundness import check_soundness

    hidden = capstone / "graders/part02_cap/test_combo.py"  # a test that never reaches the capstone
    hidden.write_text(hidden.read_text(encoding="utf-8") + textwrap.dedent('''

        def test_only_a_part(impl):
            assert_close(impl("part01_demo.double").double(torch.ones(2)), 2 * torch.ones(2))
        '''), encoding="utf-8")
    course = load_course(capstone)
    [result], record = check_soundness(course, (course.exercise("part02_cap.combo"),), seed=2)
    targets = {t["target"] for ex in record["exercises"] for t in ex["tests"]}
    assert targets == {"solutions", "stub:part02_cap.combo", "mutant:part02_cap.combo:no_negate"}
    assert result.stub_total == 4 and result.stub_failed == 3  # on the reference parts only that test passes
    assert [h for h in result.holes if "test_only_a_part" in h] == [
        tr("seeds.stub_passes", visibility=tr("seeds.kind_hidden"), test="test_only_a_part[stub:part02_cap.combo]")]
    assert result.mutants == {"no_negate": 2}  # the parts' mutants (double's, negate's) are theirs, not its


# -- nbgrader (infralab grade --notebooks): the parts come from the student's other notebooks -------
def test_notebook_grading_takes_the_parts_from_the_other_assignments_and_runs_both(capstone, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    from infralab.nbgrader import grade as notebook_grade
    from infralab.nbgrader.export import exercise_notebook
    from infralab.nbgrader.extract import fill_answer

    course = load_course(capstone)
    answers = write_student(tmp_path / "answers", capstone, broken_double=True)
    notebooks = {}
    for ex in (course.exercise(e) for e in ("part01_demo.double", "part02_cap.combo")):
        nb, _, _ = exercise_notebook(course, ex)
        path = tmp_path / "submitted/alice" / ex.part / f"{ex.name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(fill_answer(nb, (answers / ex.module_path).read_text(encoding="utf-8")), path)
        notebooks[ex.id] = (path, ex)
    runs = []

    def judged(course, run):  # what each run would grade: its options and the extracted tree
        tree = Path(run.target)
        runs.append((run.extra_args, [ex.id for ex in run.exercises],
                     sorted(f.relative_to(tree).as_posix() for f in tree.rglob("*.py")),
                     (tree / "part01_demo/double.py").read_text(encoding="utf-8")))
        return {"target": run.target, "mode": "grade", "started": "", "exercises": [], "flags": [], "perf": []}

    monkeypatch.setattr(notebook_grade, "run_tests", judged)
    record = notebook_grade._judge(course, dict([notebooks["part02_cap.combo"]]), isolated=False)
    assert [r[:3] for r in runs] == [([], ["part02_cap.combo"], ["part01_demo/double.py", "part02_cap/combo.py"]),
                                     (["--parts", "reference"], ["part02_cap.combo"],
                                      ["part01_demo/double.py", "part02_cap/combo.py"])]
    assert "3 * x" in runs[0][3]  # the student's double, from their part01_demo assignment
    assert [line["parts"] for line in _capstone_tests(record)["lines"]] == ["own", "reference"]


def test_a_gradescope_bundle_of_a_capstone_ships_the_used_reference_modules_and_no_other_solution(capstone, tmp_path):
    import zipfile

    from infralab.gradescope import build_bundle

    names = build_bundle(load_course(capstone), tmp_path / "autograder.zip", ["part02_cap.combo"])
    assert sorted(n for n in names if n.startswith("solutions/")) == [
        "solutions/part01_demo/double.py", "solutions/part01_demo/negate.py"]
    with zipfile.ZipFile(tmp_path / "autograder.zip") as zf:
        zf.extractall(tmp_path / "source")
    bundled = load_course(tmp_path / "source")  # the parts are not graded there, the capstone still uses them
    assert [ex.id for ex in bundled.exercises] == ["part02_cap.combo"]
    assert bundled.exercise("part02_cap.combo").uses == ("part01_demo.double", "part01_demo.negate")
