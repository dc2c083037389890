"""course.yml -> an nbgrader course directory: one assignment per part, one notebook per exercise.

A notebook holds, in order: the specification (the stub's module docstring and each public
definition's docstring, as markdown), a read-only setup cell, the answer cell (the stub's
signatures and docstrings, the solution's bodies in ``### BEGIN SOLUTION`` regions), then one
autograded cell per test: the visible tests of ``exercises/<part>/tests/`` in plain cells and
the hidden tests of ``graders/`` between ``### BEGIN HIDDEN TESTS`` / ``### END HIDDEN TESTS``.
Only the hidden test cells are graded: the exercise's points (course.yml) are split over them by
weight with :func:`infralab.record.split_points`, the split of the record's one score
(:func:`infralab.record.score_tests`); a cell's magic line carries its points, so a parametrized
test whose cases pass in part gets nbgrader's partial credit. Visible test cells carry no points. The test source is read from the test files at export time.

A student export (``student=True``, or no solutions/graders at hand) writes the stub as the
answer cell and only the visible tests, without nbgrader regions: notebooks to work in.

Headings and instructions are written in English and Chinese together, from the catalogue
(``notebook.*`` keys, :func:`bilingual`): a notebook is a file exported once and read by every
student, whose language the export cannot know (docs/notebooks.md). What the cells print when they
run follows the language in force in the kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from infralab.course import Course, Exercise
from infralab.i18n import tr
from infralab.nbgrader.notebook import MAGIC
from infralab.nbgrader.source import answer_cell, rst_to_markdown, specification
from infralab.nbgrader.testsource import TestFile, read_test_file
from infralab.record import split_points

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
ANSWER_ID = "answer"

NBGRADER_CONFIG = '''\
"""nbgrader configuration written by `infralab nbgrader export` (edit freely; re-export overwrites)."""
c = get_config()  # noqa: F821 - provided by nbgrader

c.CourseDirectory.course_id = {course_id!r}
{db_line}# Feedback pages show the tests' verdicts, not the hidden tests' source.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
# Torch and Triton on a CPU can take a while for the hidden tests of one exercise.
c.ExecutePreprocessor.timeout = 600
'''


@dataclass(frozen=True)
class Exported:
    assignment: str
    notebook: Path
    points: float
    tests: int


def _meta(grade_id: str, *, grade: bool = False, solution: bool = False, locked: bool = False,
          points: float | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if grade:
        meta["points"] = points
    return {"nbgrader": meta}


def bilingual(key: str, sep: str = "\n\n", **values: object) -> str:
    """A catalogue message in English, then in Chinese, joined by ``sep``."""
    return f"{tr(key, 'en', **values)}{sep}{tr(key, 'zh', **values)}"


def _section(heading: str, intro: str) -> str:
    return f"## {bilingual(heading, ' · ')}\n\n{bilingual(intro)}"


def _spec_cells(ex: Exercise, stub_text: str) -> list:
    spec = specification(stub_text)
    meta = bilingual("notebook.meta", "  \n", exercise=ex.id, points=f"{ex.points:g}", textbook=ex.textbook)
    head = f"# {ex.title.zh} · {ex.title.en}\n\n{meta}\n\n{rst_to_markdown(spec.module_doc)}"
    cells = [new_markdown_cell(head)]
    for name, signature, doc in spec.definitions:
        cells.append(new_markdown_cell(f"### `{name}`\n\n```python\n{signature}\n```\n\n```text\n{doc}\n```"))
    return cells


def _setup_cell(ex: Exercise, instructor: bool):
    banned = f", banned={list(ex.banned)!r}" if ex.banned else ""
    src = (f"# {bilingual('notebook.setup_comment', chr(10) + '# ')}\n"
           "from infralab.nbgrader.notebook import setup\n\n"
           f"setup({ex.id!r}{banned})")
    return new_code_cell(src, metadata=_meta(f"{ex.name}_setup", locked=True) if instructor else {})


def _test_cells(ex: Exercise, tests: TestFile, visibility: str, points: list[float], instructor: bool) -> list:
    cells = []
    hidden = visibility == "hidden"
    if not hidden and tests.preamble.strip():
        meta = _meta(f"{ex.name}_visible_setup", locked=True) if instructor else {}
        cells.append(new_code_cell(f"%%{MAGIC} visible\n{tests.preamble}", metadata=meta))
    for i, (piece, pts) in enumerate(zip(tests.tests, points)):
        body = piece.source
        if hidden:
            if i == 0 and tests.preamble.strip():
                body = f"{tests.preamble}\n\n\n{body}"
            body = f"{HIDDEN_BEGIN}\n{body}\n{HIDDEN_END}"
        grade_id = f"{ex.name}_{'h' if hidden else 'v'}_{piece.name}"
        if not instructor:
            meta = {}
        elif hidden:  # the graded cells: the points go where the record puts them (record.score_tests)
            meta = _meta(grade_id, grade=True, locked=True, points=pts)
        else:  # visible tests carry no points: they are the student's check, not the grade
            meta = _meta(grade_id, locked=True)
        magic = f"%%{MAGIC} {visibility}" + (f" {pts:g}" if hidden and instructor else "")
        cells.append(new_code_cell(f"{magic}\n{body}", metadata=meta))
    return cells




def exercise_notebook(course: Course, ex: Exercise, *, student: bool = False) -> tuple[nbformat.NotebookNode, float, int]:
    """The notebook of one exercise; with its total points and number of test cells."""
    root = course.root
    stub_text = (root / "exercises" / ex.module_path).read_text(encoding="utf-8")
    solution_file = root / "solutions" / ex.module_path
    instructor = not student
    solution_text = solution_file.read_text(encoding="utf-8") if instructor else None
    files = [("visible", read_test_file(root / ex.visible_tests))]
    if instructor:
        files.append(("hidden", read_test_file(root / ex.hidden_tests)))
    graded = files[-1][1].tests  # the hidden tests (a student export: the visible ones, as a guide)
    points = [0.0] * (len(files[0][1].tests) if instructor else 0) + split_points(ex.points, [p.weight for p in graded])

    cells = _spec_cells(ex, stub_text)
    cells.append(_setup_cell(ex, instructor))
    cells.append(new_markdown_cell(_section("notebook.answer_heading", "notebook.answer_intro")))
    answer = answer_cell(stub_text, solution_text)
    cells.append(new_code_cell(answer, metadata=_meta(ANSWER_ID, solution=True)))  # also how extraction finds it
    start = 0
    for visibility, tests in files:
        share = points[start:start + len(tests.tests)]
        start += len(tests.tests)
        cells.append(new_markdown_cell(_section(f"notebook.{visibility}_heading", f"notebook.{visibility}_intro")))
        cells.extend(_test_cells(ex, tests, visibility, share, instructor))
    nb = new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "infralab": {"exercise": ex.id},
    })
    return nb, ex.points, sum(len(f.tests) for _, f in files)


def export_course(course: Course, out: Path, *, parts: list[str] | None = None,
                  exercises: list[str] | None = None, student: bool = False,
                  force: bool = False, db_url: str | None = None) -> list[Exported]:
    """Write the course directory under ``out``; returns what was written.

    Instructor export: ``out/nbgrader_config.py`` and ``out/source/<part>/<exercise>.ipynb``.
    Student export: ``out/<part>/<exercise>.ipynb``; an existing notebook (a student's work) is
    kept unless ``force``.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Exported] = []
    if not student:
        config = out / "nbgrader_config.py"
        db_line = f"c.CourseDirectory.db_url = {db_url!r}\n" if db_url else ""
        config.write_text(NBGRADER_CONFIG.format(course_id=course.id, db_line=db_line), encoding="utf-8")
    for ex in course.select(parts, exercises):
        folder = out / ("source" if not student else "") / ex.part
        path = folder / f"{ex.name}.ipynb"
        if student and path.exists() and not force:
            continue
        nb, points, tests = exercise_notebook(course, ex, student=student)
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, path)
        _copy_goldens(course, ex, folder)
        written.append(Exported(ex.part, path, points, tests))
    return written


def _copy_goldens(course: Course, ex: Exercise, folder: Path) -> None:
    """The visible tests' recorded cases beside the notebook (``golden/<exercise>.*``): the notebook
    replays them, as a release does (infralab.golden)."""
    import shutil

    from infralab.golden import golden_files
    files = [f for f in golden_files(course.root, ex) if f.is_file()]
    if files:
        (folder / "golden").mkdir(exist_ok=True)
        for f in files:
            shutil.copyfile(f, folder / "golden" / f.name)
