"""Watching Triton while an implementation runs: which kernels it launched, and (under the CPU
interpreter) that every load and store stays inside the tensors given to the kernel.

Used by :mod:`infralab.guards` for exercises flagged ``triton: true`` in course.yml::

    with watching() as watch:
        result = fn(*args)
    watch.launches  # each launch: the kernel's name, the file it is defined in, the storages it wrote

What happens inside ``watching()``:

- every kernel launch is recorded, compiled (``JITFunction.run``) and interpreted
  (``InterpretedFunction.run``, ``TRITON_INTERPRET=1``) alike: the kernel's name, the file its
  ``@triton.jit`` function is defined in, and which of its tensor arguments' storages changed
  during the launch (compared byte for byte before and after, on whatever device they live):
  the evidence that a returned tensor is a kernel's output and not torch's (a launch that
  Triton's autotuner times while it benchmarks a config is recorded without the comparison,
  which would otherwise be what the autotuner times; the launch with the chosen config is then
  compared with the bytes as they were before the autotuner's first benchmark, since the benchmarks
  have already written the same output: see ``_watched_run``);
- under the interpreter, a masked load or store whose active lanes point outside every tensor
  argument of the kernel raises ``IndexError`` instead of reading or corrupting the host heap
  (a missing mask would otherwise crash the whole pytest process with "corrupted size"), and the
  masked-off lanes of a float load without ``other=`` read NaN, as undefined as they are on a GPU
  (:func:`_undefined_lanes`);
- every compiled launch through Triton's launcher (``CompiledKernel.run``: what ``kernel[grid](...)``
  and a compiled kernel's own ``[grid]`` both call) records the kernel and the CUDA stream it
  went to (``Watch.streams``): the timed calls of a performance challenge must stay on the stream
  they are timed on (:mod:`infralab.perf.checked`);
- memory that torch allocates without initialising (``torch.empty``) is filled with NaN (or
  the largest integer), so an output element the kernel never writes cannot pass by chance,
  and a kernel that writes its output always changes its bytes.
  Timing code turns this off with ``watching(poison_allocations=False)``.

This module imports nothing from infralab, so an isolated executor can ship it as is.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from infralab.i18n import tr

_LOCK = threading.Lock()
_ACTIVE: list["Watch"] = []  # watches currently open (nested calls share launches)
_BOUNDS: list[list[tuple[int, int]] | None] = []  # per running interpreted launch: (start, end) byte ranges
_INSTALLED = {"interpreter": False, "compiled": False, "launcher": False}
_AUTOTUNING = threading.local()  # depth of Triton autotuner benchmarks running in this thread
_TUNER_CALLS = threading.local()  # per Autotuner.run in progress in this thread: _TunerCall


@dataclass(frozen=True)
class Launch:
    """One kernel launch: the kernel, where it is defined, the storages it changed."""

    name: str
    file: str
    written: frozenset = frozenset()  # storage keys (see Watch.storage_key)


@dataclass(eq=False)  # identity: nested watches with equal contents are still different watches
class Watch:
    """What happened during one watched call."""

    launches: list[Launch] = field(default_factory=list)
    streams: list[tuple[str, int]] = field(default_factory=list)  # (kernel, raw CUDA stream) per compiled launch
    record_writes: bool = True  # compare argument bytes around each launch (costly: timing turns it off)

    @staticmethod
    def storage_key(t) -> tuple[str, int]:
        """A tensor's storage, as launches record it (views of one buffer share it)."""
        return (str(t.device), t.untyped_storage().data_ptr())


def quiet_modes():
    """Torch dispatch modes off for the watch's own bookkeeping (the guard sees only the student's ops)."""
    from torch.utils._python_dispatch import _disable_current_modes
    return _disable_current_modes()


def _tensors(values) -> list:
    found = []
    for v in values:
        if isinstance(v, (tuple, list)):
            found += _tensors(v)
        elif hasattr(v, "untyped_storage") and hasattr(v, "data_ptr"):
            found.append(v)
        elif hasattr(v, "base") and hasattr(v.base, "untyped_storage"):  # TensorDescriptor
            found.append(v.base)
    return found


