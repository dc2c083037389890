"""The candidate of a performance challenge: one loaded module, checked in the gate and when timed.

:func:`checked_candidate` takes the implementation the correctness gate calls (every guard of
grading) and returns the same module's functions for the timed calls, with the checks that cost
the device nothing: banned torch routines raise, a Triton exercise's call must launch a Triton
kernel, every Triton kernel it launches must be one of the submission's own ``@triton.jit``
functions (an Inductor kernel of ``torch.compile`` is not), and every compiled launch and every
aten op must go to the stream the call is timed on (the stream current when it began): work
launched on a side stream runs beside the timed stream, and while an armed batch is enqueued (the
judge's clock not yet running) it would run untimed. A launch's stream is read at Triton's launcher
(:func:`infralab.triton_watch.watching`), an op's at the aten dispatcher (the current stream when
it is issued, :func:`infralab.guards.op_guard`); a launch below the launcher (its private handle,
the driver) is left to the profiled batches (:mod:`infralab.perf.kernel_audit`) and, once it is on,
the filling gate (:mod:`infralab.perf.device_gate`). There is no second import: a module
cannot behave in the gate and cheat in the timed calls by counting its imports.

Also here, all pure Python over source files and function identities:

- :func:`own_kernel_names`: the ``@triton.jit`` functions the submission's files define;
- :func:`torch_compile_use`: ``torch.compile`` / dynamo / Inductor in a Triton exercise's source;
- :func:`timing_functions` / :func:`tampered`: the functions the timer relies on
  (``torch.cuda.Event.elapsed_time``, ``torch.cuda.synchronize``, ``time.perf_counter``, ...),
  snapshotted when this module is imported (before any student code) and compared later.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infralab.i18n import tr


class ForeignKernel(RuntimeError):
    """A timed call launched a Triton kernel that the submission's files do not define."""


class SideStreamLaunch(RuntimeError):
    """A timed call launched a Triton kernel on a CUDA stream other than the one it is timed on."""


class NoTimedKernel(RuntimeError):
    """A timed call of a Triton exercise launched no Triton kernel."""


# --- the source: own kernels, torch.compile -------------------------------------------------------

def _decorator_names(node: ast.AST) -> Iterable[str]:
    for dec in getattr(node, "decorator_list", []):
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Attribute):
            yield target.attr
        elif isinstance(target, ast.Name):
            yield target.id


def own_kernel_names(sources: Iterable[str]) -> frozenset[str]:
    """Names of the functions decorated ``@triton.jit`` (or ``@jit``) in these source texts."""
    names = set()
    for text in sources:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "jit" in _decorator_names(node):
                names.add(node.name)
    return frozenset(names)


_COMPILE_MODULES = ("torch._dynamo", "torch._inductor", "torch.compiler")


def torch_compile_use(text: str) -> str | None:
    """What in this source reaches torch.compile (``torch.compile``, ``from torch import compile``,
    dynamo or Inductor imports), as ``line N: ...``; None when nothing does."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    torch_names = {"torch"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "torch":
                    torch_names.add(a.asname or "torch")
                if a.name.startswith(_COMPILE_MODULES):
                    return f"line {node.lineno}: import {a.name}"
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith(_COMPILE_MODULES) or (
                    node.module == "torch" and any(a.name in ("compile", "_dynamo", "_inductor", "compiler")
                                                   for a in node.names)):
                return f"line {node.lineno}: from {node.module} import {', '.join(a.name for a in node.names)}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("compile", "_dynamo", "_inductor", "compiler") \
                and isinstance(node.value, ast.Name) and node.value.id in torch_names:
            return f"line {node.lineno}: {node.value.id}.{node.attr}"
    return None


def _reachable(module: Any) -> Iterator[tuple[str, Any]]:
    """(name, object) of the module's globals, one level into containers and function closures."""
    for name, value in vars(module).items():
        yield name, value
        inner = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple, set)) else ()
        for i, v in enumerate(inner):
            yield f"{name}[{i}]", v
        for i, cell in enumerate(getattr(value, "__closure__", None) or ()):
            with contextlib.suppress(ValueError):
                yield f"{name}.<closure {i}>", cell.cell_contents


def compiled_object(module: Any) -> str | None:
    """The name of a torch.compile'd function or module the loaded module holds, or None: what
    torch.compile returns carries ``_torchdynamo_orig_callable`` (functions) or is an
    ``OptimizedModule``, however the call to torch.compile was spelled."""
    for name, value in _reachable(module):
        if getattr(value, "_torchdynamo_orig_callable", None) is not None or \
                type(value).__name__ == "OptimizedModule":
            return name
    return None


