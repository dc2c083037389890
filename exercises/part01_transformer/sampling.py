"""Sampling and decoding (textbook 01 §1.2.5, 采样与解码).

The model gives one row of logits per sequence; a decoding strategy turns it into the next
token. Greedy takes the arg-max. Sampling first reshapes the distribution, then draws:

- repetition penalty (CTRL, HF ``RepetitionPenaltyLogitsProcessor``): tokens already in the
  context become less likely;
- temperature: ``logits / T`` *before* the softmax (T < 1 sharpens, T > 1 flattens);
- top-k: keep the k highest logits;
- top-p (nucleus): keep the smallest set of most likely tokens whose probability reaches p;
- min-p: keep tokens whose probability is at least ``min_p`` times the top token's.

Every filter takes logits ``(B, V)`` (one row per sequence, V the vocabulary size) and returns a
new tensor of the same shape and dtype in which the removed entries are ``-inf`` and the kept
ones are unchanged; the input is never modified. Filters work on rows that already hold
``-inf`` entries (they compose: top-k, then top-p, then min-p).

中文说明：
解码就是把每一行 logits 变成下一个 token。贪心取最大值；采样则先"整形"分布再抽样：
重复惩罚让上下文里出现过的 token 变得不那么可能（正 logit 除以 penalty，负 logit 乘以 penalty）；
温度是在 softmax **之前**把 logits 除以 T；top-k 只保留最大的 k 个 logit（与第 k 大并列的也保留）；
top-p（nucleus）保留概率从大到小累加刚好达到 p 的最小集合（概率最大的 token 永远保留）；
min-p 保留概率不小于 min_p × 最大概率的 token。被过滤掉的位置设为 -inf。
带种子的 sample 用由 seed 构造的 torch.Generator 抽样，同一个 seed 结果完全相同，且不改动全局随机状态。
"""
from __future__ import annotations

import torch


