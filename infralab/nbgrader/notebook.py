"""The kernel side of an exported notebook: ``%%infralab_test`` cells run pytest test functions.

An exported notebook starts with ``setup("part01_transformer.rmsnorm")``. Its test cells read::

    %%infralab_test hidden
    ### BEGIN HIDDEN TESTS
    @pytest.mark.weight(2)
    def test_rms_norm_eps_is_inside_the_square_root(impl, gen):
        ...
    ### END HIDDEN TESTS

The cell body runs in the namespace of its test file (one per visibility, so the tests' own
helpers never replace the student's functions), then every test function the cell defined is
called with the fixtures it names: ``impl`` (the notebook's code, as a module), ``seed``,
``gen``, ``tmp_path``, ``golden`` (recorded cases, from ``golden/`` beside the notebook), and ``pytest.mark.parametrize`` cases. Hypothesis tests run as plain calls.

nbgrader gives a test cell zero points when it writes to stderr. Warnings (torch, triton) are
recorded and printed on stdout, and stderr (Python's and file descriptor 2) goes to stdout
while a test runs, so only a failing test costs points. A failure is raised as
:class:`TestFailed`, shown without the runner's frames.
"""
from __future__ import annotations

import contextlib
import inspect
import itertools
import linecache
import os
import sys
import tempfile
import time
import traceback
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infralab.errors import TargetError
from infralab.i18n import tr
from infralab.targets import Implementation
from infralab.testing import seed_everything

MAGIC = "infralab_test"
_cell_counter = itertools.count(1)


class TestFailed(AssertionError):
    """A test of this notebook failed; IPython shows the message, not the runner's traceback."""

    def _render_traceback_(self) -> list[str]:  # IPython's hook
        return [f"\033[31mFAILED\033[0m {line}" if i == 0 else line for i, line in enumerate(str(self).splitlines())]


class _Session:
    def __init__(self, module: str, banned: tuple[str, ...]):
        self.module = module
        self.banned = banned
        self.namespaces: dict[str, dict[str, Any]] = {}

    def namespace(self, visibility: str) -> dict[str, Any]:
        if visibility not in self.namespaces:
            self.namespaces[visibility] = {"__name__": f"infralab_notebook_{visibility}_tests",
                                           "__builtins__": __builtins__}
        return self.namespaces[visibility]


_SESSION: list[_Session] = []


def _user_namespace() -> dict[str, Any]:
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:
        shell = None
    return shell.user_ns if shell is not None else vars(sys.modules["__main__"])


def _configure_hypothesis() -> None:
    try:
        from hypothesis import HealthCheck, settings
    except ImportError:
        return
    settings.register_profile(
        "infralab-notebook", deadline=None, database=None, max_examples=25,
        derandomize=os.environ.get("INFRALAB_SEED") is not None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                               HealthCheck.differing_executors])
    settings.load_profile("infralab-notebook")


def _configure_triton() -> None:
    """Kernels run under Triton's interpreter without a GPU (as the pytest plugin sets it)."""
    if "TRITON_INTERPRET" not in os.environ:
        import torch
        if not torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"


def setup(module: str, banned: tuple[str, ...] | list[str] = ()) -> None:
    """Called by the notebook's first code cell: which exercise this notebook implements."""
    _SESSION[:] = [_Session(module, tuple(banned))]
    _configure_triton()
    _configure_hypothesis()
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None:
        register_magic(shell)


def register_magic(shell) -> None:
    shell.register_magic_function(infralab_test, magic_kind="cell", magic_name=MAGIC)


def _session() -> _Session:
    if not _SESSION:
        raise RuntimeError(tr("notebook.no_setup"))
    return _SESSION[0]


def notebook_golden(session: _Session, test: str, case: dict[str, Any]):
    """The ``golden`` fixture in a notebook: the recorded case, replayed from ``golden/`` beside the
    notebook (the export copies it there), never computed (a notebook has no reference code)."""
    from infralab.golden import GoldenCase, Store
    name = session.module.rsplit(".", 1)[-1]
    folder = Path.cwd() / "golden"
    key = test + (f"[{','.join(f'{k}={v}' for k, v in sorted(case.items()))}]" if case else "")
    return GoldenCase(Store(folder / f"{name}.json", folder / f"{name}.safetensors"), session.module, key, "replay")


