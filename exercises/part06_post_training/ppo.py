"""PPO for language models: GAE, clipped policy and value losses, entropy bonus (textbook 15 §15.3.1).

PPO-based RLHF keeps four models (actor, critic, reward, reference). From a rollout it needs, for
every step t: the reward r_t, the critic's value V(s_t), and whether the episode ended at t.
Generalised advantage estimation (GAE) turns these into advantages by a reverse recursion; the
actor is trained with the clipped surrogate, the critic with a clipped regression to the
returns, and an entropy bonus keeps the policy from collapsing too early.

Conventions of this exercise (CleanRL / the PPO paper; trl 1.13 has no PPO trainer any more):

- tensors are ``(N, T)``: N parallel rollouts (sequences), T steps (tokens);
- ``dones[:, t] = 1`` means the episode ended *at* step t: the state after step t is terminal,
  so nothing is bootstrapped past it and the advantage recursion restarts there;
  ``last_value (N,)`` is V of the state after step T - 1 (used unless ``dones[:, T-1]``);
- float32 throughout; token means over a ``mask`` of real tokens.

中文说明：
GAE 从后往前递推：delta_t = r_t + γ·V_{t+1}·(1 − done_t) − V_t，A_t = delta_t + γλ·(1 − done_t)·A_{t+1}；
回合在 t 结束时既不自举下一状态的价值，也要把递推"清零"。回报 = A + V（用白化之前的优势！）。
策略损失是截断代理目标 −min(ratio·A, clip(ratio)·A)；价值损失把新价值限制在旧价值 ±c 的范围内，
取未截断与截断平方误差的较大者再乘 0.5；熵奖励从总损失中减去（鼓励探索）。
"""
from __future__ import annotations

import torch


def gae(rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor, last_value: torch.Tensor,
        gamma: float = 0.99, lam: float = 0.95, normalize: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation with episode ends, and the value targets.

    Args:
        rewards: ``(N, T)`` float32 reward of each step.
        values: ``(N, T)`` float32 critic values V(s_t).
        dones: ``(N, T)`` bool or integer, 1 where the episode ended at step t.
        last_value: ``(N,)`` float32 V of the state after the last step (bootstrap).
        gamma: discount; lam: the GAE lambda.
        normalize: whiten the returned advantages (see :func:`whiten`, over all N*T elements).

    Returns:
        ``(advantages, returns)``, both ``(N, T)`` float32. Going backwards from t = T - 1::

            next_V_t = values[:, t + 1]   (last_value for t = T - 1)
            delta_t  = r_t + gamma * next_V_t * (1 - done_t) - V_t
            A_t      = delta_t + gamma * lam * (1 - done_t) * A_{t+1}       (A_T = 0)
            returns  = A + V

        ``returns`` always uses the raw advantages; with ``normalize`` only the returned
        advantages are whitened, *after* the returns were formed.

    中文：从后往前递推；done 处既不自举也要重置递推；returns 用未白化的优势计算。
    """
    raise NotImplementedError("gae")


def whiten(x: torch.Tensor, mask: torch.Tensor | None = None, eps: float = 1e-8) -> torch.Tensor:
    """Normalise to mean 0 and std 1 over the (masked) elements.

    Args:
        x: float32 tensor of any shape.
        mask: same shape, bool or integer; None means every element. Needs at least 2 elements.
        eps: added to the std.

    Returns:
        float32, the shape of ``x``: ``(x - mean) / (std + eps)`` with mean and the *unbiased*
        std over the masked elements; masked-out elements are 0.

    中文：在掩码内的元素上减均值、除以（无偏）标准差 + eps；掩码外置 0。
    """
    raise NotImplementedError("whiten")


def clipped_policy_loss(logps: torch.Tensor, old_logps: torch.Tensor, advantages: torch.Tensor,
                        clip_range: float = 0.2) -> torch.Tensor:
    """PPO's clipped surrogate, per token.

    Args:
        logps, old_logps: ``(N, T)`` float32 log-probs of the taken actions under the current
            and the rollout policy.
        advantages: ``(N, T)`` float32.
        clip_range: c.

    Returns:
        ``(N, T)`` float32: ``-min(ratio * A, clip(ratio, 1 - c, 1 + c) * A)``, ratio = exp(logps - old_logps).

    中文：比率 exp(logp − old_logp)；取未截断与截断两项的 min（悲观一侧），再取负号作为损失。
    """
    raise NotImplementedError("clipped_policy_loss")


def clipped_value_loss(values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor,
                       clip_range: float = 0.2) -> torch.Tensor:
    """The critic's clipped regression loss, per token.

    Args:
        values: ``(N, T)`` float32 current critic values.
        old_values: ``(N, T)`` float32 values recorded at rollout time.
        returns: ``(N, T)`` float32 targets (from :func:`gae`).
        clip_range: c; the new value may move at most c away from the *old* value.

    Returns:
        ``(N, T)`` float32::

            V_clipped = old_values + clip(values - old_values, -c, c)
            loss      = 0.5 * max((values - returns)**2, (V_clipped - returns)**2)

    中文：截断以旧价值为中心（old ± c），不是以新价值为中心；取两者平方误差的较大者乘 0.5。
    """
    raise NotImplementedError("clipped_value_loss")


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of the categorical distribution at every position.

    Args:
        logits: ``(..., V)`` float (fp32, fp16 or bf16).

    Returns:
        ``(...)`` float32: ``-sum_v p_v * log p_v``, computed in fp32 with ``log_softmax``
        (stable for large logits).

    中文：熵 = −Σ p·log p，在 fp32 下用 log_softmax 计算。
    """
    raise NotImplementedError("entropy_from_logits")


def ppo_loss(logps: torch.Tensor, old_logps: torch.Tensor, advantages: torch.Tensor, values: torch.Tensor,
             old_values: torch.Tensor, returns: torch.Tensor, entropy: torch.Tensor, mask: torch.Tensor,
             clip_range: float = 0.2, value_clip_range: float = 0.2, vf_coef: float = 0.5,
             ent_coef: float = 0.01) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The PPO objective of one minibatch.

    Args:
        logps, old_logps, advantages, values, old_values, returns, entropy: ``(N, T)`` float32.
        mask: ``(N, T)`` bool or integer, 1 on real tokens.
        clip_range: the policy's c; value_clip_range: the critic's c.
        vf_coef, ent_coef: weights of the value loss and the entropy bonus.

    Returns:
        ``(total, policy_loss, value_loss, entropy_mean)``, each a 0-dim float32 tensor; the
        last three are token means over the mask (count clamped to at least 1)::

            total = policy_loss + vf_coef * value_loss - ent_coef * entropy_mean

    中文：三项都在掩码内按 token 平均；熵是"奖励"，从总损失中减去。
    """
    raise NotImplementedError("ppo_loss")
