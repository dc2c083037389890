"""Guards around calls into an implementation: banned shortcuts, and Triton kernel launches.

An exercise may declare in course.yml::

    banned: [matmul, mm, bmm, einsum, linear, scaled_dot_product_attention]

Every call into that exercise's module then runs under a TorchFunctionMode that sees each torch
function or tensor method called (operators included: ``a @ b`` arrives as ``Tensor.matmul``)
and raises :class:`BannedCall` on a banned one, naming it. The same guards (:func:`guarding`)
run wherever the student's code runs: in this process, or inside the isolated executor when
grading (the cage ships this module; it imports only torch and :mod:`infralab.triton_watch`).

An exercise flagged ``triton: true`` must launch a @triton.jit kernel in every call into its
module (:func:`triton_launch_required`); a call that returns without one raises
:class:`NoKernelLaunched`.
"""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from torch.overrides import TorchFunctionMode, resolve_name

from infralab.triton_watch import watching


class BannedCall(RuntimeError):
    """The implementation called a library routine this exercise asks you to write yourself."""


@functools.lru_cache(maxsize=4096)  # called for every torch call of a guarded exercise
def _names(func: Any) -> tuple[tuple[str, str], ...]:
    """(short name, full name) of a torch routine, by both of its names: ``resolve_name`` alone
    misses aliases (it calls ``torch.mm`` ``torch.spmm``), ``__name__`` alone loses the namespace."""
    full = resolve_name(func) or ""
    namespace = full.rsplit(".", 1)[0] if "." in full else "torch"
    names = {full.rsplit(".", 1)[-1].strip("_"): full} if full else {}
    own = getattr(func, "__name__", "")
    if own:
        names.setdefault(own.strip("_"), f"{namespace}.{own}")
    return tuple(names.items())


class _BanMode(TorchFunctionMode):
    def __init__(self, banned: frozenset[str], where: str, on_ban: Callable[[str], None] | None = None):
        super().__init__()
        self.banned, self.where, self.on_ban = banned, where, on_ban

    def __torch_function__(self, func, types, args=(), kwargs=None):
        hits = [full for short, full in _names(func) if short in self.banned]
        if hits:
            routine = hits[0]
            if self.on_ban is not None:
                self.on_ban(routine)  # before raising: noted even if the code catches the error
            raise BannedCall(
                f"{self.where} called {routine}, which this exercise bans: "
                f"write the computation yourself (banned here: {', '.join(sorted(self.banned))})"
            )
        return func(*args, **(kwargs or {}))


class NoKernelLaunched(RuntimeError):
    """A Triton exercise's function returned without launching any @triton.jit kernel."""


@contextlib.contextmanager
def triton_launch_required(where: str) -> Iterator[None]:
    """The block must launch at least one Triton kernel (compiled or interpreted), else
    :class:`NoKernelLaunched`. Under the interpreter it also bounds-checks every load and store
    and poisons fresh allocations (see :mod:`infralab.triton_watch`)."""
    with watching() as watch:
        yield
    if not watch.launches:
        raise NoKernelLaunched(
            f"{where} returned without launching a Triton kernel: this exercise must compute its "
            f"result in a @triton.jit kernel launched as kernel[grid](...), not with torch operations"
        )


@contextlib.contextmanager
def guarding(where: str, banned: Iterable[str], triton: bool = False,
             on_ban: Callable[[str], None] | None = None) -> Iterator[None]:
    """The block runs under an exercise's guards: a call to a banned torch routine raises
    :class:`BannedCall` (after ``on_ban(routine)``, if given), and, with ``triton``, a block that
    launches no Triton kernel raises :class:`NoKernelLaunched`."""
    banned = frozenset(banned)
    with contextlib.ExitStack() as stack:
        if triton:
            stack.enter_context(triton_launch_required(where))
        if banned:
            stack.enter_context(_BanMode(banned, where, on_ban))
        yield


def guarded(fn: Callable, banned: Iterable[str], where: str, triton: bool = False) -> Callable:
    """``fn`` wrapped so that calls to any banned torch routine raise :class:`BannedCall`, and,
    with ``triton``, so that a call that launches no Triton kernel raises :class:`NoKernelLaunched`."""
    banned = frozenset(banned)
    if (not banned and not triton) or not callable(fn):
        return fn
    if isinstance(fn, type):
        return fn  # classes: their methods are guarded when called through a handle (see judge)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with guarding(where, banned, triton):
            return fn(*args, **kwargs)

    return wrapper
