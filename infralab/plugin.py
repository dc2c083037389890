"""The pytest plugin (registered through the ``pytest11`` entry point).

Inert outside a course (no course.yml above the rootdir or the current folder). Inside one it:

- adds ``--target exercises|solutions|PATH|mutant:...`` and the ``impl`` fixture through which
  every test reaches the implementation under test;
- marks each test with its part and exercise (``-m part01_transformer``, ``-m rope``) and its
  visibility, and gives it a fresh seed (``seed``/``gen`` fixtures; ``--seed N`` to repeat a run);
- writes the result record of the run as JSON with ``--record PATH``;
- in ``--soundness`` mode runs each exercise test against the solution, the stub and every
  known-wrong implementation of that exercise, recording the target of each outcome.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from infralab.course import Course, Exercise, find_course_root, load_course
from infralab.errors import InfralabError, TargetError
from infralab.record import TestResult, build_record, write_record
from infralab.targets import InProcessTarget, TargetSpec, parse_target

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

    def target(self, spec: TargetSpec):
        if spec.name not in self.targets:
            if self.config.getoption("infralab_isolated"):
                from infralab.judge.isolated import IsolatedTarget  # the grading mode
                self.targets[spec.name] = IsolatedTarget(spec, self.config)
            else:
                self.targets[spec.name] = InProcessTarget(spec, self.banned, self.triton)
        return self.targets[spec.name]

    def exercise_of(self, path: Path) -> tuple[Exercise, str] | None:
        return self.course.exercise_for_test_file(path)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("infralab")
    group.addoption("--target", dest="infralab_target", default="exercises",
                    help="what to test: exercises (default), solutions, a submission folder, "
                         "or mutant:<part>.<exercise>:<name>")
    group.addoption("--course", dest="infralab_course", default=None,
                    help="the course root (folder with course.yml); default: found from rootdir or cwd")
    group.addoption("--record", dest="infralab_record", default=None,
                    help="write the run's result record (JSON) to this path")
    group.addoption("--seed", dest="infralab_seed", type=int, default=None,
                    help="base seed; each test's seed derives from it (default: fresh seeds)")
    group.addoption("--soundness", dest="infralab_soundness", action="store_true",
                    help="run each exercise's tests on the solution, the stub and every mutant")
    group.addoption("--isolated", dest="infralab_isolated", action="store_true",
                    help="run the implementation under test in a sandboxed executor process")
    group.addoption("--record-mode", dest="infralab_mode", default="check",
                    help="the mode written into the record (check, grade, validate)")


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
    config.stash[_STATE] = state
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))  # mutants import the reference as `solutions.<part>.<module>`
    for line in ("gpu: needs a CUDA GPU (skipped elsewhere)",
                 "weight(n): this test's share of its exercise's points (default 1)",
                 "slow: takes more than a few seconds on a CPU"):
        config.addinivalue_line("markers", line)
    for part in course.parts:
        config.addinivalue_line("markers", f"{part.id}: tests of {part.title.en}")
        for ex in part.exercises:
            config.addinivalue_line("markers", f"{ex.name}: tests of {ex.id}")
    _configure_threads()
    _configure_triton(config)
    _configure_hypothesis(config)
    if config.getoption("infralab_isolated") and not config.getoption("infralab_soundness") \
            and not hasattr(config, "workerinput"):
        state.target(state.default_target).prestart()  # the executor starts while pytest collects


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
    The isolated judge always uses the interpreter: tensors cross the cage on the CPU."""
    if config.getoption("infralab_isolated"):
        os.environ["TRITON_INTERPRET"] = "1"
    elif "TRITON_INTERPRET" not in os.environ:
        import torch
        if not torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"
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
        return (f"TRITON_INTERPRET=1 with triton {triton} and numpy {numpy}: the interpreter fails inside kernel "
                f"loops ('only 0-dimensional arrays can be converted to Python scalars'); install numpy<2.3 "
                f"(pip install 'numpy<2.3', as the kit's triton extra pins)")
    return None


def _configure_hypothesis(config: pytest.Config) -> None:
    try:
        from hypothesis import HealthCheck, Phase, settings
    except ImportError:
        return
    common = dict(deadline=None, database=None, max_examples=25,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                         HealthCheck.differing_executors])
    if config.getoption("infralab_soundness") or config.getoption("infralab_isolated"):
        # Many targets, each known to fail somewhere: find a failure, skip the shrinking.
        # Isolated grading too: every shrinking step would be a remote call (and a hung one a timeout).
        settings.register_profile("infralab", derandomize=True,
                                  phases=[Phase.explicit, Phase.reuse, Phase.generate], **common)
    elif config.getoption("infralab_seed") is not None:
        settings.register_profile("infralab", derandomize=True, **common)  # grading: repeatable
    else:
        settings.register_profile("infralab", **common)
    settings.load_profile("infralab")


def _state(config: pytest.Config) -> _State | None:
    return config.stash.get(_STATE, None)