def _storage_bytes(t):
    import torch

    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage()).clone()


def autotuning() -> bool:
    """True while Triton's autotuner benchmarks a config in this thread (``Autotuner._bench``)."""
    return getattr(_AUTOTUNING, "depth", 0) > 0


@dataclass
class _TunerCall:
    """One ``Autotuner.run`` in progress: its tensor arguments, and their bytes as they were before its
    first benchmark (None while it has not benchmarked: a cached config)."""

    tensors: dict
    at_call: dict | None = None


def _tuner_calls() -> list[_TunerCall]:
    stack = getattr(_TUNER_CALLS, "stack", None)
    if stack is None:
        stack = _TUNER_CALLS.stack = []
    return stack


def _snapshot(tensors: dict) -> dict:
    with quiet_modes():
        return {key: _storage_bytes(t) for key, t in tensors.items()}


def _argument_tensors(args, kwargs) -> dict:
    return {Watch.storage_key(t): t for t in _tensors(list(args) + list(kwargs.values()))}


def _watched_run(run):
    """A kernel's ``run`` that records the launch and the storages it wrote (warm-ups are not launches).

    A launch made while the autotuner benchmarks a config is recorded without comparing bytes: the
    comparison copies every argument's storage and synchronises inside the autotuner's timed region,
    so the configs' timings would be the comparison's, and the config cached for every later call
    (the timed ones too) a random one. The launch that follows the benchmarks, with the config chosen,
    is compared with the bytes as they were when the autotuner was called (``Autotuner.run``, see
    :func:`_install_autotune_hooks`): the benchmarks ran the same kernel on the same arguments, so by
    then the output already holds what the last launch writes again, and a comparison with the bytes
    just before it would find nothing written (what rejected every autotuned reference on the GPU).
    A call whose config was cached (no benchmark) is compared around its launch, as any other."""

    def watched_run(self, *args, grid, warmup, **kwargs):
        if warmup or not _ACTIVE:
            return run(self, *args, grid=grid, warmup=warmup, **kwargs)
        import torch

        compare = any(w.record_writes for w in _ACTIVE) and not autotuning()
        with quiet_modes():
            tensors = _argument_tensors(args, kwargs) if compare else {}
        tuner = _tuner_calls()  # the outermost autotuner's call, before any of its benchmarks, if it benchmarked
        at_call = next((t.at_call for t in tuner if t.at_call is not None), {})
        before = {**_snapshot({k: t for k, t in tensors.items() if k not in at_call}),
                  **{k: b for k, b in at_call.items() if k in tensors}}
        try:
            return run(self, *args, grid=grid, warmup=warmup, **kwargs)
        finally:
            with quiet_modes():
                written = frozenset(key for key, t in tensors.items() if not torch.equal(_storage_bytes(t), before[key]))
            fn = getattr(self, "fn", None)
            code = getattr(fn, "__code__", None)
            launch = Launch(str(getattr(fn, "__name__", "triton kernel")), str(getattr(code, "co_filename", "")), written)
            for watch in list(_ACTIVE):
                watch.launches.append(launch)

    watched_run.__wrapped__ = run
    return watched_run


def _install_compiled() -> None:
    if _INSTALLED["compiled"]:
        return
    try:
        from triton.runtime.jit import JITFunction
    except ImportError:
        return
    JITFunction.run = _watched_run(JITFunction.run)
    _install_autotune_hooks()
    _INSTALLED["compiled"] = True


