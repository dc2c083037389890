"""Checks of the Part 04 engine capstone's outputs, shared by its visible and hidden tests (shipped
with the visible tests: no reference computation here; the references, recorded for the visible
tests through the ``golden`` fixture, are in infralab/mistakes/part04_serving/engine.py).

Greedy tokens are compared with a reference that also gives the gap between the two best logits at
every token: where that gap is below ``TIE`` an engine computing attention in fp32 may pick either
token, and the comparison of that request stops there (a correct answer never fails on a near-tie).
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from infralab.i18n import localized, tr
from infralab.testing import Label, Mismatch, Name

TIE = 1e-4  # logits closer than this are a tie: fp32 attention inside the engine may flip them
Refs = list  # [(tokens, gaps), ...] per request: the reference's greedy ids and top-2 logit gaps


def random_prompts(gen: torch.Generator, lengths: list[int], vocab: int = 128) -> list[list[int]]:
    return [torch.randint(0, vocab, (n,), generator=gen).tolist() for n in lengths]


def first_difference(got: list[int], want: list[int], gaps: list[float]) -> int | None:
    """Index of the first token that differs, ignoring everything from a near-tie on; None if equal."""
    for i, w in enumerate(want):
        if gaps[i] < TIE:
            return None  # either pick is right here, and what follows depends on it
        if i >= len(got) or got[i] != w:
            return i
    return None if len(got) == len(want) else len(want)


def assert_same_tokens(got: Any, refs: list[tuple[list[int], list[float]]], *, what: Name,
                       diagnosis: Label | Callable[[list], Label | None] | None = None) -> None:
    """``got[r]`` equals the reference tokens of request ``r`` (tie-aware); Mismatch names the first
    request and token that differ, and ``diagnosis`` (a label, or a function of ``got`` making one,
    called only on a failure) as the likely mistake. ``what`` names the run, prose as an
    (english, chinese) pair (infralab.testing.Name)."""
    what = localized(what)
    if not isinstance(got, (list, tuple)) or len(got) != len(refs):
        raise Mismatch(tr("engine.outputs_count", what=what, want=len(refs),
                          got=len(got) if isinstance(got, (list, tuple)) else type(got).__name__))
    for rid, (out, (want, gaps)) in enumerate(zip(got, refs)):
        out = list(out)
        at = first_difference(out, want, gaps)
        if at is not None:
            label = diagnosis(list(got)) if callable(diagnosis) else diagnosis
            raise Mismatch(tr("engine.tokens_differ", what=what, rid=rid, at=at, got=out, want=want), label)


def dropped_before_preemption(got: list, refs: Refs, label: Label) -> Label | None:
    """``label`` if some output is a proper suffix of its right tokens (output dropped at a preemption)."""
    for out, (want, _) in zip(got, refs):
        if 0 < len(out) < len(want) and list(out) == want[len(want) - len(out):]:
            return label
    return None


def matches(label: Label, wrong: list) -> Callable[[list], Label | None]:
    """A diagnosis function: ``label`` when the outputs are exactly a known mistake's outputs."""
    return lambda got: label if [list(o) for o in got] == [list(w) for w in wrong] else None


def diagnose_eos(got: list[int], want: list[int], late: Label, dropped: Label) -> Label | None:
    """``late`` if the output is the right one plus a token, ``dropped`` if it lacks its eos."""
    if len(got) == len(want) + 1 and list(got[:-1]) == want:
        return late
    if list(got) == want[:-1]:
        return dropped
    return None


def diagnose_with_control(refs: Refs, control: Callable[[], list], specific: Label | Callable[[list], Label | None],
                          fallback: Callable[[list], Label | None] | None = None) -> Callable[[list], Label | None]:
    """A diagnosis function for a feature under test (preemption, the prefix cache): when the same
    implementation without the feature (``control()``, run only on a failure) gets the right tokens,
    the feature is at fault (``specific``); otherwise the mistake is elsewhere (``fallback`` of the
    control's outputs, if given)."""
    def diagnose(got: list) -> Label | None:
        try:
            plain = control()
        except Exception:  # a control that cannot run names nothing
            return None
        if all(first_difference(list(o), w, g) is None for o, (w, g) in zip(plain, refs)):
            return specific(got) if callable(specific) else specific
        return fallback(plain) if fallback else None
    return diagnose


def run_paged_steps(paged_forward, weights, config, seqs: list[list[int]], steps: list[list[tuple[int, int]]],
                    block_size: int, gen: torch.Generator) -> list[torch.Tensor]:
    """Feed ``seqs`` to ``paged_forward`` in ``steps`` (each a list of (sequence, tokens this step),
    one batch per step); blocks are a random permutation of a NaN-poisoned pool, so a read of an
    unwritten slot or a write to the wrong one shows. Returns each sequence's logits rows in order."""
    hkv = config["num_key_value_heads"]
    dh = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    need = [-(-len(s) // block_size) for s in seqs]
    perm = torch.randperm(sum(need) + 2, generator=gen).tolist()
    tables = [perm[sum(need[:i]):sum(need[:i + 1])] for i in range(len(seqs))]
    dtype = weights["model.embed_tokens.weight"].dtype
    shape = (config["num_hidden_layers"], len(perm), block_size, hkv, dh)
    k_cache, v_cache = torch.full(shape, float("nan"), dtype=dtype), torch.full(shape, float("nan"), dtype=dtype)
    done = [0] * len(seqs)
    rows: list[list[torch.Tensor]] = [[] for _ in seqs]
    width = max(need)
    for step in steps:
        ids, pos, slots, table, owner = [], [], [], [], []
        for s, n in step:
            for p in range(done[s], done[s] + n):
                ids.append(seqs[s][p])
                pos.append(p)
                slots.append(tables[s][p // block_size] * block_size + p % block_size)
                table.append(tables[s] + [-1] * (width - len(tables[s])))
                owner.append(s)
            done[s] += n
        logits = paged_forward(weights, config, k_cache, v_cache, torch.tensor(ids), torch.tensor(pos),
                               torch.tensor(slots), torch.tensor(table, dtype=torch.int32))
        for i, s in enumerate(owner):
            rows[s].append(logits[i])
    return [torch.stack(r) for r in rows]
