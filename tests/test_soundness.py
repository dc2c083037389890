"""Every exercise is sound: its solution passes all tests at every seed of a sweep, its stub fails
every hidden test, and every known-wrong implementation in fixtures/mutants fails at least one
hidden test.

One pytest run per part (in --soundness mode) checks all targets of that part's exercises: the
solution's seed-dependent tests at SWEEP_SEEDS fresh base seeds, stub and mutants once. A test that
fails a correct answer for 1 seed in 20 passes one run of 30 seeds unnoticed with probability
0.95**30 = 21%, and two runs (every `make test` draws new seeds) with 4.6%; 30 is what the whole
course's sweep can afford within `make test`'s 20 minutes on 2 cores. The deeper sweep is a
benchmark: `python benchmarks/soundness_sweep.py --seeds 200`.
A part whose sweep is slow (Part 03's kernels under the Triton interpreter) is cut into chunks of
seeds, each its own test, so xdist spreads them over the cores.
"""
import pytest

from infralab.course import load_course
from infralab.seeds import fresh_seed, test_seed
from infralab.soundness import check_soundness, sweep_solution

COURSE = load_course()
SWEEP_SEEDS = 30
CHUNKS = {"part03_kernels": 2, "part02_parallelism": 2, "part04_serving": 2, "part05_quantization": 2}  # seconds per seed on one core: ~5 for Part 03, ~3 for Part 02, ~6 for Part 04 (paged_decode_kernel under the interpreter ~2.7), ~6 for Part 05 (its whole matrix was the longest test, 235 s in CI), under 3 for any other part
CASES = [(part.id, chunk) for part in COURSE.parts for chunk in range(CHUNKS.get(part.id, 1))]


@pytest.mark.timeout(1200)  # a part's whole matrix in one child pytest; slow on a loaded 2-core machine
@pytest.mark.parametrize("part,chunk", CASES, ids=[f"{p}-seeds{c}" if c else p for p, c in CASES])
def test_every_exercise_of_the_part_is_sound_over_seeds(part, chunk):
    seeds, base = SWEEP_SEEDS // CHUNKS.get(part, 1), fresh_seed()
    where = f"--seed {base} --seeds {seeds}"
    if chunk:  # the matrix runs with chunk 0; the other chunks sweep the solution only
        failures, record = sweep_solution(COURSE, COURSE.select([part]), seeds=seeds, seed=base)
        assert not failures, f"the solution fails ({where}):\n" + "\n".join(map(str, failures))
        return
    results, record = check_soundness(COURSE, COURSE.select([part]), seeds=seeds, seed=base)
    holes = [f"{r.exercise}: {hole}" for r in results for hole in r.holes]
    assert not holes, (f"soundness holes ({where}):\n" + "\n".join(holes)
                       + "\n--- pytest output ---\n" + record["output_tail"])
    assert all(r.solution_total > 0 and len(r.mutants) >= 3 for r in results)


# ---- the sweep itself, on the kit's mini course (tests/conftest.py) --------------------------------

FLAKY = '''
from hypothesis import given, strategies as st


def test_fails_one_seed_in_four(impl, seed):
    impl("part01_demo.double")
    assert seed % 4 != 0, "unlucky seed"


@given(v=st.integers(0, 10**9))
def test_draws_from_hypothesis(impl, seed, v):
    impl("part01_demo.double")
    with open(__import__("os").environ["DRAWS"], "a") as f:
        f.write(f"{seed} {v}\\n")
'''


def _draws(path):
    out = {}
    for line in path.read_text().splitlines():
        seed, value = line.split()
        out.setdefault(int(seed), set()).add(int(value))
    return out


def test_a_sweep_finds_the_first_failing_seed_and_plain_seed_repeats_it(mini_course, tmp_path, monkeypatch):
    (mini_course / "graders/part01_demo/test_double.py").write_text(
        (mini_course / "graders/part01_demo/test_double.py").read_text() + FLAKY)
    monkeypatch.setenv("DRAWS", str(tmp_path / "sweep.txt"))
    course = load_course(mini_course)
    [double, negate] = check_soundness(course, course.exercises, seeds=12, seed=100)[0]
    hidden_test = "graders/part01_demo/test_double.py::test_fails_one_seed_in_four"  # as a plain run names it
    own = [test_seed(b, hidden_test) for b in range(100, 112)]
    unlucky = [b for b, s in zip(range(100, 112), own) if s % 4 == 0]
    assert unlucky, "pick a range with an unlucky seed"
    [failure] = double.solution_failures
    assert (failure.test, failure.first_seed, failure.failed, failure.seeds) == \
        (hidden_test, unlucky[0], len(unlucky), 12)
    assert any("--seed %d" % unlucky[0] in hole for hole in double.holes) and not negate.solution_failures
    # the mutant of double (x + 1) passes the visible test on ones; hidden tests catch both
    assert (double.caught_hidden, double.caught_visible, double.visible_escapes) == (1, 0, ["wrong"])
    assert (negate.caught_hidden, negate.caught_visible) == (1, 1)
    swept = _draws(tmp_path / "sweep.txt")
    assert len({frozenset(v) for v in swept.values()}) == len(swept) > 1, "hypothesis drew the same at every seed"

    monkeypatch.setenv("DRAWS", str(tmp_path / "plain.txt"))
    failures, _ = sweep_solution(course, (course.exercises[0],), seeds=1, seed=unlucky[0])
    assert [(f.test, f.first_seed, f.failed) for f in failures] == [(hidden_test, unlucky[0], 1)]
    [(seed, values)] = _draws(tmp_path / "plain.txt").items()
    assert values == swept[seed], "the sweep's case at a seed drew other examples than --seed alone"


