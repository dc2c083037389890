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

from typing import Any

from infralab.mutation import with_globals

__all__ = ["rebind_kernel", "with_globals"]


def rebind_kernel(kernel: Any, **replacements: Any) -> Any:
    """A copy of ``kernel`` (``@triton.jit``, maybe under ``@triton.autotune``) with globals replaced."""
    import triton

    tuner = kernel if hasattr(kernel, "configs") and hasattr(kernel, "keys") else None
    jitted = tuner.fn if tuner is not None else kernel
    new = triton.jit(with_globals(jitted.fn, **replacements))
    if tuner is None:
        return new
    return triton.autotune(configs=list(tuner.configs), key=list(tuner.keys))(new)
