"""The pytest plugin (registered through the ``pytest11`` entry point).

Inert outside a course (no course.yml above the rootdir or the current folder). Inside one it:

- adds ``--target exercises|solutions|PATH|mutant:...`` and the ``impl`` fixture through which
  every test reaches the implementation under test;
- marks each test with its part and exercise (``-m part01_transformer``, ``-m rope``) and its
  visibility, and gives it a fresh seed (``seed``/``gen`` fixtures; ``--seed N`` to repeat a run);
- writes the result record of the run as JSON with ``--record PATH``; a record made in-process
  with a submission as the target is a check, never a grade (``mode: check``, ``trusted: false``):
  the submission ran in the tests' own interpreter and could change them;
- in ``--soundness`` mode runs each exercise test against the solution, the stub and every
  known-wrong implementation of that exercise, recording the target of each outcome.
"""
from __future__ import annotations

import builtins
import datetime as _dt
import os
import re
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

from infralab.course import Course, Exercise, find_course_root, load_course
from infralab.errors import InfralabError, TargetError
from infralab.i18n import LANGS, language, set_language, tr, use_course_language
from infralab.record import TestResult, build_record, write_record
from infralab.seeds import fresh_seed, kit_id, own_nodeid, sweep, test_seed
from infralab.targets import InProcessTarget, TargetSpec, parse_target
from infralab.triton_env import fp32_dot_env, interpret_without_gpu
from infralab.uses import PARTS, parts_option, reference_parts_spec, whose_parts

pytest_plugins = ("infralab.golden",)  # the golden fixture and --update-golden of visible tests

_STATE = pytest.StashKey["_State"]()


class _State:
    def __init__(self, config: pytest.Config, course: Course):
        self.config = config
        self.course = course
        self.targets: dict[str, Any] = {}
        self.results: list[TestResult] = []
        self.started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        self.t0 = time.perf_counter()
        self.default_target = parse_target(config.getoption("infralab_target"), course.root)
        self.flags: list[dict] = []
        self.perf: list[dict] = []  # performance entries (infralab.perf), via the perf_record fixture
        self.banned = {ex.id: ex.banned for ex in course.exercises if ex.banned}
        self.triton = frozenset(ex.id for ex in course.exercises if ex.triton)
        self.mutates = {ex.id: ex.may_change for ex in course.exercises}  # the inputs each call may change
        self.parts = parts_option(config.getoption("infralab_parts"))  # a capstone's parts: own | reference
        self.uses = {ex.id: ex.uses for ex in course.exercises if ex.uses}
        self.whose: dict[str, dict[str, dict[str, str]]] = {}  # capstone -> parts -> {module: whose}

    def spec_for(self, exercise: str, spec: TargetSpec) -> TargetSpec:
        """The target the tests of ``exercise`` run on: ``spec``, or for a capstone under ``--parts
        reference`` its variant with the reference parts (infralab.uses)."""
        if self.parts != "reference" or exercise not in self.uses:
            return spec
        return reference_parts_spec(spec, self.uses[exercise], self.course.root)

    def plan(self, exercises: list[str]) -> None:
        """Start the executors of the isolated mode in the order the exercises' tests run, each on its target."""
        by_target: dict[str, tuple[TargetSpec, list[str]]] = {}
        for exercise in exercises:
            spec = self.spec_for(exercise, self.default_target)
            by_target.setdefault(spec.name, (spec, []))[1].append(exercise)
        for spec, order in by_target.values():
            self.target(spec).plan(order)

    def target(self, spec: TargetSpec):
        if spec.name not in self.targets:
            if self.config.getoption("infralab_isolated"):  # the grading mode: the judge gets plain data
                from dataclasses import replace

                from infralab.judge.cage import CageLimits
                from infralab.judge.config import JudgeConfig
                from infralab.judge.isolated import PerExerciseTarget
                limits = replace(CageLimits.from_env(), gpu=bool(self.config.getoption("infralab_gpu")))
                self.targets[spec.name] = PerExerciseTarget(spec, JudgeConfig.from_course(self.course), limits)
            else:
                self.targets[spec.name] = InProcessTarget(spec, self.banned, self.triton, self.mutates)
        return self.targets[spec.name]

    def exercise_of(self, path: Path) -> tuple[Exercise, str] | None:
        return self.course.exercise_for_test_file(path)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("infralab")
    group.addoption("--target", dest="infralab_target", default="exercises",
                    help=tr("help.pytest.target"))
    group.addoption("--course", dest="infralab_course", default=None,
                    help=tr("help.pytest.course"))
    group.addoption("--record", dest="infralab_record", default=None,
                    help=tr("help.pytest.record"))
    group.addoption("--seed", dest="infralab_seed", type=int, default=None,
                    help=tr("help.pytest.seed"))
    group.addoption("--seeds", dest="infralab_seeds", type=int, default=1,
                    help=tr("help.pytest.seeds"))
    group.addoption("--soundness", dest="infralab_soundness", action="store_true",
                    help=tr("help.pytest.soundness"))
    group.addoption("--sweep-mutants", dest="infralab_sweep_mutants", action="store_true",
                    help=tr("help.pytest.sweep_mutants"))
    group.addoption("--isolated", dest="infralab_isolated", action="store_true",
                    help=tr("help.pytest.isolated"))
    group.addoption("--gpu", dest="infralab_gpu", action="store_true",
                    help=tr("help.pytest.gpu"))
    group.addoption("--perf-time-cap", dest="infralab_perf_time_cap", type=float, default=None,
                    help=tr("help.pytest.perf_time_cap"))
    group.addoption("--perf-one-block-gate", dest="infralab_perf_one_block_gate", action="store_true",
                    help=tr("help.pytest.perf_one_block_gate"))
    group.addoption("--record-mode", dest="infralab_mode", default="check",
                    help=tr("help.pytest.record_mode"))
    group.addoption("--parts", dest="infralab_parts", default="own", choices=PARTS,
                    help=tr("uses.option_help"))
    group.addoption("--lang", dest="infralab_lang", default=None, choices=LANGS,
                    help=tr("help.pytest.lang"))


