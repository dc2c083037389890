"""Guards around every call into an implementation: banned op classes, the torch side of a Triton
exercise, inputs the call may not change, and the evidence that a Triton exercise's outputs come
from its own kernels.

One entry point, :func:`checked_call`, runs wherever the student's code runs: in this process
(``pytest --target ...``, the student's early warning) and inside the isolated executor when
grading (the cage ships this module with :mod:`infralab.triton_watch` and :mod:`infralab.i18n`).

- **Op classes at the aten dispatcher.** ``banned:`` in course.yml names op classes
  (:data:`OP_CLASSES`: ``attention``, ``softmax``, ``matmul``); routine names used before
  (``mm``, ``scaled_dot_product_attention``, ...) map to their class (:data:`ROUTINE_CLASS`).
  The check is a ``TorchDispatchMode``: every torch routine ends in aten ops, so aliases,
  composites (``einsum``, ``linear``, ``a @ b``), methods and ``torch.ops.aten.*`` are all seen,
  and switching torch-function modes off (``torch._C.DisableTorchFunction``) changes nothing.
  In a ``triton: true`` exercise the torch side may only allocate, view, copy, cast and fill
  (:data:`TRITON_TORCH_SIDE`); any other aten op raises :class:`BannedCall`.
- **Inputs.** A call may change only the arguments its specification lets it change (course.yml
  ``mutates:``); any other changed input tensor raises :class:`InputModified`, naming it.
- **Triton evidence.** Every returned tensor of a Triton exercise must have been written by a
  launch of a ``@triton.jit`` kernel defined in the submission's own files
  (:class:`NoKernelOutput`), and at least one kernel must run (:class:`NoKernelLaunched`).
- **Intact guards.** After the call, the dispatch mode must still be on the mode stack; if the
  code removed it, the call fails with :class:`GuardDisabled`.

``on_flag(kind, detail)`` is told of every violation before the exception is raised, so that a
submission catching the exception is still recorded.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack, _push_mode

from infralab.i18n import tr
from infralab.opclasses import TRITON_TORCH_SIDE, ban_classes, op_class
from infralab.triton_watch import Watch, quiet_modes, watching

class BannedCall(RuntimeError):
    """The implementation called a torch routine of a class this exercise asks you to write yourself."""


class NoKernelLaunched(RuntimeError):
    """A Triton exercise's function returned without launching any @triton.jit kernel."""


class NoKernelOutput(RuntimeError):
    """A Triton exercise returned a tensor that no kernel of the submission's own files wrote."""


class InputModified(RuntimeError):
    """The call changed an input tensor its specification does not let it change."""


class GuardDisabled(RuntimeError):
    """The code under test removed a guard around its own call."""


Flagger = Callable[[str, str], None]


def current_stream_handle() -> int:
    """The raw handle of the current CUDA stream (what Triton and aten launch on)."""
    return int(torch.cuda.current_stream().cuda_stream)


class _OpGuard(TorchDispatchMode):
    """Sees every aten op the call runs; raises BannedCall on a banned class (and, in a Triton
    exercise, on anything but allocate/view/copy/cast/fill)."""

    def __init__(self, where: str, banned: frozenset[str], triton: bool, on_flag: Flagger | None,
                 stream: int | None = None):
        super().__init__()
        self.where, self.banned, self.triton, self.on_flag, self.stream = where, banned, triton, on_flag, stream

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        cls = op_class(name)
        if self.stream is not None:
            current = current_stream_handle()
            if current != self.stream:
                self._refuse(f"{self.where} ran aten.{name} on CUDA stream {current:#x}",
                             tr("integrity.op_side_stream", where=self.where, op=f"aten.{name}", stream=current,
                                timed=self.stream))
        if cls in self.banned:
            message = tr("integrity.banned", where=self.where, op=f"aten.{name}", op_class=cls,
                         banned=", ".join(sorted(self.banned)))
            self._refuse(f"{self.where} called aten.{name} ({cls})", message)
        if self.triton and cls not in TRITON_TORCH_SIDE:
            self._refuse(f"{self.where} called aten.{name} on the torch side of a Triton exercise",
                         tr("integrity.triton_torch_side", where=self.where, op=f"aten.{name}"))
        return func(*args, **(kwargs or {}))

    def _refuse(self, detail: str, message: str):
        if self.on_flag is not None:
            self.on_flag("banned-call", detail)  # before raising: noted even if the code catches the error
        raise BannedCall(message)