def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Divide the logits by the temperature.

    Args:
        logits: ``(B, V)`` float logits.
        temperature: ``T > 0``; raise ``ValueError`` for ``T <= 0`` (greedy decoding is
            :func:`sample` with ``temperature=0``, not a division by zero).

    Returns:
        ``(B, V)`` tensor ``logits / T`` of the input's dtype. The softmax of the result is the
        tempered distribution ``p_i ∝ exp(z_i / T)``; dividing *probabilities* by T would change
        nothing after renormalisation.

    中文：logits 除以温度 T（在 softmax 之前）；T <= 0 抛出 ValueError。
    """
    raise NotImplementedError("apply_temperature")


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep the k largest logits of each row; set the others to ``-inf``.

    Args:
        logits: ``(B, V)`` float logits (may already contain ``-inf``).
        k: ``k >= 1``; ``k >= V`` keeps everything. Raise ``ValueError`` for ``k < 1``.

    Returns:
        ``(B, V)``: entry ``i`` of row ``b`` is kept iff ``logits[b, i] >= t_b`` where ``t_b`` is
        the k-th largest value of row ``b``.

    Ties: every token tied with the k-th largest value is kept, so a row may keep more than k
    tokens (as HF ``TopKLogitsWarper``); which of several tied tokens ``torch.topk`` happens to
    return must not matter.

    中文：每行只保留最大的 k 个 logit，其余设为 -inf；与第 k 大相等的 token 全部保留。
    """
    raise NotImplementedError("top_k_filter")


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Nucleus filtering: keep the smallest set of most likely tokens whose probability reaches p.

    Args:
        logits: ``(B, V)`` float logits (may already contain ``-inf``).
        p: ``0 < p <= 1``; ``p = 1`` keeps every token. Raise ``ValueError`` outside that range.

    Returns:
        ``(B, V)``. With ``probs = softmax(logits)`` (computed in fp32) a token is kept iff the
        total probability of the tokens *strictly more likely* than it is ``< p``::

            sort probs descending:  q_1 >= q_2 >= ... ;  S_j = q_1 + ... + q_j
            keep rank j  iff  S_{j-1} < p        (S_0 = 0, so the top token is always kept)

        i.e. the token whose probability makes the running sum cross p is kept too.

    Ties: tokens of equal probability are kept or removed together (the rule above depends only
    on the probabilities, not on the order a sort puts equal values in). Equivalently: count
    the ranks ``m`` with ``S_{j-1} < p``, then keep every token at least as likely as ``q_m``.
    transformers' ``TopPLogitsWarper`` differs here: it sorts ascending and removes tokens while the
    cumulative sum is ``<= 1 - p``, so it can cut inside a tie (which tied tokens go depends on the
    sort); an answer written that way fails the tie tests, which say so by name.

    中文：按概率从大到小累加，保留"累加到它之前还不足 p"的所有 token——也就是使累加和首次达到 p
    的那个 token 也要保留；最大的 token 永远保留；概率相等的 token 同进同退（transformers 的
    TopPLogitsWarper 会在并列处截断，与这里的约定不同）。
    """
    raise NotImplementedError("top_p_filter")


def min_p_filter(logits: torch.Tensor, min_p: float) -> torch.Tensor:
    """Keep tokens whose probability is at least ``min_p`` times the row's largest probability.

    Args:
        logits: ``(B, V)`` float logits (may already contain ``-inf``).
        min_p: ``0 <= min_p <= 1``; 0 keeps everything. Raise ``ValueError`` outside that range.

    Returns:
        ``(B, V)``: token ``i`` is kept iff ``probs[b, i] >= min_p * max_j probs[b, j]`` with
        ``probs = softmax(logits)`` in fp32 (equivalently ``logits[b, i] >= max_j logits[b, j]
        + log(min_p)``). The threshold scales with the *top* probability, not with the sum of the
        probabilities (which is 1).

    中文：保留概率 >= min_p × 该行最大概率 的 token（阈值随最大概率缩放），其余设为 -inf。
    """
    raise NotImplementedError("min_p_filter")


def apply_repetition_penalty(logits: torch.Tensor, context_ids: torch.Tensor, penalty: float) -> torch.Tensor:
    """Penalise tokens that already occur in the context (CTRL / HF convention).

    Args:
        logits: ``(B, V)`` float logits.
        context_ids: ``(B, T)`` int64 token ids seen so far in each row's sequence (``T >= 0``);
            a token that occurs several times is penalised once.
        penalty: ``> 0``; 1 changes nothing, ``> 1`` discourages repetition. Raise ``ValueError``
            for ``penalty <= 0``.

    Returns:
        ``(B, V)``: for tokens ``i`` in row ``b``'s context::

            z_i / penalty   if z_i > 0
            z_i * penalty   if z_i <= 0

        so that with ``penalty > 1`` the token always becomes *less* likely (a negative logit
        divided by the penalty would move towards 0, i.e. become *more* likely). Other tokens
        are unchanged.

    中文：上下文中出现过的 token：正 logit 除以 penalty，负 logit 乘以 penalty（两者都降低其概率）；
    其余 token 不变；同一 token 出现多次只惩罚一次。
    """
    raise NotImplementedError("apply_repetition_penalty")


def sample(logits: torch.Tensor, seed: int, temperature: float = 1.0, top_k: int = 0,
           top_p: float = 1.0, min_p: float = 0.0) -> torch.Tensor:
    """Draw one token per row, reproducibly for a given seed.

    Args:
        logits: ``(B, V)`` float logits.
        seed: the draw uses ``torch.Generator(device=logits.device).manual_seed(seed)`` and that
            generator only: the same seed gives the same tokens, and the global RNG
            (``torch.manual_seed``'s) is neither used nor changed.
        temperature: ``0`` means greedy (``argmax``, the lowest index among ties; the filters are
            then irrelevant); otherwise ``> 0`` as in :func:`apply_temperature`.
        top_k: ``0`` disables top-k, otherwise as in :func:`top_k_filter`.
        top_p: ``1.0`` disables top-p, otherwise as in :func:`top_p_filter`.
        min_p: ``0.0`` disables min-p, otherwise as in :func:`min_p_filter`.

    Returns:
        ``(B,)`` int64 token ids. Order: temperature, then top-k, top-p, min-p (each on the
        previous one's output, as HF's warpers), then ``softmax`` in fp32 and one draw per row
        from it (the reference uses ``torch.multinomial(probs, 1, generator=g)``). A filtered
        token is never drawn.

    中文：温度 → top-k → top-p → min-p → softmax → 用 seed 构造的 Generator 抽样，每行一个 token；
    temperature=0 表示贪心取 argmax。同一 seed 必须得到同样结果，且不能改动全局随机数状态。
    """
    raise NotImplementedError("sample")
