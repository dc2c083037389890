"""Build a mutant from a reference module by swapping one of its private helpers.

A mutant that gets one step of a long function wrong (the RoPE pairing inside a LLaMA forward)
should not copy the whole function. ``rebind`` returns the reference module's functions re-bound
to a copy of its namespace in which some names are replaced, so the reference's own code calls
the wrong helper::

    from solutions.part01_transformer import llama as reference
    from infralab.mutation import rebind

    def _apply_rope(x, cos, sin): ...            # the mistake

    llama_forward, generate_greedy = rebind(reference, _apply_rope=_apply_rope)(
        "llama_forward", "generate_greedy")

The reference module itself is left untouched.
"""
from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any


def function_in(fn: types.FunctionType, namespace: dict[str, Any]) -> types.FunctionType:
    """A copy of ``fn`` that looks its global names up in ``namespace``."""
    copy = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__annotations__ = dict(fn.__annotations__)
    copy.__doc__ = fn.__doc__
    copy.__module__ = fn.__module__
    return copy


def with_globals(fn: types.FunctionType, **replacements: Any) -> types.FunctionType:
    """A copy of ``fn`` that looks its global names up in its module's namespace plus ``replacements``."""
    return function_in(fn, {**fn.__globals__, **replacements})


def rebind(module: types.ModuleType, **replacements: Any) -> Callable[..., tuple[Any, ...]]:
    """A getter for ``module``'s functions re-bound to its namespace with ``replacements`` applied."""
    namespace = dict(vars(module))
    namespace.update(replacements)
    for name, value in list(namespace.items()):
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__ \
                and name not in replacements:
            namespace[name] = function_in(value, namespace)  # one namespace: copies call each other

    def get(*names: str) -> tuple[Any, ...]:
        return tuple(namespace[n] for n in names)

    return get