# -- inputs ----------------------------------------------------------------------------------------
def _labelled_tensors(fn: Callable, args: tuple, kwargs: dict) -> list[tuple[str, int | str, torch.Tensor]]:
    """(name for messages, position or keyword, tensor) of every tensor argument (and of the tensors in a
    list, tuple or dict argument: one level deep)."""
    try:
        names = list(inspect.signature(fn).bind_partial(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        names = []
    found = []
    for slot, value in [(i, a) for i, a in enumerate(args)] + list(kwargs.items()):
        label = names[slot] if isinstance(slot, int) and slot < len(names) else (
            slot if isinstance(slot, str) else f"argument {slot}")
        inner = enumerate(value) if isinstance(value, (list, tuple)) else value.items() if isinstance(value, dict) else ()
        items = [(label, value)] if isinstance(value, torch.Tensor) else \
            [(f"{label}[{j!r}]", v) for j, v in inner if isinstance(v, torch.Tensor)]
        found += [(lab, slot, t) for lab, t in items]
    return found


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """The tensor's elements as a flat uint8 copy (NaN-safe comparison; any dtype)."""
    flat = torch.Tensor.contiguous(torch.Tensor.detach(t)).reshape(-1)
    return flat.view(torch.uint8).clone() if flat.numel() else flat.new_empty(0, dtype=torch.uint8)


def may_change(slot: int | str, allowed: dict[str, int]) -> bool:
    """Whether the argument at ``slot`` (a position or a keyword) is one the spec lets the call change;
    ``allowed`` maps the stub's parameter names to their positions (course.yml ``mutates:``)."""
    return slot in allowed if isinstance(slot, str) else slot in allowed.values()


@contextlib.contextmanager
def inputs_kept(where: str, fn: Callable, args: tuple, kwargs: dict, allowed: dict[str, int],
                on_flag: Flagger | None = None) -> Iterator[None]:
    """The block may change only the input tensors ``allowed`` names; else InputModified."""
    with quiet_modes():
        before = [(label, slot, t, _bytes(t)) for label, slot, t in _labelled_tensors(fn, args, kwargs)]
    yield
    with quiet_modes():
        changed = [label for label, slot, t, b in before
                   if not may_change(slot, allowed) and not torch.equal(_bytes(t), b)]
    if changed:
        if on_flag is not None:
            on_flag("input-modified", f"{where} changed {changed[0]}")
        raise InputModified(tr("integrity.input_modified", where=where, argument=changed[0]))


# -- the call --------------------------------------------------------------------------------------
def _returned_tensors(result: Any) -> list[torch.Tensor]:
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [t for t in result if isinstance(t, torch.Tensor)]
    return []


def _require_kernel_outputs(where: str, watch: Watch, result: Any, own_kernel: Callable[[str], bool],
                            on_flag: Flagger | None) -> None:
    if not watch.launches:
        raise NoKernelLaunched(tr("integrity.no_launch", where=where))
    written = set().union(*(launch.written for launch in watch.launches if own_kernel(launch.file)))
    for index, t in enumerate(_returned_tensors(result)):
        if t.numel() and watch.storage_key(t) not in written:
            if on_flag is not None:
                on_flag("not-kernel-output", f"{where}: returned tensor {index}")
            raise NoKernelOutput(tr("integrity.not_kernel_output", where=where, index=index))


def _any_file(path: str) -> bool:
    return True


def checked_call(fn: Callable, args: tuple, kwargs: dict, *, where: str, banned: Iterable[str] = (),
                 triton: bool = False, allowed: dict[str, int] | None = None, on_flag: Flagger | None = None,
                 own_kernel: Callable[[str], bool] = _any_file) -> Any:
    """``fn(*args, **kwargs)`` under the exercise's guards (the module docstring says which).
    ``allowed``: the inputs the call may change (None: no input check); ``own_kernel(file)``:
    whether a kernel defined in ``file`` belongs to the implementation under test."""
    classes = ban_classes(banned)
    mode = _OpGuard(where, classes, triton, on_flag) if classes or triton else None
    with contextlib.ExitStack() as stack:
        if allowed is not None:
            stack.enter_context(inputs_kept(where, fn, args, kwargs, allowed, on_flag))
        watch = stack.enter_context(watching()) if triton else None
        if mode is not None:
            stack.enter_context(mode)
            stack.callback(_check_on_stack, mode, where, on_flag)
        result = fn(*args, **kwargs)
    if watch is not None:
        _require_kernel_outputs(where, watch, result, own_kernel, on_flag)
    return result


@contextlib.contextmanager
def op_guard(where: str, banned: Iterable[str] = (), triton: bool = False,
             on_flag: Flagger | None = None, stream: int | None = None) -> Iterator[None]:
    """The dispatch-level check of :func:`checked_call` alone (no input check, no kernel-output
    evidence): what costs nothing on the device, for the timed calls of a performance challenge.
    ``stream``: the raw CUDA stream the call is timed on; an op issued while another stream is
    current raises (work beside the timed stream would escape the judge's clock)."""
    mode = _OpGuard(where, ban_classes(banned), triton, on_flag, stream)
    with mode:
        yield
        _check_on_stack(mode, where, on_flag)


def _check_on_stack(mode: _OpGuard, where: str, on_flag: Flagger | None) -> None:
    """Runs before the mode's own exit: if the code popped the mode, push it back (so the exit
    stays balanced) and fail the call."""
    if any(m is mode for m in _get_current_dispatch_mode_stack()):
        return
    _push_mode(mode)
    if on_flag is not None:
        on_flag("guard-disabled", f"{where}: the dispatch guard was removed from the mode stack")
    raise GuardDisabled(tr("integrity.guard_disabled", where=where, what="dispatch mode"))


def guarded(fn: Callable, banned: Iterable[str], where: str, triton: bool = False,
            allowed: dict[str, int] | None = None, own_kernel: Callable[[str], bool] = _any_file) -> Callable:
    """``fn`` wrapped so that every call goes through :func:`checked_call` (classes pass through:
    their methods are guarded when called through a handle in the judge)."""
    banned = tuple(banned)
    if (not banned and not triton and allowed is None) or not callable(fn) or isinstance(fn, type):
        return fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return checked_call(fn, args, kwargs, where=where, banned=banned, triton=triton, allowed=allowed,
                            own_kernel=own_kernel)

    return wrapper
