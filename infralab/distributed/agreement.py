"""Do the ranks agree on what a message or a collective moves? Checked before the backend sees it.

gloo does not raise on a size mismatch: a ``recv`` posted for fewer elements than were sent
aborts the receiving process from gloo's own thread (``terminate called after throwing an
instance of 'gloo::EnforceNotMet' ... op.preamble.length <= op.nbytes``), and one posted for
more is silently filled in part (measured, torch 2.13). A student's wrong size must be a
clear error instead, the same on every backend: every call is described here (element
count and dtype of what it sends to and expects from each peer) and the descriptions of the
ranks involved are compared before the call is made.

- The simulated group compares them in memory (:func:`collective_disagreement`).
- Real backends compare them through a :class:`torch.distributed.FileStore` of the run
  (:class:`StoreAgreement`): a collective waits until every rank has described its call (it
  would wait for them anyway); a point-to-point message is checked by whichever of its two
  ends is posted second, so neither ``isend`` nor ``irecv`` ever blocks on the check.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from infralab.distributed.accounting import argument

# collectives whose key tensor must have the same numel and dtype on every rank
_SAME = {"all_reduce": (0, "tensor"), "broadcast": (0, "tensor"), "reduce": (0, "tensor"),
         "reduce_scatter_tensor": (1, "input"), "all_gather_into_tensor": (1, "input_tensor")}


def _numels(x: Any) -> list[int] | None:
    if isinstance(x, (list, tuple)) and all(isinstance(t, torch.Tensor) for t in x):
        return [t.numel() for t in x]
    return None


def _dtype(x: Any) -> str:
    if isinstance(x, torch.Tensor):
        return str(x.dtype).removeprefix("torch.")
    if isinstance(x, (list, tuple)) and x and isinstance(x[0], torch.Tensor):
        return _dtype(x[0])
    return "?"


def describe(name: str, args: Sequence, kwargs: Mapping, world_size: int) -> dict | None:
    """What one rank's collective sends and expects, as plain data (None: nothing to compare)."""
    if name in _SAME:
        t = argument(args, kwargs, *_SAME[name])
        if not isinstance(t, torch.Tensor):
            return None
        return {"same": [t.numel(), _dtype(t)]}
    if name == "all_gather":
        outs, t = argument(args, kwargs, 0, "tensor_list"), argument(args, kwargs, 1, "tensor")
        if _numels(outs) is None or not isinstance(t, torch.Tensor):
            return None
        return {"sends": [t.numel()] * world_size, "expects": _numels(outs), "dtype": _dtype(t)}
    if name == "all_to_all":
        outs, ins = argument(args, kwargs, 0, "output_tensor_list"), argument(args, kwargs, 1, "input_tensor_list")
        if _numels(outs) is None or _numels(ins) is None:
            return None
        return {"sends": _numels(ins), "expects": _numels(outs), "dtype": _dtype(ins)}
    if name == "all_to_all_single":
        out, inp = argument(args, kwargs, 0, "output"), argument(args, kwargs, 1, "input")
        if not isinstance(out, torch.Tensor) or not isinstance(inp, torch.Tensor):
            return None
        return {"sends": _split_numels(inp, argument(args, kwargs, 3, "input_split_sizes"), world_size),
                "expects": _split_numels(out, argument(args, kwargs, 2, "output_split_sizes"), world_size),
                "dtype": _dtype(inp)}
    return None