def _soundness_targets(state: _State, ex: Exercise, visibility: str) -> list[str]:
    """Every test, visible and hidden, runs on every mutant: the record tells which tests catch each."""
    mutants = sorted((state.course.root / ex.mutants_dir).glob("*.py"))
    return ["solutions", "exercises"] + [f"mutant:{ex.id}:{m.stem}" for m in mutants if m.name != "__init__.py"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    state = _state(metafunc.config)
    if state is None or "_infralab_target" not in metafunc.fixturenames:
        return
    if not metafunc.config.getoption("infralab_soundness"):
        return
    found = state.exercise_of(metafunc.definition.path)
    if found is None:
        return
    names = _soundness_targets(state, *found)
    metafunc.parametrize("_infralab_target", names, ids=names)


ISOLATED_GPU_SKIP = ("GPU tests and performance challenges do not run in the isolated judge (tensors cross the "
                     "cage on the CPU, where Triton kernels are checked under the interpreter); on a trusted GPU "
                     "machine run them in-process: pytest --target SUBMISSION -m gpu, or infralab bench")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    state = _state(config)
    if state is None:
        return
    isolated = config.getoption("infralab_isolated")
    for item in items:
        gpu = item.get_closest_marker("gpu") is not None
        if gpu and isolated:  # every gpu test, the perf challenges too: none may load student code here
            item.add_marker(pytest.mark.skip(reason=ISOLATED_GPU_SKIP))
        elif gpu:
            import torch
            if not torch.cuda.is_available():
                item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU; this machine has none"))
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
        if not gpu and ex.triton and os.environ.get("TRITON_INTERPRET") != "1":
            # CPU-tensor tests of a Triton exercise need the interpreter; with a GPU the kernels compile.
            item.add_marker(pytest.mark.skip(reason="a CPU test of a Triton kernel: runs under TRITON_INTERPRET=1 "
                                                    "(set when there is no GPU); on a GPU the gpu tests run instead"))


@pytest.fixture
def _infralab_target(request: pytest.FixtureRequest) -> str:
    """The target's name; parametrized over several targets in soundness mode."""
    state = _state(request.config)
    return state.default_target.name if state else "exercises"


@pytest.fixture
def impl(request: pytest.FixtureRequest, _infralab_target: str):
    """``impl("part01_transformer.rope")``: that module of the implementation under test."""
    state = _state(request.config)
    if state is None:
        pytest.skip("not inside an infralab course (no course.yml found)")
    spec = state.default_target if _infralab_target == state.default_target.name else \
        parse_target(_infralab_target, state.course.root)
    target = state.target(spec)
    request.node.user_properties.append(("infralab_target", spec.name))
    return target.load


_SEED_ENV = "INFRALAB_SESSION_SEED"  # shares a fresh base seed with xdist workers


def session_seed(config: pytest.Config) -> int:
    """The run's base seed: ``--seed``, else one fresh draw shared by the run's processes."""
    given = config.getoption("infralab_seed")
    if given is not None:
        return given
    if _SEED_ENV not in os.environ:
        os.environ[_SEED_ENV] = str(int.from_bytes(os.urandom(3), "little"))
    return int(os.environ[_SEED_ENV])


def pytest_report_header(config: pytest.Config) -> str | None:
    state = _state(config)
    if state is None:
        return None
    return f"infralab: course {state.course.id}, target {state.default_target.name}, seed {session_seed(config)}"


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """This test's seed, derived from the run's base seed and the test id; seeds torch, numpy, random.

    The base seed is ``--seed N`` when given (grading: repeatable), else drawn fresh for the run
    and shown in the header and in failures, so ``--seed N`` repeats a failing run.
    """
    base = session_seed(request.config)
    digest = hashlib.sha256(f"{base}:{request.node.nodeid}".encode()).digest()
    value = int.from_bytes(digest[:4], "little")
    request.node.user_properties.append(("infralab_seed", value))
    from infralab.testing import seed_everything
    seed_everything(value)
    return value


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


def _short_message(excinfo: pytest.ExceptionInfo, root: Path | None = None) -> str:
    exc = excinfo.value
    if isinstance(exc, NotImplementedError):
        frame = excinfo.traceback[-1]
        # isolated mode: the student's line as the executor saw it
        where = getattr(exc, "remote_where", None) or f"{_relative(frame.path, root)}:{frame.lineno + 1}"
        detail = str(exc) or "this function"
        return f"NotImplementedError: {detail} is not implemented yet ({where})"
    if isinstance(exc, TargetError):
        return f"TargetError: {exc}"
    text = f"{type(exc).__name__}: {exc}".strip()  # short type name: Mismatch, not infralab.testing.Mismatch
    return text if len(text) <= 2000 else text[:2000] + " ..."


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    rep = outcome.get_result()
    if _state(item.config) is None or call.excinfo is None or rep.skipped:
        return
    message = _short_message(call.excinfo, _state(item.config).course.root)
    rep.user_properties.append(("infralab_message", message))
    if "seed" in getattr(item, "fixturenames", ()) and not call.excinfo.errisinstance((NotImplementedError, TargetError)):
        rep.sections.append(("infralab", f"repeat this run's inputs with --seed {session_seed(item.config)}"))
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
        seed=props.get("infralab_seed"), target=props.get("infralab_target"),
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
    protections = None
    if config.getoption("infralab_isolated"):
        from infralab.judge.isolated import judge_flags, protections_report
        protections = protections_report(state.targets.values())
        state.flags.extend(judge_flags(state.targets.values()))
    record = build_record(
        state.course, state.default_target.name if not config.getoption("infralab_soundness") else "soundness",
        config.getoption("infralab_mode"), state.results, started=state.started,
        duration_s=time.perf_counter() - state.t0, exercise_ids=exercise_ids,
        flags=state.flags, protections=protections, perf=state.perf,
    )
    write_record(record, path)