def _course_root(config: pytest.Config) -> Path | None:
    given = config.getoption("infralab_course")
    if given:
        return Path(given).resolve()
    for start in (config.rootpath, Path.cwd()):
        try:
            return find_course_root(start)
        except InfralabError:
            continue
    return None


def pytest_configure(config: pytest.Config) -> None:
    root = _course_root(config)
    if root is None:
        return
    try:
        course = load_course(root)
        state = _State(config, course)
    except InfralabError as e:
        raise pytest.UsageError(f"infralab: {e}") from None
    if config.getoption("infralab_seeds") < 1:
        raise pytest.UsageError(tr("seeds.bad_count", value=config.getoption("infralab_seeds")))
    config.stash[_STATE] = state
    session_seed(config)  # drawn here, before xdist starts its workers: they must collect the same sweep
    _configure_language(config, course)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))  # mutants import the reference as `solutions.<part>.<module>`
    for key in ("loop.marker_gpu", "loop.marker_weight", "loop.marker_slow"):
        config.addinivalue_line("markers", tr(key))
    zh = language() == "zh"
    for part in course.parts:
        config.addinivalue_line("markers", tr("loop.marker_part", part=part.id,
                                              title=part.title.zh if zh else part.title.en))
        for ex in part.exercises:
            config.addinivalue_line("markers", tr("loop.marker_part", part=ex.name, title=ex.id))
    _configure_threads()
    _configure_triton(config)
    _configure_hypothesis(config)
    if _plans_executors(config):  # the first exercise's executor starts while pytest collects
        found = [state.exercise_of(Path(arg.split("::")[0]).resolve()) for arg in config.args]
        state.plan([f[0].id for f in found if f is not None][:1])


def _plans_executors(config: pytest.Config) -> bool:
    return bool(config.getoption("infralab_isolated")) and not config.getoption("infralab_soundness") \
        and not hasattr(config, "workerinput")


