"""ZeRO: a flat, padded parameter buffer split evenly over ranks, and a sharded AdamW step.

Textbook 02 §2.2.8 (ZeRO 1/2/3, FSDP).

Plain data parallelism keeps a full copy of the parameters, gradients and optimizer states on
every rank. With mixed-precision Adam (the ZeRO paper's accounting) a model of Ψ parameters
needs 2Ψ bytes of fp16 parameters, 2Ψ of fp16 gradients and KΨ = 12Ψ of optimizer states
(fp32 master weights, momentum and variance) per rank: 16Ψ in all. ZeRO partitions them:

- stage 1 (P_os): optimizer states sharded: 2Ψ + 2Ψ + 12Ψ/N;
- stage 2 (P_os+g): gradients too: 2Ψ + (2 + 12)Ψ/N;
- stage 3 (P_os+g+p): parameters too: (2 + 2 + 12)Ψ/N.

The partition rule here (DeepSpeed ZeRO-1/2's flat-buffer layout): the parameters, in order,
are flattened back to back into one 1-D buffer of ``total`` elements; the buffer is zero-padded
to ``shard_size * world_size`` elements with ``shard_size = ceil(total / world_size)`` (the
alignment is world_size elements; DeepSpeed additionally rounds up for NCCL alignment, we do
not); rank r owns the contiguous range ``[r * shard_size, (r + 1) * shard_size)``. A parameter
may straddle ranks; the last ranks may hold only padding. The valid part of rank r's shard is
exactly ``torch.chunk(flat, world_size)[r]`` (empty past the number of chunks), which is also
how FSDP2 shards a 1-D parameter.

How the sharded step runs: :func:`zero_adamw_step` is called on every rank at once (SPMD, as
under torchrun), each call with its own ``rank``, its own local gradient and its own optimizer
state shard; it may use ``dist.reduce_scatter_tensor`` and ``dist.all_gather_into_tensor``
(``import torch.distributed as dist``). Tests run it on a simulated group (threads) and on real
gloo processes, world sizes 2 and 3; in grading only data crosses between the test and your
code, so no communicator object is passed: the functions take ``rank`` and ``world_size``.

中文说明：
ZeRO 把"每个 rank 都存一整份"的参数、梯度、优化器状态切分到 N 个 rank。混合精度 Adam 下每个参数
占 2（fp16 参数）+ 2（fp16 梯度）+ 12（fp32 主参数、一阶矩、二阶矩，K=12）字节。Stage 1 切优化器
状态，Stage 2 再切梯度，Stage 3 再切参数。切分方式：所有参数按顺序展平拼成一个一维缓冲区，补零到
world_size 的整数倍（每个 rank 分 ceil(total/N) 个元素），rank r 拥有 [r*S, (r+1)*S) 这一段；一个参数
可能跨两个 rank。分片 AdamW：梯度先 ReduceScatter（取平均），每个 rank 只更新自己那段参数和优化器状态，
最后 AllGather 拼回完整参数，结果必须与不分片的 torch.optim.AdamW 完全一致。
"""
from __future__ import annotations

import torch
import torch.distributed as dist  # noqa: F401  (what zero_adamw_step talks through)

BYTES_PARAM, BYTES_GRAD, BYTES_OPTIMIZER = 2, 2, 12  # ZeRO paper: fp16 params and grads, K = 12


def shard_size(total_numel: int, world_size: int) -> int:
    """Elements each rank owns of the padded flat buffer.

    Args:
        total_numel: sum of the parameters' numels (>= 0).
        world_size: number of ranks N (>= 1).

    Returns:
        ``ceil(total_numel / world_size)`` (an int). The padded buffer has
        ``shard_size * world_size`` elements; e.g. 10 elements on 4 ranks: 3 each, 12 in all.

    中文：每个 rank 分到的元素数 = ceil(total / N)（向上取整，保证最后一个 rank 不越界）。
    """
    raise NotImplementedError("shard_size")


def flatten_and_pad(tensors: list[torch.Tensor], world_size: int) -> torch.Tensor:
    """Flatten the tensors back to back into one 1-D buffer, zero-padded for world_size ranks.

    Args:
        tensors: the parameters in order, any shapes, one dtype. Not modified.
        world_size: number of ranks N.

    Returns:
        1-D tensor of the tensors' dtype and ``shard_size(total, N) * N`` elements:
        ``cat([t.reshape(-1) for t in tensors])`` followed by zeros.

    中文：按顺序展平拼接，再补零到 N 的整数倍（长度 = ceil(total/N) * N）。
    """
    raise NotImplementedError("flatten_and_pad")


def owner_map(numels: list[int], world_size: int) -> list[tuple[int, int, int, int]]:
    """Which rank owns which slice of which parameter.

    Args:
        numels: the parameters' numels, in buffer order (each >= 1).
        world_size: number of ranks N.

    Returns:
        A list of ``(rank, param_index, start, end)``: rank ``rank`` owns elements
        ``[start, end)`` of parameter ``param_index`` (indices into the parameter's flattened
        view). One entry per non-empty piece (a rank that holds only padding has none), sorted
        by rank, then by parameter index. Rank r owns the buffer range
        ``[r * S, (r + 1) * S)`` with ``S = shard_size(sum(numels), N)``.
        Example: ``owner_map([3, 4], 2)`` (S = 4) is
        ``[(0, 0, 0, 3), (0, 1, 0, 1), (1, 1, 1, 4)]``.

    中文：列出每个 rank 拥有哪个参数的哪一段 [start, end)；一个参数可以被切到两个 rank 上。
    """
    raise NotImplementedError("owner_map")


