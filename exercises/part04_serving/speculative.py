"""Speculative decoding: draft, then verify (textbook 08 §8.7 Speculative Decoding; Leviathan et al.
2023, Chen et al. 2023).

A small draft model proposes ``K`` tokens ``x_1..x_K``, sampled from its distributions ``q_i``; the
target model scores all of them in **one** forward, giving its distributions ``p_1..p_{K+1}``
(``p_i`` is the target's distribution for position i given the prefix and ``x_1..x_{i-1}``; the
last one, ``p_{K+1}``, follows the whole draft). Verification keeps a prefix of the draft and adds
exactly one token of the target's, so every step yields between 1 and K + 1 tokens.

**Greedy** (temperature 0): keep draft tokens while they equal the target's argmax; at the first
disagreement emit the target's argmax instead and stop; if all K agree, emit the bonus argmax of
``p_{K+1}``.

**Rejection sampling** (any temperature) keeps the output distributed *exactly* as the target's:
for i = 1..K, draw ``u ~ U[0, 1)`` and accept ``x_i`` if ``u < min(1, p_i(x_i) / q_i(x_i))``; at
the first rejection emit a token drawn from the residual ``norm(max(0, p_i - q_i))`` and stop; if
all K are accepted, emit a bonus token drawn from ``p_{K+1}``. Why it is exact: a token x comes
out at position i with probability ``q(x) min(1, p(x)/q(x)) + (1 - alpha) r(x) = min(p, q)(x) +
(p(x) - min(p, q)(x)) = p(x)``, with ``alpha = sum_x min(p(x), q(x))`` the acceptance rate and
``r`` the residual (``1 - alpha = sum_x max(0, p(x) - q(x))``).

With the same ``alpha`` at every position, a step yields ``1 + N`` tokens, N accepted drafts, and
``E[1 + N] = (1 - alpha^(K+1)) / (1 - alpha)`` (``K + 1`` when ``alpha = 1``).

Conventions: like vLLM's rejection sampler, the output of a batch is ``(B, K + 1)`` with the unused
tail filled with ``-1``. Probabilities are given (not logits): the caller applied temperature and
filters to both models first.

中文说明：
投机解码：小的草稿模型先猜 K 个 token，大模型一次前向验证。贪心验证：与目标模型 argmax 一致就接受，
第一个不一致处输出目标模型的 argmax 并停止，全部一致再加一个 bonus token。拒绝采样：以
min(1, p/q) 的概率接受草稿 token；第一次拒绝时从残差分布 norm(max(0, p − q)) 重新采样并停止；全部接受时
从 p_{K+1} 采一个 bonus token。这样输出的分布与目标模型完全相同。每步期望产出 (1 − α^{K+1}) / (1 − α)
个 token，α = Σ min(p, q) 是接受率。
"""
from __future__ import annotations

import torch


def greedy_verify(draft_tokens: torch.Tensor, target_logits: torch.Tensor) -> torch.Tensor:
    """Greedy verification of one draft.

    Args:
        draft_tokens: ``(K,)`` int64, K >= 1.
        target_logits: ``(K + 1, V)``: row i scores the token after the prefix and ``x_1..x_i``
            (row 0: the token the first draft token proposes; row K: the bonus position).

    Returns:
        ``(n,)`` int64, ``1 <= n <= K + 1``: the draft tokens that equal the target's argmax, up to
        the first that does not, then the target's argmax at that position (or at row K when all
        K agree).

    中文：贪心验证：接受与目标 argmax 一致的草稿前缀，再输出一个目标模型的 token。
    """
    raise NotImplementedError("greedy_verify")


def acceptance_rate(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``alpha = sum_x min(p(x), q(x))`` over the last dimension (``1 - TV(p, q)``).

    Args:
        p, q: ``(..., V)`` probabilities (target and draft).

    Returns:
        ``(...)``, same dtype.

    中文：接受率 α = Σ min(p, q)。
    """
    raise NotImplementedError("acceptance_rate")


def residual_distribution(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """The distribution a rejected position resamples from: ``max(0, p - q)`` normalised to sum 1
    over the last dimension. Where ``p == q`` (the residual is all zero) return ``p``: a rejection
    then has probability 0, and the result stays a distribution.

    Args:
        p, q: ``(..., V)``.

    Returns:
        ``(..., V)``, same dtype, each row summing to 1.

    中文：残差分布 norm(max(0, p − q))；p 与 q 相同时返回 p。
    """
    raise NotImplementedError("residual_distribution")


def expected_tokens_per_step(alpha: float, k: int) -> float:
    """Expected tokens one verification step yields with acceptance rate ``alpha`` at every
    position and ``k`` draft tokens: ``(1 - alpha^(k+1)) / (1 - alpha)``, or ``k + 1`` when
    ``alpha == 1``. It counts the accepted drafts plus the one token of the target's.

    中文：每步期望产出的 token 数 (1 − α^{k+1}) / (1 − α)。
    """
    raise NotImplementedError("expected_tokens_per_step")


def rejection_sample(draft_tokens: torch.Tensor, draft_probs: torch.Tensor, target_probs: torch.Tensor,
                     seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Verify B drafts at once by the rejection-sampling rule of the module docstring.

    Args:
        draft_tokens: ``(B, K)`` int64, K >= 1: ``x_i`` drawn from ``draft_probs[:, i]``.
        draft_probs: ``(B, K, V)``: ``q_i``.
        target_probs: ``(B, K + 1, V)``: ``p_i``, the last row for the bonus token.
        seed: seeds a ``torch.Generator`` for every random draw (never the global RNG); the same
            seed gives the same output.

    Returns:
        ``(output_tokens, num_accepted)``: ``output_tokens`` ``(B, K + 1)`` int64, row b holding its
        ``num_accepted[b]`` accepted draft tokens, then the one resampled (or bonus) token, then
        ``-1``; ``num_accepted`` ``(B,)`` int64 in ``0..K``. Rows are independent.

    中文：批量拒绝采样验证：逐位以 min(1, p/q) 接受草稿；第一次拒绝时从残差分布采样并停止；
    全部接受时从最后一行 p 采 bonus token。输出 (B, K+1)，未用位置填 −1。
    """
    raise NotImplementedError("rejection_sample")