def _configure_language(config: pytest.Config, course: Course) -> None:
    """``--lang``, else INFRALAB_LANG (the CLI's ``--lang``), else course.yml ``language:``, else the locale."""
    if config.getoption("infralab_lang"):
        set_language(config.getoption("infralab_lang"))  # exported: xdist workers and the judge speak it too
    else:
        use_course_language(course.language)


def _configure_threads() -> None:
    """One intra-op thread per process unless OMP_NUM_THREADS says otherwise.

    The tests use small tensors, and pytest-xdist workers, gloo ranks and grading executors run
    side by side: extra threads only spin-wait (a tiny LLaMA forward took 36x the CPU time with
    2 threads on a loaded 2-core machine). Child processes inherit the setting.
    """
    if "OMP_NUM_THREADS" in os.environ:
        return
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch
    if not torch.cuda.is_available():
        torch.set_num_threads(1)


def _configure_triton(config: pytest.Config) -> None:
    """Without a GPU, Triton kernels run under the interpreter (must be set before triton loads).
    The isolated judge uses the interpreter unless ``--gpu`` puts the executor on the GPU."""
    if config.getoption("infralab_isolated") and not config.getoption("infralab_gpu"):
        os.environ["TRITON_INTERPRET"] = "1"
    else:
        interpret_without_gpu()
    if os.environ.get("TRITON_INTERPRET") != "1":  # compiled kernels: fp32 dots as the interpreter computes them
        os.environ.update(fp32_dot_env())
    if os.environ.get("TRITON_INTERPRET") == "1":
        problem = interpreter_version_problem()
        if problem:
            config.issue_config_time_warning(pytest.PytestConfigWarning(problem), stacklevel=2)


