"""Memory budgets: parameters, gradients, optimizer states, activations and the KV cache
(textbook 02 §2.2.8 ZeRO; 05 §5.2 KV 布局; topic Part 02 · 75 显存预算).

Before launching a job, an engineer adds up what every GPU must hold. This exercise writes those
sums as functions of a LLaMA-shaped model and a parallel layout.

The model is a dict with transformers' ``LlamaConfig`` names::

    {"vocab_size": V, "hidden_size": h, "intermediate_size": i, "num_hidden_layers": L,
     "num_attention_heads": a, "num_key_value_heads": a_kv, "tie_word_embeddings": bool,
     "head_dim": d}          # optional: default h // a

and, for DeepSeek-style multi-head latent attention (MLA), ``"kv_lora_rank"`` and
``"qk_rope_head_dim"`` (only :func:`kv_cache_bytes` reads them).

Conventions (those of the textbook and the ZeRO paper):

- mixed-precision training with Adam keeps per parameter 2 bytes of bf16/fp16 weights, 2 bytes of
  gradients and K = 12 bytes of optimizer state (fp32 master weights, momentum, variance):
  ``2Ψ + 2Ψ + KΨ = 16Ψ`` bytes;
- ZeRO over ``dp`` data-parallel ranks partitions: stage 1 the optimizer states, stage 2 also the
  gradients, stage 3 also the parameters (each partitioned quantity divided by ``dp``, exactly,
  without the padding of Part 02's ``memory_per_rank``);
- tensor parallelism over ``tp`` ranks and pipeline parallelism over ``pp`` stages each hold
  ``Ψ / (tp * pp)`` parameters (the textbook's even split; replicated norms and embeddings ignored);
- activations: Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
  Models"), Table 2, in bytes per transformer layer with 16-bit activations, for sequence length
  ``s``, micro-batch ``b``, hidden ``h``, heads ``a``. It models a GPT block (MLP of 4h, dropout);
  we use it as published for the LLaMA shapes too, as the textbook does.

中文说明：
训练显存 = 参数 2Ψ + 梯度 2Ψ + 优化器状态 12Ψ（fp32 主权重 + 一阶矩 + 二阶矩）+ 激活。ZeRO-1 切分优化器
状态，ZeRO-2 再切分梯度，ZeRO-3 再切分参数；TP×PP 让每张卡只放 Ψ/(tp·pp) 个参数。激活按 Korthikanti
等人的公式：每层 sbh(34 + 5as/h) 字节（不重计算、无 TP），全重计算时每层只存输入 2sbh。推理时的 KV 缓存 =
2（K 和 V）× 层数 × KV 头数 × 头维度 × token 数 × 字节数——用的是 KV 头数，不是查询头数；MLA 只缓存
压缩后的潜向量和 RoPE 键。
"""
from __future__ import annotations

import torch


def param_count(config: dict) -> int:
    """Number of parameters Ψ of a LLaMA model (``LlamaForCausalLM``), without biases.

    Args:
        config: the model dict described in the module docstring.

    Returns:
        Ψ (int)::

            embeddings   V*h, plus an lm_head of V*h unless tie_word_embeddings
            per layer    q: h*(a*d), k and v: h*(a_kv*d) each, o: (a*d)*h,
                         gate, up, down: 3*h*i, two RMSNorm weights: 2*h
            final norm   h

        It equals ``sum(p.numel() for p in LlamaForCausalLM(LlamaConfig(**config)).parameters())``
        (a tied lm_head shares the embedding's tensor and is counted once).

    中文：LLaMA 参数量：嵌入 V·h（不共享时 lm_head 再加 V·h），每层 Q/O 为 h·a·d、K/V 为 h·a_kv·d，
    FFN 为 3·h·i，两个 RMSNorm 各 h；最后的 norm 为 h。
    """
    raise NotImplementedError("param_count")


