"""Statistical checks for samplers: does a batch of draws follow a given distribution?

A sampler cannot be compared element by element; its draws are compared with the distribution
they should follow by the total-variation distance between the empirical frequencies and the
expected probabilities. The acceptance bound comes from the Bretagnolle–Huber–Carol
inequality for a multinomial with ``k`` outcomes and ``n`` independent draws::

    P( TV(empirical, p) >= eps ) <= 2**k * exp(-2 * n * eps**2)

so ``eps = sqrt((k ln 2 + ln(1 / false_alarm)) / (2 n))`` rejects a correct sampler with
probability at most ``false_alarm`` (1e-9 by default: such a test never flakes), whatever the
distribution. A wrong sampler is caught when its distribution is more than ``2 * eps`` away in
total variation; pick ``n`` so that the mistakes you care about are (``tv_bound`` tells you).
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import torch

from infralab.i18n import localized, tr
from infralab.testing import Label, Mismatch, Name


def tv_bound(num_outcomes: int, num_draws: int, false_alarm: float = 1e-9) -> float:
    """The TV distance a correct sampler exceeds with probability at most ``false_alarm``."""
    return math.sqrt((num_outcomes * math.log(2) + math.log(1 / false_alarm)) / (2 * num_draws))


def tv_distance(p: torch.Tensor, q: torch.Tensor) -> float:
    """Total-variation distance between two distributions over the same outcomes."""
    return 0.5 * float((p.double() - q.double()).abs().sum())


def empirical(draws: torch.Tensor, num_outcomes: int) -> torch.Tensor:
    """Frequencies (float64, sum 1) of the integer ``draws`` over ``0 .. num_outcomes - 1``."""
    return torch.bincount(draws.flatten().long().cpu(), minlength=num_outcomes).double() / draws.numel()


def assert_draws_follow(draws: torch.Tensor, probs: torch.Tensor, *, name: Name = "draws",
                        false_alarm: float = 1e-9,
                        mistakes: Mapping[Label, torch.Tensor] | None = None) -> None:
    """``draws`` (any shape, integer outcomes) are independent samples of ``probs`` ``(V,)``.

    Raises :class:`~infralab.testing.Mismatch` when an outcome of probability 0 was drawn, or
    when the empirical distribution is farther than :func:`tv_bound` from ``probs``;
    ``mistakes`` maps a known mistake's label (English or (english, chinese)) to the distribution it would sample from,
    and the failure names the one the draws fit.
    """
    name = localized(name)  # code as a plain string, prose as (english, chinese): infralab.testing.Name
    v = probs.numel()
    flat = draws.flatten().long().cpu()
    if flat.numel() == 0:
        raise Mismatch(tr("stats.no_draws", name=name))
    if int(flat.min()) < 0 or int(flat.max()) >= v:
        raise Mismatch(tr("stats.outside_range", name=name, last=v - 1,
                          outcome=int(flat.max()) if int(flat.max()) >= v else int(flat.min())))
    p = probs.detach().double().cpu().flatten()
    freq = empirical(flat, v)
    eps = tv_bound(v, flat.numel(), false_alarm)
    impossible = (p == 0) & (freq > 0)

    def fits() -> Label | None:
        for label, wrong in (mistakes or {}).items():
            if tv_distance(freq, wrong.detach().double().cpu().flatten()) <= eps:
                return label
        return None

    if bool(impossible.any()):
        token = int(impossible.nonzero()[0])
        raise Mismatch(tr("stats.impossible", name=name, outcome=token,
                          times=int(round(float(freq[token]) * flat.numel()))), fits())
    tv = tv_distance(freq, p)
    if tv > eps:
        worst = int((freq - p).abs().argmax())
        raise Mismatch(tr("stats.not_following", name=name, draws=flat.numel(), tv=tv, eps=eps,
                          false_alarm=false_alarm, worst=worst, frequency=float(freq[worst]),
                          probability=float(p[worst])), fits())


def threshold_clear_of(boundaries: torch.Tensor, lo: float, hi: float, generator: torch.Generator,
                       margin: float = 1e-5) -> float:
    """A random threshold in ``[lo, hi]`` at least ``margin`` away from every value of ``boundaries``.

    For filters with a cut-off (top-p's cumulative mass, min-p's probability ratio): a threshold
    that falls within rounding distance of a boundary would let fp32 rounding decide the test.
    """
    values = boundaries.detach().flatten().double().cpu()
    for _ in range(1000):
        t = lo + (hi - lo) * float(torch.rand((), generator=generator, dtype=torch.float64))
        if bool(((values - t).abs() > margin).all()):
            return t
    # the test's own setup could not draw a threshold: a bug in the test, never the student's answer
    raise ValueError(  # kit bug, not a user message
        f"no threshold in [{lo}, {hi}] is {margin} clear of the {values.numel()} boundaries")