def interpreter_version_problem() -> str | None:
    """Why the Triton interpreter will fail in this environment, or None (see GOTCHAS: triton 3.6's
    interpreter breaks on numpy >= 2.3 inside loops)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        triton, numpy = version("triton"), version("numpy")
    except PackageNotFoundError:
        return None
    triton_mm, numpy_mm = (tuple(int(x) for x in v.split(".")[:2]) for v in (triton, numpy))
    if triton_mm == (3, 6) and numpy_mm >= (2, 3):
        return tr("loop.interpreter_versions", triton=triton, numpy=numpy)
    return None


def _configure_hypothesis(config: pytest.Config) -> None:
    try:
        from hypothesis import HealthCheck, Phase, settings
    except ImportError:
        return
    no_explain = [phase for phase in Phase if phase != Phase.explain]
    # report_multiple_bugs=False: a failing test raises its first (shrunk) failure itself, with its
    # message and diagnosis, not an ExceptionGroup of "N distinct failures"; no explain phase (its
    # notes list the kit's own lines). A test's own @settings inherits both from this profile.
    common = dict(deadline=None, database=None, max_examples=25, report_multiple_bugs=False,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                         HealthCheck.differing_executors])
    if config.getoption("infralab_soundness") or config.getoption("infralab_isolated"):
        # Many targets, each known to fail somewhere: find a failure, skip the shrinking.
        # Isolated grading too: every shrinking step would be a remote call (and a hung one a timeout).
        settings.register_profile("infralab", derandomize=True,
                                  phases=[Phase.explicit, Phase.reuse, Phase.generate], **common)
    elif config.getoption("infralab_seed") is not None:
        settings.register_profile("infralab", derandomize=True, phases=no_explain, **common)  # repeatable
    else:
        settings.register_profile("infralab", phases=no_explain, **common)
    settings.load_profile("infralab")


def _state(config: pytest.Config) -> _State | None:
    return config.stash.get(_STATE, None)


def _soundness_targets(state: _State, ex: Exercise, visibility: str) -> list[str]:
    """Every test, visible and hidden, runs on every mutant: the record tells which tests catch each."""
    mutants = sorted((state.course.root / ex.mutants_dir).glob("*.py"))
    stub = stub_target(ex)
    return ["solutions", stub] + [f"mutant:{ex.id}:{m.stem}" for m in mutants if m.name != "__init__.py"]


def stub_target(ex: Exercise) -> str:
    """The stub of soundness mode: the stubs (``exercises``); for a capstone its stub on the reference
    parts (``stub:<id>``), so a hidden test fails because the capstone is a stub, not because a part is."""
    return f"stub:{ex.id}" if ex.uses else "exercises"


def _swept_target(config: pytest.Config, target: str | None) -> bool:
    """Whether a sweep (``--seeds N``) runs this target's seed-dependent tests at every seed: always outside
    soundness mode; in it the solution, and the mutants with ``--sweep-mutants`` (a mutant caught only by
    some draws of a property test escapes at the others); the stub runs once."""
    return target in (None, "solutions") or (config.getoption("infralab_sweep_mutants") and target.startswith("mutant:"))


def _depends_on_seed(fixturenames: list[str], function: object) -> bool:
    """Draws random inputs: uses the ``seed`` fixture (``gen`` too) or is a hypothesis test."""
    return "seed" in fixturenames or getattr(function, "is_hypothesis_test", False)


@pytest.hookimpl(trylast=True)  # after the tests' own parametrize marks: the kit's ids come last
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Soundness mode: one case per target. A sweep (``--seeds N``): one case per base seed of a
    seed-dependent test (in soundness mode for the solution, and the mutants with ``--sweep-mutants``)."""
    state = _state(metafunc.config)
    if state is None or "_infralab_target" not in metafunc.fixturenames:
        return
    found = state.exercise_of(metafunc.definition.path)
    if found is None:
        return
    base = session_seed(metafunc.config)
    count = metafunc.config.getoption("infralab_seeds")
    seeds = sweep(base, count) if count > 1 and _depends_on_seed(metafunc.fixturenames, metafunc.function) else None
    if not metafunc.config.getoption("infralab_soundness"):
        if seeds:
            metafunc.parametrize("_infralab_base_seed", seeds, ids=[kit_id(None, s, True) for s in seeds])
        return
    cases, ids = [], []
    for name in _soundness_targets(state, *found):
        swept = bool(seeds) and _swept_target(metafunc.config, name)
        for s in (seeds if swept else [base]):
            cases.append((name, s))
            ids.append(kit_id(name, s, swept))
    metafunc.parametrize(["_infralab_target", "_infralab_base_seed"], cases, ids=ids)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    state = _state(config)
    if state is None:
        return
    isolated = config.getoption("infralab_isolated")
    caged_gpu = isolated and config.getoption("infralab_gpu")  # grade --gpu: the executor has the GPU
    for item in items:
        gpu = item.get_closest_marker("gpu") is not None
        if gpu and isolated and not caged_gpu:  # the cage has no GPU: none of these may load student code here
            item.add_marker(pytest.mark.skip(reason=tr("gpugrade.skip_isolated_gpu")))
        elif gpu:
            import torch
            if not torch.cuda.is_available():
                item.add_marker(pytest.mark.skip(reason=tr("loop.skip_no_gpu")))
        found = state.exercise_of(item.path)
        if found is None:
            continue
        ex, visibility = found
        item.add_marker(getattr(pytest.mark, ex.part))
        item.add_marker(getattr(pytest.mark, ex.name))
        weight = item.get_closest_marker("weight")
        item.user_properties += [
            ("infralab_exercise", ex.id),
            ("infralab_visibility", visibility),
            ("infralab_weight", float(weight.args[0]) if weight else 1.0),
        ]
        if not gpu and ex.triton and os.environ.get("TRITON_INTERPRET") != "1" and not caged_gpu:
            # CPU-tensor tests of a Triton exercise need the interpreter; with a GPU the kernels compile.
            item.add_marker(pytest.mark.skip(reason=tr("loop.skip_triton_cpu")))
    if _plans_executors(config):  # one executor per exercise, in the order the tests run
        order = [dict(item.user_properties).get("infralab_exercise", "") for item in items]
        state.plan(order)


@pytest.fixture
def _infralab_target(request: pytest.FixtureRequest) -> str:
    """The target's name; parametrized over several targets in soundness mode."""
    state = _state(request.config)
    return state.default_target.name if state else "exercises"


@pytest.fixture
def _infralab_base_seed(request: pytest.FixtureRequest) -> int | None:
    """The run's base seed; parametrized over the seeds of a sweep (``--seeds N``)."""
    return session_seed(request.config) if _state(request.config) else None


