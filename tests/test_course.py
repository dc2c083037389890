"""course.yml is loaded into typed objects; a broken one fails with the file, the key path and
what was expected."""
from pathlib import Path

import pytest
import yaml

from infralab.course import load_course
from infralab.errors import CourseError


def edit(root: Path, change) -> None:
    data = yaml.safe_load((root / "course.yml").read_text())
    change(data)
    (root / "course.yml").write_text(yaml.safe_dump(data, allow_unicode=True))


def test_the_kit_course_loads_with_parts_and_points():
    course = load_course(Path(__file__).parents[1])
    assert course.parts and all(ex.points > 0 for ex in course.exercises)
    assert course.exercise("part01_transformer.rmsnorm").public == ("rms_norm", "layer_norm")


def test_mini_course_loads(mini_course):
    course = load_course(mini_course)
    ex = course.exercise("part01_demo.double")
    assert ex.points == 4 and ex.hidden_tests == Path("graders/part01_demo/test_double.py")
    assert course.select(exercises=["double"]) == (ex,)
    assert course.exercise_for_test_file(mini_course / ex.hidden_tests) == (ex, "hidden")


@pytest.mark.parametrize("change, key, expected", [
    (lambda d: d["parts"][0]["exercises"][0].update(colour="red"), "parts[0].exercises[0].colour", "one of"),
    (lambda d: d["parts"][0]["exercises"][0].pop("points"), "parts[0].exercises[0].points", "present"),
    (lambda d: d["parts"][0]["exercises"][0].update(points=-1), "parts[0].exercises[0].points", "a number >= 0"),
    (lambda d: d["parts"][0]["exercises"][0].update(id="triple"), "parts[0].exercises[0].id", "a module file"),
    (lambda d: d["parts"][0]["exercises"].append(dict(d["parts"][0]["exercises"][0])),
     "parts[0].exercises[2].id", "used once"),
    (lambda d: d["parts"][0]["exercises"][0].update(tests={"hidden": "graders/nope.py"}),
     "parts[0].exercises[0].tests.hidden", "an existing test file"),
    (lambda d: d["parts"][0]["exercises"][0].update(perf=[{"profiles": ["tpu9"]}]),
     "parts[0].exercises[0].perf[0].profiles[0]", "a registered hardware profile"),
    (lambda d: d["parts"][0].update(id="Part One"), "parts[0].id", "lower-case identifier"),
    (lambda d: d.pop("course"), "course", "present"),
])
def test_broken_course_names_file_key_and_expectation(mini_course, change, key, expected):
    edit(mini_course, change)
    with pytest.raises(CourseError) as err:
        load_course(mini_course)
    assert err.value.key == key
    assert expected in err.value.expected
    assert str(mini_course / "course.yml") in str(err.value)


def test_invalid_yaml_is_reported_with_the_file(mini_course):
    (mini_course / "course.yml").write_text("course: [unclosed\n")
    with pytest.raises(CourseError, match="valid YAML"):
        load_course(mini_course)
