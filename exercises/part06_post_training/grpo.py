"""Group relative policy optimisation (GRPO): the loss from rewards and log-probs (textbook 15 §15.3.1).

GRPO drops PPO's critic: for each prompt it samples a *group* of G completions, scores each with
a reward, and uses the reward's standing inside its group as the advantage of every token of
that completion. The policy is then trained with PPO's clipped surrogate, token by token,
optionally with a KL penalty towards a frozen reference model, and the per-token losses are
averaged in one of several ways that differ in how long and short completions are weighted.

Conventions of this exercise (trl 1.13 ``GRPOTrainer`` holds the same formulas; differences are
stated where they occur):

- a batch holds B = num_groups * G completions, the G completions of one prompt in consecutive
  rows (rows ``g*G .. g*G + G - 1`` form group g);
- per-token tensors are ``(B, T)`` over the completion tokens only, with ``mask (B, T)`` 1 on
  real tokens and 0 on padding; ``logps`` are the current policy's log-probabilities of the
  sampled tokens, ``old_logps`` those of the policy that sampled them, ``ref_logps`` the frozen
  reference's;
- everything is float32.

中文说明：
GRPO 不用 critic：同一个提示采样 G 条回答组成一组，用奖励在组内的标准化分数（减组均值、除以组标准差）
作为这条回答每个 token 的优势；Dr. GRPO 认为除以标准差会带来偏差，只减均值。策略用 PPO 的截断代理目标
逐 token 训练：比率 = exp(logp − old_logp)，损失 = −min(比率·A, clip(比率)·A)。KL 惩罚用 k3 估计量
exp(ref − logp) − (ref − logp) − 1（恒非负、无偏、方差小）。聚合方式：按 token 平均（长回答权重大）、
按序列平均（原始 GRPO，长回答中每个 token 权重被稀释）、除以常数 B·L_max（Dr. GRPO，无长度偏差）。
"""
from __future__ import annotations

import torch


def group_advantages(rewards: torch.Tensor, group_size: int, scale: bool = True,
                     eps: float = 1e-4) -> torch.Tensor:
    """Group-normalised advantages, one per completion.

    Args:
        rewards: ``(B,)`` float32 rewards, groups of ``group_size`` consecutive rows.
        group_size: G >= 2, dividing B.
        scale: True (GRPO): divide by the group's standard deviation plus ``eps``; False
            (Dr. GRPO): only subtract the group mean.
        eps: added to the *standard deviation* (not the variance), so a group whose rewards are
            all equal gets advantages 0, not NaN. Default 1e-4, trl's value.

    Returns:
        ``(B,)`` float32::

            A_i = (r_i - mean_g) / (std_g + eps)      (scale=True)
            A_i =  r_i - mean_g                       (scale=False)

        where mean_g and std_g are over the G rewards of row i's group, and std_g is the
        *unbiased* sample standard deviation (divides by G - 1; ``torch.std``'s default, and
        trl's ``nanstd``).

    Raises:
        ValueError: ``group_size < 2`` or B not a multiple of ``group_size``.

    中文：组内标准化：减去同组均值，（scale=True 时）再除以同组无偏标准差 + eps（eps 加在标准差上）。
    注意是"每组"各自的均值和标准差，不是整批的。
    """
    raise NotImplementedError("group_advantages")


def kl_k3(logps: torch.Tensor, ref_logps: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(pi_theta || pi_ref) from the sampled tokens' log-probs.

    Args:
        logps, ref_logps: ``(B, T)`` float32 log-probabilities of the sampled tokens under the
            policy and the reference.

    Returns:
        ``(B, T)`` float32::

            k3 = exp(ref - logp) - (ref - logp) - 1

        Never negative (e^x >= 1 + x), zero where the two agree. (k1 = logp - ref is unbiased
        but can be negative per token; k2 = (logp - ref)**2 / 2 is biased.)

    中文：k3 估计量 exp(ref − logp) − (ref − logp) − 1，逐 token 非负；不要写成 k1 = logp − ref。
    """
    raise NotImplementedError("kl_k3")


def grpo_per_token_loss(logps: torch.Tensor, old_logps: torch.Tensor, advantages: torch.Tensor,
                        ref_logps: torch.Tensor | None = None, beta: float = 0.0,
                        eps_low: float = 0.2, eps_high: float | None = None) -> torch.Tensor:
    """The clipped surrogate (plus the KL penalty) of every token.

    Args:
        logps, old_logps: ``(B, T)`` float32 log-probs of the sampled tokens under the current
            policy and the sampling (old) policy.
        advantages: ``(B,)`` float32, one per completion (from :func:`group_advantages`),
            shared by all its tokens.
        ref_logps: ``(B, T)`` float32 reference log-probs; needed only when ``beta != 0``.
        beta: KL coefficient (0 disables the KL term; trl 1.13's default).
        eps_low, eps_high: the ratio is clipped to ``[1 - eps_low, 1 + eps_high]``;
            ``eps_high=None`` means ``eps_high = eps_low`` (DAPO's "clip-higher" sets it larger).

    Returns:
        ``(B, T)`` float32 (padding positions included; :func:`aggregate_loss` masks them)::

            ratio = exp(logps - old_logps)
            loss  = -min(ratio * A, clip(ratio, 1 - eps_low, 1 + eps_high) * A) + beta * k3

    Raises:
        ValueError: ``beta != 0`` and ``ref_logps`` is None.

    中文：比率用 old_logps（采样时的策略），不是参考模型；取 min 才是"悲观"的截断目标；KL 项按 beta 加上。
    """
    raise NotImplementedError("grpo_per_token_loss")


def aggregate_loss(per_token_loss: torch.Tensor, mask: torch.Tensor, mode: str = "token_mean",
                   max_len: int | None = None) -> torch.Tensor:
    """Average the per-token losses over the real tokens of the batch.

    Args:
        per_token_loss: ``(B, T)`` float32.
        mask: ``(B, T)`` bool or integer, 1 on real completion tokens.
        mode:
            ``"token_mean"``: ``sum(loss * mask) / sum(mask)``: every token weighs the same
            (DAPO; trl's ``"dapo"`` and ``"bnpo"`` on one process without accumulation);
            ``"sequence_mean"``: the mean over sequences of each sequence's token mean
            (the original GRPO; trl's ``"grpo"``): a token of a short completion weighs more;
            ``"constant"``: ``sum(loss * mask) / (B * max_len)`` (Dr. GRPO; trl's
            ``"dr_grpo"`` with ``max_completion_length = max_len``): no length normalisation.
        max_len: the constant L_max, required (>= 1) for ``"constant"``.

    Returns:
        A 0-dim float32 tensor. Counts are clamped to at least 1 (an all-padding batch or row
        contributes 0, not NaN).

    Raises:
        ValueError: unknown ``mode``; ``"constant"`` without ``max_len >= 1``.

    中文：三种聚合——按 token 平均、按序列平均再对序列平均、除以常数 B·L_max。padding 不计入。
    """
    raise NotImplementedError("aggregate_loss")