@pytest.fixture
def impl(request: pytest.FixtureRequest, _infralab_target: str, _infralab_base_seed: int | None):
    """``impl("part01_transformer.rope")``: that module of the implementation under test."""
    state = _state(request.config)
    if state is None:
        pytest.skip(tr("loop.not_in_course"))
    spec = state.default_target if _infralab_target == state.default_target.name else \
        parse_target(_infralab_target, state.course.root)
    found = state.exercise_of(request.node.path)
    exercise = found[0].id if found else ""
    if exercise in state.uses:  # a capstone: on the student's own parts or on the reference parts (--parts)
        try:
            spec = state.spec_for(exercise, spec)
        except InfralabError as e:  # no reference module to run on: every test of the capstone says so
            raise TargetError(str(e)) from None
        state.whose.setdefault(exercise, {})[state.parts] = whose_parts(spec, state.uses[exercise])
        request.node.user_properties.append(("infralab_parts", state.parts))
    target = state.target(spec)
    request.node.user_properties += [("infralab_target", spec.name), ("infralab_base_seed", _infralab_base_seed)]
    if hasattr(target, "loader"):  # isolated: each exercise has an executor of its own
        return target.loader(exercise)
    return target.load


SEED_ENV = "INFRALAB_SESSION_SEED"  # shares a fresh base seed with xdist workers (and from infralab check)


def session_seed_value() -> int:
    """A fresh base seed, unless this process was given one in INFRALAB_SESSION_SEED."""
    if SEED_ENV not in os.environ:
        os.environ[SEED_ENV] = str(fresh_seed())
    return int(os.environ[SEED_ENV])


def session_seed(config: pytest.Config) -> int:
    """The run's base seed: ``--seed``, else one fresh draw shared by the run's processes."""
    given = config.getoption("infralab_seed")
    return given if given is not None else session_seed_value()


def pytest_report_header(config: pytest.Config) -> str | None:
    state = _state(config)
    if state is None:
        return None
    return tr("loop.header", course=state.course.id, target=state.default_target.name, seed=session_seed(config))


def _case_base_seed(item: pytest.Item) -> int:
    """The base seed this case ran at: its seed in a sweep, else the run's."""
    base = getattr(getattr(item, "callspec", None), "params", {}).get("_infralab_base_seed")
    return session_seed(item.config) if base is None else base


def _own_seed(item: pytest.Item, base: int) -> int:
    """This test's seed at ``base``: from its node id without the id the kit added (target, sweep seed),
    so a case of a soundness run or a sweep draws what a plain ``--seed`` run of the test draws."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    target = params.get("_infralab_target")
    swept = "_infralab_base_seed" in params and item.config.getoption("infralab_seeds") > 1 \
        and _swept_target(item.config, target) and _depends_on_seed(item.fixturenames, item.obj)
    return test_seed(base, own_nodeid(item.nodeid, kit_id(target, base, swept)))


@pytest.fixture
def seed(request: pytest.FixtureRequest, _infralab_base_seed: int | None) -> int:
    """This test's seed, derived from the run's base seed and the test id; seeds torch, numpy, random.

    The base seed is ``--seed N`` when given (grading: repeatable), else drawn fresh for the run
    and shown in the header and in failures, so ``--seed N`` repeats a failing run.
    """
    value = _own_seed(request.node, _case_base_seed(request.node))
    request.node.user_properties.append(("infralab_seed", value))
    from infralab.testing import seed_everything
    seed_everything(value)
    return value


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """A hypothesis test draws from its own seed too (``hypothesis.seed``), so ``--seed S`` repeats its
    examples and each base seed of a sweep explores new ones (a derandomised profile would not)."""
    function = getattr(item, "obj", None)
    if not getattr(function, "is_hypothesis_test", False) or _state(item.config) is None:
        return
    import hypothesis
    hypothesis.seed(_own_seed(item, _case_base_seed(item)))(function)


@pytest.fixture
def perf_record(request: pytest.FixtureRequest):
    """``perf_record(entry)``: add a performance measurement (infralab.perf) to the run's record."""
    state = _state(request.config)
    return (lambda entry: state.perf.append(entry)) if state else (lambda entry: None)