def _split_numels(t: torch.Tensor, splits: Any, n: int) -> list[int]:
    """Elements per peer of an all_to_all_single buffer (equal splits of dim 0 when ``splits`` is None)."""
    row = math.prod(t.shape[1:]) if t.dim() else 1
    if splits is None:
        return [t.numel() // n] * n if t.numel() % n == 0 else [-1] * n
    return [int(s) * row for s in splits]


def collective_disagreement(name: str, descs: Sequence[dict | None]) -> str | None:
    """Why the ranks' descriptions of one collective cannot work together (None: they agree)."""
    from infralab.i18n import tr

    if any(d is None for d in descs):
        return None
    if "same" in descs[0]:
        shapes = [tuple(d.get("same", ())) for d in descs]
        if len(set(shapes)) > 1:
            listed = ", ".join(f"rank {r}: {s[0]} {s[1]}" for r, s in enumerate(shapes))
            return tr("distributed.collective_sizes_differ", name=name, listed=listed)
        return None
    n = len(descs)
    for r in range(n):
        for q in range(n):
            sent, expected = descs[q]["sends"][r], descs[r]["expects"][q]
            if sent != expected or descs[q]["dtype"] != descs[r]["dtype"]:
                return tr("distributed.collective_pair_differs", name=name, dst=r, src=q, expected=expected,
                          sent=sent, dst_dtype=descs[r]["dtype"], src_dtype=descs[q]["dtype"])
    if any(s < 0 for d in descs for s in d["sends"] + d["expects"]):
        return tr("distributed.collective_uneven", name=name)
    return None


def p2p_disagreement(src: int, dst: int, sent: tuple[int, str], posted: tuple[int, str]) -> str | None:
    """Why a message cannot land in the posted receive (None: same numel and dtype)."""
    from infralab.i18n import tr

    if tuple(sent) == tuple(posted):
        return None
    return tr("distributed.p2p_sizes_differ", src=src, dst=dst, posted=posted[0], posted_dtype=posted[1],
              sent=sent[0], sent_dtype=sent[1])


class StoreAgreement:
    """The agreement checks of one rank of a real process group, through a store of the run."""

    def __init__(self, store: Any, rank: int, world_size: int, timeout_s: float):
        self.store, self.rank, self.n, self.timeout_s = store, rank, world_size, timeout_s
        self.collectives = 0
        self.sent: dict[int, int] = {}  # messages posted to each peer so far
        self.received: dict[int, int] = {}

    def collective(self, name: str, args: Sequence, kwargs: Mapping) -> None:
        """Describe this rank's call, wait for the others' descriptions, raise if they disagree."""
        import datetime

        index = self.collectives
        self.collectives += 1
        mine = describe(name, args, kwargs, self.n)
        self.store.set(f"c{index}/{self.rank}", json.dumps([name, mine]))
        keys = [f"c{index}/{r}" for r in range(self.n)]
        self.store.wait(keys, datetime.timedelta(seconds=self.timeout_s))
        theirs = [json.loads(self.store.get(k)) for k in keys]
        names = sorted({t[0] for t in theirs})
        if len(names) > 1:
            from infralab.i18n import tr
            raise RuntimeError(tr("distributed.collective_names_differ", index=index,
                                  listed=", ".join(f"rank {r}: dist.{t[0]}" for r, t in enumerate(theirs))))
        problem = collective_disagreement(name, [t[1] for t in theirs])
        if problem:
            raise RuntimeError(problem)

    def send(self, tensor: torch.Tensor, dst: int) -> None:
        k = self.sent.get(dst, 0)
        self.sent[dst] = k + 1
        self._meet(self.rank, dst, k, "s", [tensor.numel(), _dtype(tensor)])

    def recv(self, tensor: torch.Tensor, src: int) -> None:
        k = self.received.get(src, 0)
        self.received[src] = k + 1
        self._meet(src, self.rank, k, "r", [tensor.numel(), _dtype(tensor)])

    def _meet(self, src: int, dst: int, k: int, side: str, mine: list) -> None:
        """Write this end of message k from src to dst; if the other end is already there, compare."""
        base = f"p{src}>{dst}/{k}/"
        self.store.set(base + side, json.dumps(mine))
        other = base + ("r" if side == "s" else "s")
        if self.store.check([other]):
            theirs = json.loads(self.store.get(other))
            sent, posted = (mine, theirs) if side == "s" else (theirs, mine)
            problem = p2p_disagreement(src, dst, sent, posted)
            if problem:
                raise RuntimeError(problem)
