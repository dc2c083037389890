"""References and known mistakes of part04_serving.speculative.

For one position with target ``p`` and draft ``q`` (``(V,)``), :func:`position_mistakes` gives the
distribution of the token a known mistake emits at that position (given the position is reached),
for :func:`infralab.stats.assert_draws_follow`. All in float64.
"""
from __future__ import annotations

import torch

INVERTED_RATIO = ("accepted with min(1, q/p) instead of min(1, p/q)", "以 min(1, q/p) 而不是 min(1, p/q) 的概率接受")
RESAMPLE_FROM_TARGET = ("on rejection resampled from the target p instead of norm(max(0, p - q))",
                        "拒绝后从目标分布 p 重新采样，而不是从残差 norm(max(0, p − q)) 采样")
ABS_RESIDUAL = ("the residual is norm(|p - q|) instead of norm(max(0, p - q))",
                "残差用了 norm(|p − q|) 而不是 norm(max(0, p − q))")
NO_BONUS = ("no bonus token when every draft token is accepted (the target's distribution after the draft is "
            "free: one more token per step)",
            "所有草稿 token 都被接受时没有输出 bonus token（目标模型对草稿之后位置的分布是白送的：每步多一个 token）")
CONTINUES = ("verification went on after the first rejection (tokens after a rejected one were drafted from a "
             "prefix the output no longer has)",
             "第一次拒绝之后还在继续验证（被拒 token 之后的草稿基于一个输出中已不存在的前缀）")
GREEDY_NO_CORRECTION = ("greedy verification stopped at the first disagreement without emitting the target's token",
                        "贪心验证在第一个不一致处停止，却没有输出目标模型的 token")
GREEDY_DRAFT_AT_MISMATCH = ("greedy verification emitted the draft's token at the disagreement instead of the target's",
                            "贪心验证在不一致处输出了草稿 token，而不是目标模型的 token")
UNNORMALISED = ("the residual max(0, p - q) was not normalised", "残差 max(0, p − q) 没有归一化")


def spread_probs(*shape: int, generator: torch.Generator, floor: float = 0.3) -> torch.Tensor:
    """Random distributions over the last dimension whose every entry is at least ``floor / V``
    (float64), so that each outcome is drawn often enough for a statistical test."""
    v = shape[-1]
    raw = torch.rand(*shape, generator=generator, dtype=torch.float64) ** 2
    return (1 - floor) * raw / raw.sum(-1, keepdim=True) + floor / v


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    r = (p.double() - q.double()).clamp(min=0)
    mass = r.sum(-1, keepdim=True)
    return torch.where(mass > 0, r / mass.clamp(min=1e-300), p.double())


def residual_mistakes(p: torch.Tensor, q: torch.Tensor) -> dict:
    d = (p.double() - q.double())
    return {ABS_RESIDUAL: (d.abs() / d.abs().sum(-1, keepdim=True)).to(p.dtype), UNNORMALISED: d.clamp(min=0).to(p.dtype)}


def emitted(p: torch.Tensor, q: torch.Tensor, accept: torch.Tensor, resample: torch.Tensor) -> torch.Tensor:
    """Distribution of the token emitted at a position where draft x ~ q is accepted with
    probability ``accept(x)`` and a rejection draws from ``resample``."""
    return q * accept + (1 - (q * accept).sum()) * resample


def position_mistakes(p: torch.Tensor, q: torch.Tensor) -> dict:
    p, q = p.double(), q.double()
    ratio = torch.where(p > 0, q / p.clamp(min=1e-300), torch.ones_like(p))
    d = p - q
    return {
        INVERTED_RATIO: emitted(p, q, ratio.clamp(max=1), residual(p, q)),
        RESAMPLE_FROM_TARGET: emitted(p, q, (p / q).clamp(max=1), p),
        ABS_RESIDUAL: emitted(p, q, (p / q).clamp(max=1), d.abs() / d.abs().sum()),
    }


def greedy_reference(draft: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    target = logits.argmax(-1)
    n = 0
    while n < draft.shape[0] and int(draft[n]) == int(target[n]):
        n += 1
    return target[: n + 1].clone()


def greedy_mistakes(draft: torch.Tensor, logits: torch.Tensor) -> dict:
    right = greedy_reference(draft, logits)
    n = right.shape[0] - 1
    wrong = {GREEDY_NO_CORRECTION: right[:n]}
    if n < draft.shape[0]:
        wrong[GREEDY_DRAFT_AT_MISMATCH] = torch.cat([right[:n], draft[n:n + 1]])
    return wrong


def tokens_per_step(alpha: float, k: int) -> float:
    """(1 - alpha^(k+1)) / (1 - alpha), written as the sum it comes from: sum_{i=0..k} alpha^i."""
    return sum(alpha ** i for i in range(k + 1))