def module_files(module: Any) -> list[Path]:
    """The files of ``module`` and of every module of the same target package loaded so far."""
    package = module.__name__.split(".", 1)[0]
    files = []
    for name, mod in list(sys.modules.items()):
        if (name == package or name.startswith(package + ".")) and getattr(mod, "__file__", None):
            files.append(Path(mod.__file__))
    own = getattr(module, "__file__", None)
    if own and Path(own) not in files:
        files.append(Path(own))
    return sorted(set(files))


def _autotuner(obj: Any) -> Any:
    """The Triton autotuner behind a module global (itself, or under a ``triton.heuristics``), or None."""
    for _ in range(4):
        try:
            if isinstance(getattr(obj, "cache", None), dict) and hasattr(obj, "configs") and hasattr(obj, "keys"):
                return obj
            obj = getattr(obj, "fn", None)
        except Exception:  # a submission's object whose attribute access raises
            return None
        if obj is None:
            return None
    return None


def autotuned_configs(files: Iterable[str]) -> dict[str, dict[str, str]]:
    """For each Triton autotuner defined in ``files`` (the submission's modules, loaded), the config it
    chose for each tuning key so far (key values joined by ", "): the launch parameters behind a timed
    figure, so that a figure unlike a tuner's can be explained. Empty when nothing is autotuned."""
    wanted = {str(Path(f)) for f in files}
    found: dict[str, dict[str, str]] = {}
    for mod in list(sys.modules.values()):
        if str(getattr(mod, "__file__", None)) not in wanted:
            continue
        for name, obj in list(vars(mod).items()):
            tuner = _autotuner(obj)
            if tuner is not None and tuner.cache:
                found[name] = {", ".join(map(str, key)): str(config) for key, config in tuner.cache.items()}
    return found


def submission_threads(files: Iterable[str]) -> list[str]:
    """Threads other than the caller's that run the submission's code now: a frame of one of ``files``
    (the submission's modules) on the thread's stack, or a ``threading.Thread`` whose target was defined
    in them. A submission's call returns its outputs; a thread it leaves running between calls can keep
    the device busy while the judge times the baseline, lifting the candidate's ratio. Each named as
    ``name (function, file:line)``. A thread that runs only library code (a pool idle in the standard
    library, or a C function such as a loop of ``itertools`` over torch calls) is not found here: the
    profiled baseline batch (:func:`infralab.perf.kernel_audit.audit_baseline`) is the check of what
    reaches the device."""
    wanted = {str(Path(f).resolve()) for f in files}
    if not wanted:
        return []

    def ours(code: Any) -> bool:
        return code is not None and str(Path(code.co_filename).resolve()) in wanted

    me = threading.get_ident()
    threads = {t.ident: t for t in threading.enumerate()}
    found = []
    for ident, frame in sys._current_frames().items():
        if ident == me:
            continue
        hit = frame
        while hit is not None and not ours(hit.f_code):
            hit = hit.f_back
        target = getattr(threads.get(ident), "_target", None)
        target = getattr(target, "func", target)  # functools.partial
        code = getattr(getattr(target, "__func__", target), "__code__", None)
        if hit is None and not ours(code):
            continue
        name = threads[ident].name if ident in threads else f"thread {ident}"
        where = (f"{hit.f_code.co_name}, {Path(hit.f_code.co_filename).name}:{hit.f_lineno}" if hit is not None
                 else f"{code.co_name}, {Path(code.co_filename).name}:{code.co_firstlineno}")
        found.append(f"{name} ({where})")
    return found


# --- the timer's functions ------------------------------------------------------------------------

def _timing_refs() -> dict[str, Any]:
    import torch
    refs = {"time.perf_counter": time.perf_counter, "time.monotonic": time.monotonic,
            "torch.cuda.synchronize": torch.cuda.synchronize, "torch.cuda._sleep": torch.cuda._sleep,
            "torch.cuda.Event": torch.cuda.Event, "torch.cuda.current_stream": torch.cuda.current_stream}
    for attr in ("elapsed_time", "record", "synchronize", "query", "wait"):
        refs[f"torch.cuda.Event.{attr}"] = getattr(torch.cuda.Event, attr, None)
    refs["torch.cuda.graph"] = getattr(torch.cuda, "graph", None)  # short calls' batches are graph replays
    for attr in ("capture_begin", "capture_end", "replay"):
        refs[f"torch.cuda.CUDAGraph.{attr}"] = getattr(getattr(torch.cuda, "CUDAGraph", None), attr, None)
    try:
        from torch.profiler import profile
        refs["torch.profiler.profile"] = profile
        refs["torch.profiler.profile.export_chrome_trace"] = profile.export_chrome_trace
    except ImportError:
        pass
    return refs


