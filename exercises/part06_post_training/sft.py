"""Supervised fine-tuning (SFT): assistant-only labels, packing, and the loss (textbook 15 §15.3).

SFT trains a causal LM on chat transcripts with the ordinary next-token cross-entropy, but only
the assistant's tokens are targets: system and user tokens are context, never predicted. To
waste no compute on padding, several short examples are *packed* into one row; then each
example must see only itself (a block-diagonal causal mask) and its position ids must restart
at 0, so that the packed row gives every example exactly the loss it would get alone.

Conventions of this exercise (the same as transformers 5.17's ``LlamaForCausalLM(labels=...)``
and ``DataCollatorWithFlattening``):

- ``labels`` are aligned with ``input_ids`` (unshifted): ``labels[t]`` is token t itself, or
  ``IGNORE_INDEX = -100`` where token t is not a target. The *loss* does the shift: the logits
  at position t predict ``labels[t + 1]``; the last position predicts nothing and ``labels[0]``
  is never predicted;
- an assistant mask is 1 on the tokens the assistant wrote (transformers'
  ``apply_chat_template(..., return_assistant_tokens_mask=True)`` returns it as
  ``assistant_masks``);
- a packed row carries ``segment_ids``: ``segment_ids[t] = k`` for the tokens of the k-th
  example (0, 1, 2, ... in order);
- logits are float, labels/ids/positions/segments ``torch.long``, masks ``torch.bool``.

中文说明：
SFT 的损失就是下一个 token 的交叉熵，但只有助手写的 token 是预测目标（label），系统和用户的 token
只作上下文，label 设为 −100。labels 与 input_ids 对齐、不移位；损失里做移位：位置 t 的 logits 预测
labels[t+1]。为了不把算力浪费在 padding 上，把几条短样本拼接（packing）成一行：每条样本只能看见自己
（块对角的因果掩码：i 能看 j 当且仅当同一段且 j ≤ i），位置编号在每条样本开头重新从 0 开始；这样打包后
每条样本的损失与单独计算时完全相同。按 token 平均时长回答的 token 多、权重大；按序列平均时每条样本
权重相同（短回答里的每个 token 权重更大）。
"""
from __future__ import annotations

import torch

IGNORE_INDEX = -100


def assistant_labels(input_ids: torch.Tensor, assistant_mask: torch.Tensor) -> torch.Tensor:
    """The labels of a chat example: only the assistant's tokens carry loss.

    Args:
        input_ids: ``(T,)`` or ``(B, T)`` token ids (integer).
        assistant_mask: same shape, bool or 0/1 integers: 1 on the tokens the assistant wrote.

    Returns:
        ``torch.long``, same shape: ``input_ids`` where ``assistant_mask`` is 1, ``IGNORE_INDEX``
        (-100) elsewhere. Not shifted (the loss shifts). A new tensor; the inputs are untouched.

    Raises:
        ValueError: the two shapes differ.

    中文：助手 token 的 label 是它自己的 id，其余（系统、用户、模板标记）为 −100；这里不做移位。
    """
    raise NotImplementedError("assistant_labels")


def pack_examples(input_ids: list[torch.Tensor], labels: list[torch.Tensor]):
    """Pack several examples into one row.

    Args:
        input_ids: a non-empty list of ``(L_k,)`` integer tensors, L_k >= 1.
        labels: the matching ``(L_k,)`` labels (from :func:`assistant_labels`).

    Returns:
        A tuple ``(input_ids, labels, position_ids, segment_ids)``, each ``(sum L_k,)``
        ``torch.long``:

        - ``input_ids``: the examples concatenated in order;
        - ``labels``: concatenated, except that the *first* label of every example is
          ``IGNORE_INDEX``: in the packed row the previous example's last logits would predict
          it, which the example alone never does (transformers' ``DataCollatorWithFlattening``
          does the same);
        - ``position_ids``: ``0, 1, ..., L_k - 1`` for each example (restarting at 0);
        - ``segment_ids``: ``k`` on the tokens of the k-th example.

    Raises:
        ValueError: empty list, lengths of the two lists differ, an example empty, not 1-D, or
            its labels of another length.

    中文：拼接；每条样本的位置编号从 0 重新开始；每条样本第一个 label 置为 −100（否则会被上一条样本的
    最后一个位置去预测）；segment_ids 标出每个 token 属于第几条样本。
    """
    raise NotImplementedError("pack_examples")


def segment_causal_mask(segment_ids: torch.Tensor) -> torch.Tensor:
    """The block-diagonal (segment-aware) causal attention mask of a packed row.

    Args:
        segment_ids: ``(T,)`` or ``(B, T)`` integer segment ids, non-decreasing along T.

    Returns:
        ``torch.bool`` ``(T, T)`` or ``(B, T, T)``: ``mask[..., i, j]`` is True iff token i may
        attend to token j, that is ``segment_ids[i] == segment_ids[j]`` and ``j <= i``.
        (True = attend, the opposite of ``nn.MultiheadAttention``'s ``attn_mask``; transformers'
        eager attention wants an additive float mask: ``0`` where True, a large negative number
        where False.)

    中文：块对角因果掩码：i 能看 j 当且仅当同一段且 j ≤ i；普通因果掩码会让后面的样本看到前面的样本。
    """
    raise NotImplementedError("segment_causal_mask")


def causal_lm_loss(logits: torch.Tensor, labels: torch.Tensor, reduction: str = "token_mean",
                   segment_ids: torch.Tensor | None = None) -> torch.Tensor:
    """The SFT loss: next-token cross-entropy over the labelled tokens.

    Args:
        logits: ``(B, T, V)`` float.
        labels: ``(B, T)`` long, unshifted, ``IGNORE_INDEX`` where not a target.
        reduction:
            ``"token_mean"``: the sum of the per-token losses over the number of labelled
            tokens in the whole batch (every token weighs the same; transformers'
            ``LlamaForCausalLM`` loss). A long answer has many tokens, so it dominates;
            ``"sequence_mean"``: each sequence's token mean, then the mean over sequences
            (every example weighs the same). Sequences with no labelled token are left out.
        segment_ids: ``(B, T)`` long or None. None: each row is one sequence. Given (packed
            rows): a sequence is one (row, segment) pair, and a target ``labels[b, t + 1]``
            belongs to segment ``segment_ids[b, t + 1]``. Only ``"sequence_mean"`` uses it.

    Returns:
        A 0-dim float32 tensor::

            nll[b, t] = -log_softmax(logits[b, t])[labels[b, t + 1]]   for t = 0 .. T-2,
                        counted where labels[b, t + 1] != -100

        computed in float32; 0 (not NaN) when no token is labelled.

    Raises:
        ValueError: unknown ``reduction``.

    中文：位置 t 的 logits 预测 labels[t+1]（移位一次，不多不少）；label 为 −100 的位置不计。
    按 token 平均（与 transformers 相同，长回答主导）或按序列平均（每条样本权重相同）。
    """
    raise NotImplementedError("causal_lm_loss")
