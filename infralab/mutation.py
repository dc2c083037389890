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


def rebind(module: types.ModuleType, **replacements: Any) -> Callable[..., tuple[Any, ...]]:
    """A getter for ``module``'s functions re-bound to its namespace with ``replacements`` applied."""
    namespace = dict(vars(module))
    namespace.update(replacements)
    for name, value in list(namespace.items()):
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__ \
                and name not in replacements:
            copy = types.FunctionType(value.__code__, namespace, value.__name__, value.__defaults__,
                                      value.__closure__)
            copy.__kwdefaults__ = value.__kwdefaults__
            copy.__doc__ = value.__doc__
            namespace[name] = copy

    def get(*names: str) -> tuple[Any, ...]:
        return tuple(namespace[n] for n in names)

    return get