def notebook_impl(session: _Session) -> Callable[[str], Implementation]:
    """The ``impl`` fixture: the answer cell's definitions, seen as the exercise's module."""
    def impl(module_name: str) -> Implementation:
        if module_name != session.module:
            raise TargetError(tr("notebook.other_module", module=session.module, asked=module_name))
        module = types.ModuleType(module_name)
        module.__dict__.update({k: v for k, v in _user_namespace().items() if not k.startswith("_")})
        return Implementation(module_name, module, tr("notebook.origin"), session.banned)
    return impl


def _fresh_seed() -> int:
    base = os.environ.get("INFRALAB_SEED")
    return int(base) if base is not None else int.from_bytes(os.urandom(4), "little")


def _cases(func: Callable) -> list[dict[str, Any]]:
    """The parametrize cases of a test function (one empty case when it has none)."""
    cases: list[dict[str, Any]] = [{}]
    for mark in getattr(func, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names = [n.strip() for n in mark.args[0].split(",")] if isinstance(mark.args[0], str) else list(mark.args[0])
        values = []
        for v in mark.args[1]:
            v = v.values if hasattr(v, "values") and hasattr(v, "marks") else v  # pytest.param
            values.append(dict(zip(names, v if len(names) > 1 else (v,))))
        cases = [{**c, **v} for c in cases for v in values]
    return cases


def _skip_reason(func: Callable) -> str | None:
    for mark in getattr(func, "pytestmark", []):
        if mark.name == "skip":
            return mark.kwargs.get("reason", "skipped")
        if mark.name == "skipif" and mark.args and mark.args[0]:
            return mark.kwargs.get("reason", "skipped")
        if mark.name == "gpu":
            import torch
            if not torch.cuda.is_available():
                return tr("loop.skip_no_gpu")
    return None


def _fixtures(func: Callable, session: _Session, case: dict[str, Any], stack: contextlib.ExitStack) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    seed: int | None = None
    for name in inspect.signature(func).parameters:
        if name in case:
            kwargs[name] = case[name]
        elif name == "impl":
            kwargs[name] = notebook_impl(session)
        elif name in ("seed", "gen"):
            if seed is None:
                seed = _fresh_seed()
                seed_everything(seed)
            if name == "seed":
                kwargs[name] = seed
            else:
                import torch
                kwargs[name] = torch.Generator().manual_seed(seed)
        elif name == "tmp_path":
            kwargs[name] = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="infralab-nb-")))
        elif name == "golden":
            kwargs[name] = notebook_golden(session, func.__name__, case)
        else:
            raise RuntimeError(tr("notebook.unknown_fixture", test=func.__name__, name=name))
    if seed is None:
        seed_everything(_fresh_seed())
    return kwargs


@contextlib.contextmanager
def quiet_stderr() -> Iterator[list[warnings.WarningMessage]]:
    """Record warnings; send stderr (Python-level and fd 2) to stdout for the duration."""
    saved_fd = None
    with contextlib.ExitStack() as stack:
        caught = stack.enter_context(warnings.catch_warnings(record=True))
        warnings.simplefilter("always")
        stack.enter_context(contextlib.redirect_stderr(sys.stdout))
        try:
            sys.stdout.flush()
            sys.__stderr__.flush()
            saved_fd = os.dup(2)
            os.dup2(1, 2)
        except (OSError, AttributeError, ValueError):
            saved_fd = None
        try:
            yield caught
        finally:
            if saved_fd is not None:
                with contextlib.suppress(OSError, ValueError):
                    sys.__stderr__.flush()
                os.dup2(saved_fd, 2)
                os.close(saved_fd)