def model_state_bytes(num_params: int, dp: int = 1, zero_stage: int = 0, tp: int = 1, pp: int = 1,
                      optimizer_bytes: int = 12) -> dict[str, float]:
    """Bytes of parameters, gradients and optimizer states on one GPU.

    Args:
        num_params: Ψ, the whole model's parameters.
        dp: data-parallel degree (the ZeRO group).
        zero_stage: 0 (plain data parallelism), 1, 2 or 3.
        tp, pp: tensor- and pipeline-parallel degrees.
        optimizer_bytes: K, bytes of optimizer state per parameter (12 for mixed-precision Adam).

    Returns:
        ``{"params": ..., "grads": ..., "optimizer": ..., "total": ...}`` in bytes (floats). With
        ``P = Ψ / (tp * pp)``::

            stage 0: params 2P,       grads 2P,       optimizer K*P
            stage 1: params 2P,       grads 2P,       optimizer K*P/dp
            stage 2: params 2P,       grads 2P/dp,    optimizer K*P/dp
            stage 3: params 2P/dp,    grads 2P/dp,    optimizer K*P/dp

    Raises:
        ValueError: ``zero_stage`` not in 0..3; a degree < 1.

    中文：ZeRO-1 只切优化器状态，ZeRO-2 再切梯度，ZeRO-3 才切参数；TP×PP 先把参数均分。
    """
    raise NotImplementedError("model_state_bytes")


def activation_bytes(config: dict, seq_len: int, micro_batch: int, tp: int = 1, pp: int = 1,
                     sequence_parallel: bool = False, recompute: str = "none") -> float:
    """Activation memory of one GPU during training (Korthikanti et al. 2022, Table 2).

    Args:
        config: the model dict (reads ``hidden_size`` h, ``num_attention_heads`` a,
            ``num_hidden_layers`` L).
        seq_len: s. micro_batch: b.
        tp: tensor-parallel degree t. pp: pipeline stages.
        sequence_parallel: Megatron sequence parallelism (splits the norm and dropout
            activations over the tp ranks too).
        recompute: ``"none"``, ``"selective"`` (the attention's softmax/dropout recomputed) or
            ``"full"`` (only each layer's input kept).

    Returns:
        bytes (float) = ``L * per_layer`` with, per layer::

            none,      no SP:  s*b*h * (10 + 24/t + 5*a*s/(h*t))
            none,      SP:     s*b*h * (34/t + 5*a*s/(h*t))
            selective, no SP:  s*b*h * (10 + 24/t)
            selective, SP:     s*b*h * 34/t
            full,      no SP:  2*s*b*h
            full,      SP:     2*s*b*h/t

        (t = 1, no recomputation: ``s*b*h*(34 + 5*a*s/h)``.) Pipeline parallelism does not
        reduce it: under 1F1B the first stage holds ``pp`` micro-batches in flight, each through
        ``L/pp`` layers, which is ``L`` layers' worth whatever ``pp`` is.

    Raises:
        ValueError: unknown ``recompute``.

    中文：按 Korthikanti 等人的公式计算每层激活并乘以层数；流水线并行不减少第一段的激活（1F1B 下它同时
    持有 pp 个微批次，每个 L/pp 层）。
    """
    raise NotImplementedError("activation_bytes")


def kv_cache_bytes(config: dict, tokens: int, dtype: torch.dtype = torch.bfloat16, tp: int = 1) -> int:
    """Bytes of KV cache one GPU holds for ``tokens`` cached tokens (all sequences together).

    Args:
        config: the model dict. MHA is ``num_key_value_heads == num_attention_heads``, GQA/MQA
            fewer KV heads; a config with ``"kv_lora_rank"`` (and ``"qk_rope_head_dim"``) is MLA.
        tokens: cached tokens, summed over the batch (batch * sequence length).
        dtype: the cache's dtype (``itemsize`` s bytes per element).
        tp: tensor-parallel degree: the KV heads are split over the tp ranks; when there are
            fewer KV heads than ranks each rank keeps one (replicated) head. MLA's latent is
            replicated on every rank.

    Returns:
        bytes (int)::

            MHA/GQA:  2 * L * (a_kv / tp, at least 1) * d * tokens * s     (2: K and V)
            MLA:      L * (kv_lora_rank + qk_rope_head_dim) * tokens * s

    Raises:
        ValueError: neither ``a_kv % tp`` nor ``tp % a_kv`` is 0.

    中文：KV 缓存 = 2 × L × 每卡 KV 头数 × d × token 数 × 字节数；MLA 每层每个 token 只存
    kv_lora_rank + qk_rope_head_dim 个数。
    """
    raise NotImplementedError("kv_cache_bytes")
