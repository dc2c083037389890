"""Every exercise is sound: its solution passes all tests, its stub fails every hidden test,
and every known-wrong implementation in fixtures/mutants fails at least one hidden test.

One pytest run per part (in --soundness mode) checks all targets of that part's exercises;
xdist spreads the parts over the cores.
"""
import pytest

from infralab.course import load_course
from infralab.soundness import check_soundness

COURSE = load_course()


@pytest.mark.timeout(1200)  # a part's whole matrix in one child pytest; slow on a loaded 2-core machine
@pytest.mark.parametrize("part", [p.id for p in COURSE.parts])
def test_every_exercise_of_the_part_is_sound(part):
    results, record = check_soundness(COURSE, COURSE.select([part]))
    holes = [f"{r.exercise}: {hole}" for r in results for hole in r.holes]
    assert not holes, "soundness holes:\n" + "\n".join(holes) + "\n--- pytest output ---\n" + record["output_tail"]
    assert all(r.solution_total > 0 and len(r.mutants) >= 3 for r in results)
