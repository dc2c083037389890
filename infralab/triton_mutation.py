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

import inspect
import itertools
import linecache
import textwrap
from typing import Any

from infralab.i18n import tr
from infralab.mutation import with_globals

__all__ = ["edited_kernel", "rebind_kernel", "with_globals"]

_edits = itertools.count()


def _unwrap(kernel: Any) -> tuple[Any, Any]:
    """(the autotuner or None, the @triton.jit function) of a kernel."""
    tuner = kernel if hasattr(kernel, "configs") and hasattr(kernel, "keys") else None
    return tuner, (tuner.fn if tuner is not None else kernel)


def _retuned(tuner: Any, jitted: Any) -> Any:
    import triton
    return jitted if tuner is None else triton.autotune(configs=list(tuner.configs), key=list(tuner.keys))(jitted)


def edited_kernel(kernel: Any, *edits: tuple[str, str] | tuple[str, str, int]) -> Any:
    """The reference ``kernel`` compiled again from its own source with each ``(old, new)`` or
    ``(old, new, times)`` text edit applied to every occurrence of ``old``, which must occur
    ``times`` times (default once): a mutant whose reference changed fails to build instead of
    silently becoming the reference. The mistake is the edit::

        add_kernel = edited_kernel(reference.add_kernel,
                                   ("tl.store(out_ptr + offsets, x + y, mask=mask)", "tl.store(out_ptr + offsets, x + y)"))
    """
    import triton

    tuner, jitted = _unwrap(kernel)
    fn = jitted.fn
    lines, _ = inspect.getsourcelines(fn)
    source = textwrap.dedent("".join(lines))
    source = source[source.index("def "):]  # without the decorators
    for old, new, *times in edits:
        want, found = (times or [1])[0], source.count(old)
        if found != want:
            raise ValueError(tr("mutate.kernel_edit", function=fn.__name__, old=old, found=found, want=want))
        source = source.replace(old, new)
    filename = f"<mutant of {fn.__module__}.{fn.__name__} #{next(_edits)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)  # for getsource
    namespace = dict(fn.__globals__)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - the course's own reference source
    return _retuned(tuner, triton.jit(namespace[fn.__name__]))


def rebind_kernel(kernel: Any, **replacements: Any) -> Any:
    """A copy of ``kernel`` (``@triton.jit``, maybe under ``@triton.autotune``) with globals replaced."""
    import triton

    tuner, jitted = _unwrap(kernel)
    return _retuned(tuner, triton.jit(with_globals(jitted.fn, **replacements)))