ONE_DRAW_IN_THREE = '''
import torch
from infralab.testing import assert_close


def test_double_of_one_value(impl, seed):
    x = torch.full((2,), 4.0 if seed % 3 == 0 else 1.0)  # x + 1 == 2 * x at 1: only a draw of 4 catches it
    assert_close(impl("part01_demo.double").double(x), 2 * x)
'''


def test_a_mutant_sweep_names_the_seeds_where_a_mutant_escapes(mini_course):
    """With ``sweep_mutants`` the mutants run at every seed, each drawing what the solution draws there:
    a mutant only some draws catch is a hole at the others, which one mutant run at one seed would miss."""
    (mini_course / "graders/part01_demo/test_double.py").write_text(ONE_DRAW_IN_THREE)
    course = load_course(mini_course)
    test = "graders/part01_demo/test_double.py::test_double_of_one_value"
    bases = range(100, 112)
    escapes = [b for b in bases if test_seed(b, test) % 3 != 0]
    assert 0 < len(escapes) < len(bases), "pick a range where the draw catches the mutant at some seeds only"
    [double, negate] = check_soundness(course, course.exercises, seeds=len(bases), seed=bases[0],
                                       sweep_mutants=True)[0]
    assert double.mutant_escapes == {"wrong": escapes} and not negate.mutant_escapes
    assert any(f"at {len(escapes)} of {len(bases)} seeds" in h and f"--seed {escapes[0]}" in h for h in double.holes)
    assert double.solution_passed == double.solution_total == len(bases) + 1  # the visible test draws nothing
    caught_at = next(b for b in bases if b not in escapes)  # one run at a catching seed: no hole to see
    [once, _] = check_soundness(course, course.exercises, seeds=len(bases), seed=caught_at)[0]
    assert not once.mutant_escapes and not any("seeds (repeat" in h for h in once.holes)


def test_validate_refuses_a_sweep_of_no_seeds_in_one_line(capsys, monkeypatch):
    from infralab.cli import main
    monkeypatch.setenv("INFRALAB_LANG", "en")
    with pytest.raises(SystemExit) as exit_:
        main(["validate", "--seeds", "0"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.strip() == "infralab validate: argument --seeds: expected a whole number >= 1, got '0'"


def test_a_mutant_that_does_not_load_is_a_hole_not_a_catch():
    """A mutant built from the reference's source fails to load when the reference changed under it; every
    test then fails with the target's own error. Those failures must not count as catching the mistake."""
    from infralab.soundness import analyze
    ex = COURSE.exercise("part05_quantization.w4a16")

    def case(target, outcome, message="", visibility="hidden"):
        return {"nodeid": f"graders/x.py::t[{target}]", "name": "t", "exercise": ex.id, "visibility": visibility,
                "outcome": outcome, "message": message, "target": target, "base_seed": 0}
    broken = "TargetError: fixtures/.../old.py does not import: ValueError: edit of w4a16_kernel: ..."
    record = {"exercises": [{"tests": [
        case("solutions", "passed"), case("exercises", "failed", "NotImplementedError"),
        case(f"mutant:{ex.id}:old", "failed", broken), case(f"mutant:{ex.id}:old", "failed", broken, "visible"),
        case(f"mutant:{ex.id}:real", "failed", "Mismatch: ..."),
        case(f"mutant:{ex.id}:real", "failed", "Mismatch: ...", "visible")]}]}
    s = analyze(COURSE, (ex,), record)[0]
    assert s.mutants == {"old": 0, "real": 1} and s.mutants_visible == {"old": 0, "real": 1}
    assert s.broken_mutants == ["old"] and not s.sound and any("old" in h for h in s.holes)
