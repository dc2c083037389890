"""Seeds of a run: the base seed, a sweep over consecutive base seeds, and each test's own seed.

A run has one base seed (``--seed S``, else a fresh draw). Each test's seed derives from the base
and the test's id, so ``--seed S`` repeats every input of a run, hypothesis examples included.
A sweep (``--seeds N``) runs each seed-dependent test at the bases S, S+1, ..., S+N-1 in one pytest
session: the base is a parameter of the test (id ``seedS``), appended after the test's own
parameters and, in soundness mode, after the target's id. The test's seed ignores those
added ids, so the case ``[...-seed7]`` of a sweep draws exactly what ``--seed 7`` draws alone.
"""
from __future__ import annotations

import hashlib
import os


def fresh_seed() -> int:
    """A new base seed for a run that was given none."""
    return int.from_bytes(os.urandom(3), "little")


def sweep(base: int, count: int) -> list[int]:
    """The base seeds of a sweep of ``count`` seeds starting at ``base``."""
    return [base + k for k in range(count)]


def seed_id(base: int) -> str:
    """The parameter id of one base seed in a sweep."""
    return f"seed{base}"


def kit_id(target: str | None, base: int, swept: bool) -> str:
    """The parameter id the kit appends to a test's own: the target (soundness mode), the base seed (a sweep)."""
    return "-".join(([target] if target is not None else []) + ([seed_id(base)] if swept else []))


def own_nodeid(nodeid: str, kit_id: str) -> str:
    """``nodeid`` without the parameter id the kit appended (target, sweep seed), as a plain run names it."""
    if not kit_id or not nodeid.endswith("]"):
        return nodeid
    head, _, params = nodeid[:-1].rpartition("[")
    if params == kit_id:
        return head
    if params.endswith("-" + kit_id):
        return f"{head}[{params[:-len(kit_id) - 1]}]"
    return nodeid


def test_seed(base: int, nodeid: str) -> int:
    """The seed of one test (its own node id, see :func:`own_nodeid`) in a run with this base seed."""
    digest = hashlib.sha256(f"{base}:{nodeid}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


test_seed.__test__ = False  # not a pytest test
