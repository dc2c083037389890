"""Fixtures for the kit's own tests."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

COURSE_HEAD = """
course:
  id: mini
  title: {en: Mini, zh: 迷你}
parts:
  - id: part01_demo
    title: {en: Demo, zh: 演示}
    exercises:
"""

EXERCISE = """
      - id: {name}
        title: {{en: {name}, zh: 练习}}
        public: [{name}]
        points: 4
        textbook: "00"
"""

STUB = '''"""{name}: x -> {expr}. 中文：{name}。"""


def {name}(x):
    """Return {expr}. 中文：返回 {expr}。"""
    raise NotImplementedError("{name}")
'''

SOLUTION = '''"""{name}: x -> {expr}."""


def {name}(x):
    """Return {expr}."""
    return {expr}
'''

VISIBLE = '''
import torch
from infralab.testing import assert_close


def test_{name}_of_ones(impl):
    x = torch.ones(3)
    assert_close(impl("part01_demo.{name}").{name}(x), {expr})
'''

HIDDEN = '''
import pytest
import torch
from infralab.testing import assert_close


def test_{name}_of_random(impl, gen):
    x = torch.randn(5, generator=gen)
    assert_close(impl("part01_demo.{name}").{name}(x), {expr}, mistakes={{"returned {wrong}": lambda: {wrong}}})


@pytest.mark.weight(3)
def test_{name}_of_negative(impl):
    x = -torch.ones(2)
    assert_close(impl("part01_demo.{name}").{name}(x), {expr})
'''

MUTANT = '''"""Mistake: {wrong}."""


def {name}(x):
    return {wrong}
'''

# exercise -> (correct expression, a known-wrong one)
EXERCISES = {"double": ("2 * x", "x + 1"), "negate": ("-x", "x * 1")}


def write_mini_course(root: Path) -> Path:
    """A two-exercise course: stubs, solutions, visible and hidden tests, one mutant each."""
    files = {"course.yml": COURSE_HEAD + "".join(EXERCISE.format(name=n) for n in EXERCISES)}
    for name, (expr, wrong) in EXERCISES.items():
        fill = dict(name=name, expr=expr, wrong=wrong)
        files.update({
            f"exercises/part01_demo/{name}.py": STUB.format(**fill),
            f"exercises/part01_demo/tests/test_{name}.py": VISIBLE.format(**fill),
            f"solutions/part01_demo/{name}.py": SOLUTION.format(**fill),
            f"graders/part01_demo/test_{name}.py": HIDDEN.format(**fill),
            f"fixtures/mutants/part01_demo/{name}/wrong.py": MUTANT.format(**fill),
        })
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


@pytest.fixture
def mini_course(tmp_path: Path) -> Path:
    return write_mini_course(tmp_path / "course")


# ---- scheduling of `make test` (pytest-xdist, `-n 2 --dist loadgroup`) -----------------------------
# The suite is a few long tests (each part's soundness sweep, the sample class, the hostile batches)
# and many short ones. Long tests go first, so the two workers finish together instead of one worker
# running the last sweep alone; a module whose tests share a module-scoped batch runs on one worker,
# so the batch is graded once. Measured on the idle 2-core machine: docs/authoring.md, "make test".
LONG_FIRST = (
    "tests/test_soundness.py::test_every_exercise_of_the_part_is_sound_over_seeds",
    "tests/test_grade_class.py::test_the_sample_class_is_graded_safely",
    "tests/test_judge_hostile_samples.py",
    "tests/test_routes.py::test_every_route_gives_the_sample_class_the_same_points",
    "tests/test_judge_special_exercises.py",
    "tests/test_hostile_integrity.py",
    "tests/test_visible_rate.py",
    "tests/test_nbgrader_roundtrip.py",
)
ONE_WORKER = ("tests/test_judge_hostile_samples.py", "tests/test_nbgrader_roundtrip.py", "tests/test_judge_cage.py")


def _long_rank(nodeid: str) -> int:
    return next((i for i, prefix in enumerate(LONG_FIRST) if nodeid.startswith(prefix)), len(LONG_FIRST))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if module in ONE_WORKER:
            item.add_marker(pytest.mark.xdist_group(module))
    items.sort(key=lambda item: _long_rank(item.nodeid))  # stable: the rest keep their order