@pytest.fixture
def gen(seed: int):
    """A torch.Generator seeded with this test's seed."""
    import torch
    return torch.Generator().manual_seed(seed)


def _relative(path: object, root: Path | None) -> str:
    """A path inside the course as ``exercises/part01_x/m.py``, any other as given."""
    try:
        return str(Path(str(path)).resolve().relative_to(root)) if root else str(path)
    except ValueError:
        return str(path)


_DID_NOT_RAISE = re.compile(r"DID NOT RAISE (?:<class ')?(?:[\w.]*\.)?(\w+)")  # pytest 8: <class 'ValueError'>


def _short_message(excinfo: pytest.ExceptionInfo, root: Path | None = None) -> str:
    exc = excinfo.value
    if isinstance(exc, NotImplementedError):
        frame = excinfo.traceback[-1]
        # isolated mode: the student's line as the executor saw it
        where = getattr(exc, "remote_where", None) or f"{_relative(frame.path, root)}:{frame.lineno + 1}"
        return tr("loop.not_implemented", detail=str(exc) or tr("loop.this_function"), where=where)
    if isinstance(exc, TargetError):
        return f"TargetError: {exc}"
    missed = _DID_NOT_RAISE.match(str(exc)) if isinstance(exc, pytest.fail.Exception) else None
    if missed:  # pytest.raises saw no exception: pytest's own line is English only
        return tr("loop.did_not_raise", expected=missed.group(1))
    text = f"{type(exc).__name__}: {exc}".strip()  # short type name: Mismatch, not infralab.testing.Mismatch
    example = falsifying_example(exc)
    if example:
        text += "\n" + tr("loop.falsifying_example", example=example)
    return text if len(text) <= 2000 else text[:2000] + " ..."


def falsifying_example(exc: BaseException) -> str | None:
    """The arguments hypothesis found, from the notes it adds to a failure (``d=8, offset=1``), or None."""
    for note in getattr(exc, "__notes__", ()):
        head, _, rest = note.partition("\n")
        if not head.startswith(("Falsifying", "Failing")):  # "Falsifying example", "Failing test case", "Failing explicit example"
            continue
        args = []
        for line in rest.splitlines():
            line = line.split("  #", 1)[0].strip().rstrip(",")
            if "=" in line and not line.startswith(("impl=", "#")):
                args.append(line)
        return ", ".join(args) or None
    return None


_EXCEPTION_GROUP = getattr(builtins, "BaseExceptionGroup", ())  # Python 3.11+; none before


def first_failure(exc: BaseException) -> BaseException:
    """An exception group (hypothesis' "N distinct failures", when a test's own settings ask for
    several) reported as one failure, whose message and diagnosis the student needs: the first
    that names a known mistake, else the first."""
    if not isinstance(exc, _EXCEPTION_GROUP):
        return exc
    leaves = [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return next((leaf for leaf in leaves if getattr(leaf, "diagnosis", None)), leaves[0] if leaves else exc)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, _EXCEPTION_GROUP):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


_KIT = str(Path(__file__).resolve().parent)