def _install_autotune_hooks() -> None:
    """Mark the autotuner's benchmark of each config (``Autotuner._bench``), so that the launches it
    times are not slowed by the watch's byte comparison, and keep the argument bytes as they were
    before the first benchmark of an ``Autotuner.run`` (copied once, when that benchmark starts: a
    call with a cached config copies nothing here) for the comparison of the launch that follows the
    benchmarks (see :func:`_watched_run`)."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return
    bench = getattr(Autotuner, "_bench", None)
    if bench is not None and getattr(bench, "__wrapped__", None) is None:
        def marked_bench(self, *args, **kwargs):
            for call in _tuner_calls():  # before the first benchmark's launch, outside its timed region
                if call.at_call is None:
                    call.at_call = _snapshot(call.tensors)
            _AUTOTUNING.depth = getattr(_AUTOTUNING, "depth", 0) + 1
            try:
                return bench(self, *args, **kwargs)
            finally:
                _AUTOTUNING.depth -= 1

        marked_bench.__wrapped__ = bench
        Autotuner._bench = marked_bench
    tuner_run = getattr(Autotuner, "run", None)
    if tuner_run is not None and getattr(tuner_run, "__wrapped__", None) is None:
        def remembering_run(self, *args, **kwargs):
            if not _ACTIVE or autotuning() or not any(w.record_writes for w in _ACTIVE):
                return tuner_run(self, *args, **kwargs)
            stack = _tuner_calls()
            with quiet_modes():
                stack.append(_TunerCall(_argument_tensors(args, kwargs)))
            try:
                return tuner_run(self, *args, **kwargs)
            finally:
                stack.pop()

        remembering_run.__wrapped__ = tuner_run
        Autotuner.run = remembering_run


def _install_launcher() -> None:
    """Record (kernel, stream) of every launch through ``CompiledKernel.run`` while a watch is open.
    ``JITFunction.run`` (``kernel[grid](...)``) and ``CompiledKernel[grid]`` (a warmed-up kernel
    launched with an explicit ``stream=``) both launch through it; its fourth argument is the stream."""
    if _INSTALLED["launcher"]:
        return
    try:
        from triton.compiler.compiler import CompiledKernel
    except ImportError:
        return
    prop = CompiledKernel.__dict__.get("run")
    if not isinstance(prop, property):
        return
    launcher_of = prop.fget

    def run(self):
        launcher = launcher_of(self)
        if not _ACTIVE:
            return launcher

        def recorded(*args, **kwargs):
            if len(args) > 3 and isinstance(args[3], int):
                for watch in list(_ACTIVE):
                    watch.streams.append((str(getattr(self, "name", "triton kernel")), args[3]))
            return launcher(*args, **kwargs)
        return recorded

    run.__wrapped__ = launcher_of
    CompiledKernel.run = property(run)
    _INSTALLED["launcher"] = True


def _storage_ranges(values, ranges: list[tuple[int, int]]) -> None:
    """Byte ranges of the storages of every tensor among ``values`` (tuples and descriptors too)."""
    for v in values:
        if isinstance(v, (tuple, list)):
            _storage_ranges(v, ranges)
        elif hasattr(v, "untyped_storage"):
            storage = v.untyped_storage()
            ranges.append((storage.data_ptr(), storage.data_ptr() + storage.nbytes()))
        elif hasattr(v, "base") and hasattr(v.base, "untyped_storage"):  # TensorDescriptor
            _storage_ranges([v.base], ranges)


def _check_bounds(op: str, ptrs, mask) -> None:
    """Raise IndexError if an active lane of a load/store points outside the kernel's tensors."""
    import numpy as np

    ranges = _BOUNDS[-1] if _BOUNDS else None
    if not ranges:
        return
    from triton.runtime.interpreter import _get_np_dtype

    itemsize = np.dtype(_get_np_dtype(ptrs.get_element_ty())).itemsize
    addr = np.asarray(ptrs.data, dtype=np.uint64)
    active = np.broadcast_to(np.asarray(mask.data, dtype=bool), addr.shape)
    addr = addr[active]
    if addr.size == 0:
        return
    inside = np.zeros(addr.shape, dtype=bool)
    for start, end in ranges:
        inside |= (addr >= np.uint64(start)) & (addr + np.uint64(itemsize) <= np.uint64(end))
    if not inside.all():
        bad = int((~inside).sum())
        raise IndexError(tr("part03.out_of_bounds", op=op, bad=bad, lanes=addr.size))


