"""Build a Triton mutant without copying the reference: re-bind global names.

A known-wrong kernel usually differs from the reference in one line of one kernel; the mutant
should hold that kernel (or the small @triton.jit helper it differs in), not a copy of the
Python wrapper that launches it. ``with_globals`` copies a function with some of its global
names replaced, so the reference wrapper launches the mutant's kernel; ``rebind_kernel`` does
the same for a kernel, compiled from the reference kernel's own source, so it calls a mutant
helper::

    from solutions.part03_kernels import flash_attention as reference
    from infralab.triton_mutation import rebind_kernel, with_globals

    @triton.jit
    def _attend_block_range(...): ...               # the mistake

    kernel = rebind_kernel(reference.flash_attention_kernel, _attend_block_range=_attend_block_range)
    flash_attention = with_globals(reference.flash_attention, flash_attention_kernel=kernel)

An ``@triton.autotune`` wrapper is kept (same configs and key). The reference is left untouched.
"""
from __future__ import annotations

import types
from typing import Any


def with_globals(fn: types.FunctionType, **replacements: Any) -> types.FunctionType:
    """A copy of ``fn`` that looks its global names up in its module's namespace plus ``replacements``."""
    namespace = dict(fn.__globals__)
    namespace.update(replacements)
    copy = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__annotations__ = dict(fn.__annotations__)
    copy.__doc__ = fn.__doc__
    copy.__module__ = fn.__module__
    return copy


def rebind_kernel(kernel: Any, **replacements: Any) -> Any:
    """A copy of ``kernel`` (``@triton.jit``, maybe under ``@triton.autotune``) with globals replaced."""
    import triton

    tuner = kernel if hasattr(kernel, "configs") and hasattr(kernel, "keys") else None
    jitted = tuner.fn if tuner is not None else kernel
    new = triton.jit(with_globals(jitted.fn, **replacements))
    if tuner is None:
        return new
    return triton.autotune(configs=list(tuner.configs), key=list(tuner.keys))(new)