def _failure_message(name: str, exc: BaseException) -> str:
    if isinstance(exc, NotImplementedError):
        return f"{name}: " + tr("loop.not_implemented", detail=exc or tr("loop.this_function"),
                                where=tr("notebook.origin"))
    if isinstance(exc, (AssertionError, TargetError)):
        return f"{name}: {exc}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "infralab" not in f.filename][-3:]
    where = "".join(traceback.format_list(frames)).rstrip()
    return f"{name}: {type(exc).__name__}: {exc}" + (f"\n{where}" if where else "")


@dataclass
class CellOutcome:
    """What one test function did in a cell: its summary line, and its share of the cell's points
    when only some of its cases passed (None: all passed, or skipped)."""

    summary: str
    partial: float | None = None


def run_test(func: Callable, session: _Session | None = None, points: float | None = None) -> CellOutcome:
    """Run one test function with its fixtures and every case.

    All cases pass: a PASSED line. None passes: raises TestFailed. Some pass and the cell is worth
    ``points``: the passed cases' share of them, split as the record splits a parametrized test
    (:func:`infralab.record.score_tests`), returned for nbgrader's partial credit.
    """
    session = session or _session()
    name = func.__name__
    reason = _skip_reason(func)
    if reason:
        return CellOutcome(f"SKIPPED {name}: {reason}")
    t0 = time.perf_counter()
    passed, failures = [], []
    with quiet_stderr() as caught:
        for case in _cases(func):
            label = name + (f"[{', '.join(f'{k}={v!r}' for k, v in case.items())}]" if case else "")
            with contextlib.ExitStack() as stack:
                try:
                    func(**_fixtures(func, session, case, stack))
                    passed.append(True)
                except Exception as exc:  # a failing test; KeyboardInterrupt still stops the cell
                    passed.append(False)
                    failures.append(_failure_message(label, exc))
    if failures and (not any(passed) or points is None):
        raise TestFailed("\n".join(failures))
    partial = None
    line = f"PASSED {name} ({time.perf_counter() - t0:.2f} s)"
    if failures:
        from infralab.record import split_points, total_points
        shares = split_points(points, [1.0] * len(passed))
        partial = total_points([s for s, ok in zip(shares, passed) if ok])
        line = (tr("routes.partial", name=name, passed=sum(passed), cases=len(passed), won=f"{partial:g}",
                   points=f"{points:g}") + "\n" + "\n".join("FAILED " + f for f in failures))
    kinds = sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0][:120]}" for w in caught})
    if kinds:
        line += "\n  " + tr("notebook.warnings", count=len(caught), kinds="; ".join(kinds[:3]))
    return CellOutcome(line, partial)


def run_cell(visibility: str, body: str, points: float | None = None) -> list[CellOutcome]:
    """Run a test cell's body in its test file's namespace; then run the tests it defined."""
    session = _session()
    ns = session.namespace(visibility)
    filename = f"<infralab {visibility} tests, cell {next(_cell_counter)}>"
    linecache.cache[filename] = (len(body), None, body.splitlines(True), filename)
    before = {k: v for k, v in ns.items() if k.startswith("test")}
    with quiet_stderr():
        exec(compile(body, filename, "exec"), ns)  # noqa: S102 - the course's own test source
    tests = [v for k, v in ns.items() if k.startswith("test") and callable(v) and before.get(k) is not v]
    return [run_test(t, session, points) for t in tests]


def infralab_test(line: str, cell: str) -> float | None:
    """``%%infralab_test visible|hidden [POINTS]``: the cell's tests, run against this notebook's code.

    The value it returns (shown as the cell's result) is nbgrader's partial credit: the points of
    the cases that passed, when only some did.
    """
    words = line.split()
    visibility = (words or ["visible"])[0]
    points = float(words[1]) if len(words) > 1 else None
    if not cell.strip():
        print(tr("notebook.hidden_empty"))
        return None
    partial = None
    for outcome in run_cell(visibility, cell, points):
        print(outcome.summary)
        if outcome.partial is not None:
            partial = outcome.partial
    return partial
