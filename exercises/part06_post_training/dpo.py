"""Direct preference optimisation: DPO, IPO and conservative DPO (textbook 15 §15.3.1).

DPO trains a policy on preference pairs (prompt, chosen response y_w, rejected response y_l)
without a reward model, a critic or rollouts: the only other model is a frozen reference. Each
response is scored by its *sequence log-probability* under the policy and under the reference;
the implicit reward of a response is ``beta * (log pi(y|x) - log pi_ref(y|x))``, and the loss
pushes the chosen response's reward above the rejected one's.

Conventions of this exercise (trl 1.13 ``DPOTrainer._compute_loss`` holds the same formulas;
differences are stated where they occur):

- a batch holds B sequences ``input_ids (B, T)`` = prompt tokens followed by response tokens
  (and padding); ``response_mask (B, T)`` is 1 exactly on the response tokens;
- causal language models predict the *next* token: ``logits[:, t]`` is the distribution of
  ``input_ids[:, t + 1]``; token 0 is never predicted (it is always a prompt token);
- log-probabilities are computed in fp32 whatever the logits' dtype.

中文说明：
DPO 不需要奖励模型、critic 和采样，只需一个冻结的参考模型。对每条回答，用"下一个 token"的对数概率
求和得到序列对数概率（logits 在位置 t 预测的是位置 t+1 的 token，所以要错位一位；只统计回答部分的
token，提示词部分不计）。隐式奖励 = beta × (策略对数概率 − 参考对数概率)。DPO 损失是
−log σ(beta × (chosen 对数比 − rejected 对数比))；IPO 把它换成平方损失 (h − 1/(2·beta))²；
保守 DPO（cDPO）假设标签有 ε 的概率被标反，对两个方向的 logσ 按 (1−ε) 和 ε 加权。
"""
from __future__ import annotations

import torch


def sequence_logps(logits: torch.Tensor, input_ids: torch.Tensor, response_mask: torch.Tensor,
                   average: bool = False) -> torch.Tensor:
    """Log-probability of each sequence's response tokens under a causal LM.

    Args:
        logits: ``(B, T, V)`` float (fp32, fp16 or bf16): ``logits[b, t]`` scores the token at
            position ``t + 1`` of sequence ``b``.
        input_ids: ``(B, T)`` int64 token ids (prompt, then response, then padding).
        response_mask: ``(B, T)`` bool or integer, 1/True exactly on response tokens.
        average: False (default): the sum over response tokens; True: the mean over response
            tokens (sum divided by the number of response tokens, at least 1).

    Returns:
        ``(B,)`` float32::

            logp[b] = sum_{t=1}^{T-1} mask[b, t] * log_softmax(logits[b, t-1])[input_ids[b, t]]

        (divided by ``max(1, sum_t mask[b, t])`` when ``average``). A sequence without
        response tokens scores 0.

    Conventions: compute the log-softmax in fp32; ``response_mask[:, 0]`` is ignored (no logit
    predicts the first token); do not modify the inputs.

    中文：logits 错位一位（位置 t−1 的 logits 预测位置 t 的 token），fp32 下求 log_softmax，只对回答
    token 求和（average=True 时取平均）。
    """
    raise NotImplementedError("sequence_logps")


def dpo_rewards(policy_chosen_logps: torch.Tensor, policy_rejected_logps: torch.Tensor,
                ref_chosen_logps: torch.Tensor, ref_rejected_logps: torch.Tensor,
                beta: float = 0.1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The implicit rewards DPO optimises, and their margins.

    Args:
        policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps:
            ``(B,)`` float32 sequence log-probabilities (from :func:`sequence_logps`) of the
            chosen / rejected response under the policy / the frozen reference.
        beta: the KL-penalty strength (> 0).

    Returns:
        ``(chosen_rewards, rejected_rewards, margins)``, each ``(B,)`` float32::

            chosen_rewards   = beta * (policy_chosen_logps   - ref_chosen_logps)
            rejected_rewards = beta * (policy_rejected_logps - ref_rejected_logps)
            margins          = chosen_rewards - rejected_rewards

    中文：隐式奖励 = beta ×（策略对数概率 − 参考对数概率）；margin = chosen 奖励 − rejected 奖励。
    """
    raise NotImplementedError("dpo_rewards")


def dpo_loss(policy_chosen_logps: torch.Tensor, policy_rejected_logps: torch.Tensor,
             ref_chosen_logps: torch.Tensor, ref_rejected_logps: torch.Tensor,
             beta: float = 0.1, loss_type: str = "sigmoid", label_smoothing: float = 0.0) -> torch.Tensor:
    """Per-pair preference loss: DPO (sigmoid), conservative DPO, or IPO.

    Args:
        policy_chosen_logps, policy_rejected_logps, ref_chosen_logps, ref_rejected_logps:
            ``(B,)`` float32 sequence log-probabilities, as in :func:`dpo_rewards`.
        beta: > 0. For ``"sigmoid"`` the inverse temperature; for ``"ipo"`` the regulariser
            tau of the IPO paper (the target margin is ``1 / (2 * beta)``).
        loss_type: ``"sigmoid"`` (DPO, with optional label smoothing) or ``"ipo"``.
        label_smoothing: epsilon in ``[0, 0.5)``: the assumed probability that a pair's labels
            are flipped (conservative DPO, "cDPO"); only for ``"sigmoid"``.

    Returns:
        ``(B,)`` float32 loss per pair (the caller takes the mean). With
        ``h = (policy_chosen - ref_chosen) - (policy_rejected - ref_rejected)``::

            sigmoid: -(1 - eps) * logsigmoid(beta * h) - eps * logsigmoid(-beta * h)
            ipo:     (h - 1 / (2 * beta)) ** 2

        Use ``F.logsigmoid`` (stable for large ``|beta * h|``), never ``log(sigmoid(...))``.

    Raises:
        ValueError: unknown ``loss_type``; ``beta <= 0``; ``label_smoothing`` outside
            ``[0, 0.5)``; ``label_smoothing > 0`` with ``"ipo"``.

    Differences from trl 1.13 (``DPOTrainer._compute_loss``): its ``"sigmoid"`` loss ignores
    ``label_smoothing`` (cDPO there is the ``"aot_unpaired"`` formula for a batch of one pair);
    its ``"ipo"`` divides each log-ratio by the response length first, which equals passing
    ``sequence_logps(..., average=True)`` here. This exercise follows the papers: IPO on the
    log-probabilities it is given.

    中文：h 为 chosen 与 rejected 的对数比之差；DPO 损失 −logσ(beta·h)，cDPO 以 (1−ε)/ε 加权两个方向；
    IPO 为 (h − 1/(2·beta))²。注意 1/(2*beta) 的运算优先级。
    """
    raise NotImplementedError("dpo_loss")