def _undefined_lanes(ptrs):
    """What a masked float load without ``other=`` gives its masked-off lanes under a watch: NaN. On a
    GPU those lanes are undefined (whatever the registers held); the interpreter would give 0, so a
    kernel that sums or multiplies them (``tl.load(..., mask=m)`` in a reduction, no ``other=0.0``)
    passed on the CPU and was wrong on the GPU. bfloat16 gets its NaN bits (0x7FC0); integer (and fp8)
    loads keep the interpreter's 0. None: as is."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle, _get_np_dtype

    element = ptrs.get_element_ty()
    dtype_np = _get_np_dtype(element)
    if dtype_np.kind == "f":
        nan = np.nan
    elif element == tl.bfloat16:  # the interpreter holds bfloat16 as its uint16 bits
        nan = 0x7FC0
    else:
        return None
    return TensorHandle(np.full(np.shape(ptrs.data), nan, dtype=dtype_np), element)


def _install_interpreter() -> None:
    """Wrap the interpreter's launch entry, argument copy and memory ops (once per process)."""
    if _INSTALLED["interpreter"]:
        return
    try:
        from triton.runtime import interpreter
    except ImportError:
        return
    function = getattr(interpreter, "InterpretedFunction", None)
    executor = getattr(interpreter, "GridExecutor", None)
    builder = getattr(interpreter, "InterpreterBuilder", None)
    if function is None or executor is None:
        return
    call, init_args = executor.__call__, executor._init_args_hst

    def bounded_call(self, *args, **kwargs):
        _BOUNDS.append(None)
        try:
            return call(self, *args, **kwargs)
        finally:
            _BOUNDS.pop()

    def recording_init_args(self, args_dev, kwargs):
        args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
        if _BOUNDS and _ACTIVE:
            ranges: list[tuple[int, int]] = []
            _storage_ranges(list(args_hst) + list(kwargs_hst.values()), ranges)
            _BOUNDS[-1] = ranges
        return args_hst, kwargs_hst

    function.run = _watched_run(function.run)
    _install_autotune_hooks()
    executor.__call__ = bounded_call
    executor._init_args_hst = recording_init_args
    if builder is not None and hasattr(builder, "create_masked_load") and hasattr(builder, "create_masked_store"):
        load, store = builder.create_masked_load, builder.create_masked_store

        def checked_load(self, ptrs, mask, other, *rest):
            _check_bounds("load", ptrs, mask)
            if other is None and _ACTIVE:
                other = _undefined_lanes(ptrs)
            return load(self, ptrs, mask, other, *rest)

        def checked_store(self, ptrs, value, mask, *rest):
            _check_bounds("store", ptrs, mask)
            return store(self, ptrs, value, mask, *rest)

        builder.create_masked_load = checked_load
        builder.create_masked_store = checked_store
    _INSTALLED["interpreter"] = True


@contextlib.contextmanager
def _poisoned_allocations() -> Iterator[None]:
    import torch

    det = torch.utils.deterministic
    before = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
              det.fill_uninitialized_memory)
    torch.use_deterministic_algorithms(True, warn_only=True)
    det.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])
        det.fill_uninitialized_memory = before[2]


@contextlib.contextmanager
def watching(poison_allocations: bool = True, record_writes: bool = True) -> Iterator[Watch]:
    """Record the Triton kernels launched inside the block (see the module docstring);
    ``record_writes=False`` records only which kernels ran (no byte comparison: for timed calls)."""
    watch = Watch(record_writes=record_writes)
    with _LOCK:
        _install_interpreter()
        _install_compiled()
        _install_launcher()
        _ACTIVE.append(watch)
    try:
        with _poisoned_allocations() if poison_allocations else contextlib.nullcontext():
            yield watch
    finally:
        with _LOCK:
            _ACTIVE.remove(watch)