def without_kit_frames(exc: BaseException) -> BaseException:
    """``exc`` with the kit's own frames (infralab.testing's comparison, the impl fixture's loader,
    the guards) cut out of its traceback, so the student reads the test's line, their code's lines
    and the message. Rebuilds the traceback chain itself: pytest's own cut re-walks it (and pdb
    post-mortem walks it too), so filtering pytest's view is not enough."""
    chain = []
    tb = exc.__traceback__
    while tb is not None:
        chain.append(tb)
        tb = tb.tb_next
    kept = [tb for tb in chain if not tb.tb_frame.f_code.co_filename.startswith(_KIT)]
    if kept and len(kept) < len(chain):
        rebuilt = None
        for tb in reversed(kept):
            rebuilt = types.TracebackType(rebuilt, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
        exc.__traceback__ = rebuilt
    return exc


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    state = _state(item.config)
    if state is not None and call.excinfo is not None and state.exercise_of(item.path) is not None:
        exc = first_failure(call.excinfo.value)
        if not item.config.getoption("fulltrace", False):
            exc = without_kit_frames(exc)
        if exc is not call.excinfo.value or exc.__traceback__ is not call.excinfo.tb:
            call.excinfo = pytest.ExceptionInfo.from_exception(exc)
    outcome = yield
    rep = outcome.get_result()
    if state is None or call.excinfo is None or rep.skipped:
        return
    message = _short_message(call.excinfo, state.course.root)
    rep.user_properties.append(("infralab_message", message))
    if _depends_on_seed(getattr(item, "fixturenames", ()), getattr(item, "obj", None)) \
            and not call.excinfo.errisinstance((NotImplementedError, TargetError)):
        rep.sections.append(("infralab", tr("seeds.repeat", seed=_case_base_seed(item))))
    if "seed" in getattr(item, "fixturenames", ()) and not call.excinfo.errisinstance((NotImplementedError, TargetError)):
        rep.sections.append(("infralab", tr("loop.repeat_seed", seed=session_seed(item.config))))
    diagnosis = getattr(call.excinfo.value, "diagnosis", None)
    if diagnosis:
        rep.user_properties.append(("infralab_diagnosis", diagnosis))
    if call.excinfo.errisinstance((NotImplementedError, TargetError)):
        rep.longrepr = f"{item.nodeid}\n{message}"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    config = _CONFIG[0] if _CONFIG else None
    state = _state(config) if config else None
    if state is None:
        return
    props = dict(report.user_properties)
    if "infralab_exercise" not in props:
        return
    final = (report.when == "call") or (report.when == "setup" and (report.failed or report.skipped)) \
        or (report.when == "teardown" and report.failed)
    if not final:
        return
    outcome = "passed" if report.passed else ("skipped" if report.skipped else "failed")
    if report.when == "teardown":  # a failing teardown turns an already recorded pass into a failure
        for r in reversed(state.results):
            if r.nodeid == report.nodeid:
                r.outcome, r.message = "failed", props.get("infralab_message", "teardown failed")
                return
    message = props.get("infralab_message", "")
    if report.skipped and isinstance(report.longrepr, tuple):
        message = str(report.longrepr[2])
    name = report.nodeid.split("::", 1)[-1]
    state.results.append(TestResult(
        nodeid=report.nodeid, name=name, exercise=props["infralab_exercise"],
        visibility=props["infralab_visibility"], outcome=outcome, weight=props.get("infralab_weight", 1.0),
        duration_s=round(report.duration, 4), message=message, diagnosis=props.get("infralab_diagnosis"),
        seed=props.get("infralab_seed"), target=props.get("infralab_target"), base_seed=props.get("infralab_base_seed"),
        parts=props.get("infralab_parts"),
    ))


_CONFIG: list[pytest.Config] = []


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _CONFIG[:] = [session.config]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = _state(config)
    if state is None or hasattr(config, "workerinput"):
        return
    for target in state.targets.values():
        target.close()
    path = config.getoption("infralab_record")
    if not path:
        return
    exercise_ids = sorted({r.exercise for r in state.results}) or None
    mode, trusted = config.getoption("infralab_mode"), True
    protections = None
    if not config.getoption("infralab_isolated") and state.default_target.kind == "submission":
        mode, trusted = "check", False  # the student's own loop: its code could change the tests
        protections = {"mode": "in-process", "isolated": False,
                       "note": tr("cage.in_process_note")}
    if config.getoption("infralab_isolated"):
        from infralab.judge.isolated import judge_flags, protections_report
        protections = protections_report(state.targets.values())
        state.flags.extend(judge_flags(state.targets.values()))
    record = build_record(
        state.course, state.default_target.name if not config.getoption("infralab_soundness") else "soundness",
        mode, state.results, started=state.started,
        duration_s=time.perf_counter() - state.t0, exercise_ids=exercise_ids,
        flags=state.flags, protections=protections, perf=state.perf, whose=state.whose,
    )
    record["trusted"] = trusted
    write_record(record, path)