def memory_per_rank(num_params: int, world_size: int, stage: int) -> dict[str, int]:
    """Bytes of model states on one rank at ZeRO stage 0 (plain DP), 1, 2 or 3.

    Args:
        num_params: Ψ, the number of parameters.
        world_size: N, the data-parallel degree.
        stage: 0, 1, 2 or 3; anything else raises ``ValueError``.

    Returns:
        ``{"params": ..., "grads": ..., "optimizer": ..., "total": ...}`` in bytes (ints), with
        2 bytes per fp16 parameter, 2 per fp16 gradient and K = 12 per parameter of optimizer
        state (fp32 master weights + momentum + variance). A sharded quantity counts the rank's
        padded shard, ``S = shard_size(Ψ, N)`` elements; an unsharded one counts Ψ::

            stage 0: params 2Ψ,  grads 2Ψ,  optimizer 12Ψ
            stage 1: params 2Ψ,  grads 2Ψ,  optimizer 12S
            stage 2: params 2Ψ,  grads 2S,  optimizer 12S
            stage 3: params 2S,  grads 2S,  optimizer 12S

    中文：按 ZeRO 论文的混合精度约定（2+2+12 字节/参数）计算每个 rank 的显存；被切分的部分按
    ceil(Ψ/N) 个元素计。
    """
    raise NotImplementedError("memory_per_rank")


def adamw_update(param: torch.Tensor, grad: torch.Tensor, exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor,
                 step: int, lr: float, betas: tuple[float, float], eps: float,
                 weight_decay: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One AdamW step on plain tensors, as ``torch.optim.AdamW`` computes it.

    Args:
        param, grad, exp_avg, exp_avg_sq: tensors of one shape, fp32. Not modified.
        step: the step number *after* counting this step (1 for the first step).
        lr, betas = (beta1, beta2), eps, weight_decay: the optimizer's hyper-parameters.

    Returns:
        ``(new_param, new_exp_avg, new_exp_avg_sq)``::

            param   = param * (1 - lr * weight_decay)         # decoupled weight decay
            m       = beta1 * m + (1 - beta1) * grad
            v       = beta2 * v + (1 - beta2) * grad ** 2
            m_hat   = m / (1 - beta1 ** step);  v_hat = v / (1 - beta2 ** step)
            param   = param - lr * m_hat / (sqrt(v_hat) + eps)

        Weight decay is *decoupled* (applied to the parameter), not an L2 term added to the
        gradient (that is Adam with L2, which AdamW's paper shows is different).

    中文：AdamW 一步：解耦权重衰减（直接乘 1 - lr·wd，而不是把 wd·param 加进梯度），一阶、二阶矩
    指数滑动平均，并做偏差校正 1/(1 - beta^step)。
    """
    raise NotImplementedError("adamw_update")


def zero_adamw_step(flat_param: torch.Tensor, flat_grad: torch.Tensor, exp_avg: torch.Tensor,
                    exp_avg_sq: torch.Tensor, step: int, rank: int, world_size: int, lr: float,
                    betas: tuple[float, float], eps: float,
                    weight_decay: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One data-parallel AdamW step with gradients and optimizer states sharded (ZeRO-2).

    Called on every rank at once (SPMD).

    Args:
        flat_param: the padded flat fp32 parameter buffer, ``(S * N,)``, the same on every rank.
        flat_grad: this rank's local gradient for the whole buffer, ``(S * N,)`` (each rank saw
            different data, so these differ across ranks); zeros in the padding.
        exp_avg, exp_avg_sq: this rank's optimizer state shard, ``(S,)`` each, for buffer range
            ``[rank * S, (rank + 1) * S)``.
        step, lr, betas, eps, weight_decay: as in :func:`adamw_update`.
        rank, world_size: this rank and N.

    Returns:
        ``(new_flat_param, new_exp_avg, new_exp_avg_sq)``: the whole updated buffer ``(S * N,)``
        (the same on every rank; what the padding holds is unspecified) and this rank's new
        state shards. Equal, on the valid region, to ``torch.optim.AdamW`` applied to the
        unsharded parameters with the gradient averaged over ranks.

    Steps: ``dist.reduce_scatter_tensor`` the gradient (sum) into this rank's ``(S,)`` shard and
    divide by N (the mean over ranks); :func:`adamw_update` on this rank's shard of the
    parameters and states only; ``dist.all_gather_into_tensor`` the updated shards into the
    whole buffer.

    中文：ZeRO-2 风格的一步：梯度 ReduceScatter 后除以 N 得到本 rank 分片的平均梯度；只更新本 rank
    负责的参数段和优化器状态；再 AllGather 拼回完整参数。
    """
    raise NotImplementedError("zero_adamw_step")