@functools.lru_cache(maxsize=1)
def timing_functions() -> dict[str, Any]:
    """The timer's functions as they were when first asked (this module's import, before any
    student code in ``infralab bench`` and the perf tests)."""
    return _timing_refs()


def tampered() -> list[str]:
    """Names of the timer's functions that are no longer the ones snapshotted."""
    now = _timing_refs()
    return [name for name, ref in timing_functions().items() if now.get(name) is not ref]


with contextlib.suppress(ImportError):  # snapshot at import; the kit's CPU machines have torch too
    timing_functions()


# --- the candidate ------------------------------------------------------------------------------

@dataclass
class CheckedCandidate:
    """One loaded module: ``gate`` (every guard of grading) and ``timed`` (its checked calls)."""

    gate: Any
    timed: Any
    triton: bool
    own_kernels: frozenset[str] = frozenset()
    problem: str | None = None  # found before any call (torch.compile in a Triton exercise)
    files: list[str] = field(default_factory=list)


class _TimedView:
    """Attribute access returns the module's functions wrapped in the timed checks."""

    def __init__(self, module: Any, origin: str, banned: tuple[str, ...], triton: bool, own: frozenset[str]):
        self._module, self._origin, self._banned, self._triton, self._own = module, origin, banned, triton, own

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        fn = getattr(self._module, name)
        if not callable(fn) or isinstance(fn, type):
            return fn
        return functools.wraps(fn)(functools.partial(self._call, fn, f"{self._origin}: {name}"))

    def _call(self, fn, where: str, *args, **kwargs):
        from infralab.guards import op_guard
        from infralab.triton_watch import watching
        timed_stream = _current_stream()
        if not self._triton:
            with op_guard(where, self._banned, stream=timed_stream):
                return fn(*args, **kwargs)
        with watching(poison_allocations=False, record_writes=False) as watch, \
                op_guard(where, self._banned, triton=True, stream=timed_stream):
            result = fn(*args, **kwargs)
        side = [(name, stream) for name, stream in watch.streams if timed_stream is not None and stream != timed_stream]
        if side:
            raise SideStreamLaunch(tr("perf.timed_side_stream", where=where, kernel=side[0][0], stream=side[0][1],
                                      timed=timed_stream))
        if not watch.launches:
            raise NoTimedKernel(tr("perf.timed_no_launch", where=where))
        foreign = sorted({launch.name for launch in watch.launches if launch.name not in self._own})
        if foreign:
            raise ForeignKernel(tr("perf.timed_foreign_launch", where=where, kernels=", ".join(foreign),
                                   own=", ".join(sorted(self._own)) or "-"))
        return result


def _current_stream() -> int | None:
    """The raw handle of the current CUDA stream (what Triton launches on by default), None without CUDA."""
    import torch

    from infralab.guards import current_stream_handle
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    return current_stream_handle()


def checked_candidate(impl: Any, *, triton: bool, banned: Iterable[str] = ()) -> CheckedCandidate:
    """The gate's implementation ``impl`` (an :class:`infralab.targets.Implementation`) and a timed
    view of the same module object; for a Triton exercise, its own kernels and torch.compile use."""
    module = getattr(impl, "_module", impl)
    origin = getattr(impl, "_origin", getattr(module, "__file__", "?"))
    banned = tuple(getattr(impl, "_banned", ())) or tuple(banned)
    files = module_files(module) if hasattr(module, "__name__") else []
    sources = {}
    for f in files:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            sources[f] = f.read_text(encoding="utf-8")
    own = own_kernel_names(sources.values()) if triton else frozenset()
    problem = None
    if triton:
        for f, text in sources.items():
            use = torch_compile_use(text)
            if use:
                problem = tr("perf.torch_compile", file=f, where=use)
                break
        compiled = None if problem or not hasattr(module, "__dict__") else compiled_object(module)
        if compiled:
            problem = tr("perf.torch_compile", file=origin, where=tr("perf.compiled_object", name=compiled))
    return CheckedCandidate(gate=impl, timed=_TimedView(module, origin, banned, triton, own), triton=triton,
                            own_kernels=own, problem=problem, files=[str(f) for f in files])


def unchecked(impl: Any) -> Any:
    """The bare module behind ``impl``: for measuring what the checks cost, never for a verdict."""
    return getattr(impl, "_module", impl)
