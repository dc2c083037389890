"""References and known mistakes of part02_parallelism.zero (partition rule, memory, AdamW, sharded step)."""
import math

import torch

from infralab.i18n import tr
from infralab.testing import Mismatch, assert_close

UNPADDED = ("not padded to a multiple of world_size: the last rank's shard runs past the buffer",
            "没有补齐到 world_size 的整数倍：最后一个 rank 的分片超出了缓冲区")


def fsdp_style_owner_map(numels, n):
    """Independent reference: torch.chunk of an index buffer is FSDP2's shard rule (GOTCHAS)."""
    param_of = torch.cat([torch.full((k,), i) for i, k in enumerate(numels)])
    elem_of = torch.cat([torch.arange(k) for k in numels])
    pieces = []
    for rank, (params, elems) in enumerate(zip(param_of.chunk(n), elem_of.chunk(n))):
        for i in params.unique(sorted=True).tolist():
            mine = elems[params == i]
            pieces.append((rank, i, int(mine.min()), int(mine.max()) + 1))
    return pieces


FLOOR_SHARDS = ("shards of floor(total / n) with the remainder on the last rank (not ceil)",
                "分片大小取了 floor(total / n)，余数放在最后一个 rank（应取 ceil）")


def floor_owner_map(numels, n):
    total, pieces = sum(numels), []
    size = total // n
    for rank in range(n):
        lo, hi = rank * size, (total if rank == n - 1 else (rank + 1) * size)
        offset = 0
        for i, k in enumerate(numels):
            s, e = max(lo, offset), min(hi, offset + k)
            if s < e:
                pieces.append((rank, i, s - offset, e - offset))
            offset += k
    return pieces


def expected_memory(psi, n, stage):
    shard = math.ceil(psi / n)
    params = 2 * (shard if stage >= 3 else psi)
    grads = 2 * (shard if stage >= 2 else psi)
    optimizer = 12 * (shard if stage >= 1 else psi)
    return {"params": params, "grads": grads, "optimizer": optimizer, "total": params + grads + optimizer}


def torch_adamw(param, grads, lr, betas, eps, wd, state=None):
    """torch.optim.AdamW on one tensor; optional preloaded state (step, exp_avg, exp_avg_sq)."""
    p = torch.nn.Parameter(param.detach().clone())
    opt = torch.optim.AdamW([p], lr=lr, betas=betas, eps=eps, weight_decay=wd, foreach=False)
    if state is not None:
        step, m, v = state
        opt.state[p] = {"step": torch.tensor(float(step)), "exp_avg": m.clone(), "exp_avg_sq": v.clone()}
    for g in grads:
        p.grad = g.clone()
        opt.step()
    s = opt.state[p]
    return p.detach(), s["exp_avg"], s["exp_avg_sq"]


def adamw_variant(param, grads, lr, betas, eps, wd, bias_correction=True, decoupled=True):
    """A plain-formula AdamW with a known mistake switched on (for diagnostics)."""
    b1, b2 = betas
    p, m, v = param.clone(), torch.zeros_like(param), torch.zeros_like(param)
    for t, g in enumerate(grads, start=1):
        if decoupled:
            p = p * (1 - lr * wd)
        else:
            g = g + wd * p
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        mh, vh = (m / (1 - b1 ** t), v / (1 - b2 ** t)) if bias_correction else (m, v)
        p = p - lr * mh / (vh.sqrt() + eps)
    return p


def adamw_mistakes(param, grads, lr, betas, eps, wd):
    return {
        ("no bias correction (m and v not divided by 1 - beta**step)", "没有偏差校正（m 和 v 没有除以 1 - beta**step）"):
            lambda: adamw_variant(param, grads, lr, betas, eps, wd, bias_correction=False),
        ("weight decay added to the gradient as L2 (Adam + L2), not decoupled", "权重衰减作为 L2 加到了梯度上（Adam + L2），而不是解耦的"):
            lambda: adamw_variant(param, grads, lr, betas, eps, wd, decoupled=False),
    }


HYPER = dict(lr=1e-2, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)


def own_shard_only(before, after, rank, size):
    out = before.clone()
    out[rank * size:(rank + 1) * size] = after[rank * size:(rank + 1) * size]
    return out


SUMMED_GRADS = ("gradients summed over ranks instead of averaged", "各 rank 的梯度求了和而不是取平均")
NO_ALL_GATHER = ("only this rank's shard updated (the all-gather is missing)", "只更新了本 rank 的分片（缺少 all-gather）")


def step_expectation(flat, grads, total, size, n, step, state=None):
    """What zero_adamw_step returns: the gathered parameters, the full exp_avg and exp_avg_sq (valid region),
    and per rank the known mistakes' parameters."""
    def adamw(grad):
        return torch_adamw(flat[:total], [grad[:total]], HYPER["lr"], HYPER["betas"], HYPER["eps"],
                           HYPER["weight_decay"], None if state is None else (step - 1, state[0][:total], state[1][:total]))
    ref_p, ref_m, ref_v = adamw(torch.stack(grads).mean(0))
    summed = adamw(torch.stack(grads).sum(0))[0]
    return {"params": ref_p, "exp_avg": ref_m, "exp_avg_sq": ref_v,
            "mistakes": [{SUMMED_GRADS: summed, NO_ALL_GATHER: own_shard_only(flat[:total], ref_p, rank, size)}
                         for rank in range(n)]}


def check_step_against_adamw(results, flat, grads, total, size, n, step, state=None, where=""):
    expected = step_expectation(flat, grads, total, size, n, step, state)
    for rank, res in enumerate(results):
        if not isinstance(res.value, (tuple, list)) or len(res.value) != 3:
            raise Mismatch(tr("part02.zero.rank_result", where=where, rank=rank, type=type(res.value).__name__))
        new_flat, m, v = res.value
        if not isinstance(new_flat, torch.Tensor) or new_flat.numel() != size * n:
            raise Mismatch(tr("part02.zero.whole_buffer", where=where, rank=rank, elements=size * n))
        assert_close(new_flat[:total], expected["params"],
                     name=(f"{where}rank {rank}: gathered parameters (valid region)",
                           f"{where}rank {rank}：收集到的参数（有效区域）"),
                     mistakes=expected["mistakes"][rank])
        lo, hi = rank * size, min((rank + 1) * size, total)
        if hi > lo:
            assert_close(m[: hi - lo], expected["exp_avg"][lo:hi],
                         name=(f"{where}rank {rank}: exp_avg shard (valid region)",
                               f"{where}rank {rank}：exp_avg 分片（有效区域）"))
            assert_close(v[: hi - lo], expected["exp_avg_sq"][lo:hi],
                         name=(f"{where}rank {rank}: exp_avg_sq shard (valid region)",
                               f"{where}rank {rank}：exp_avg_sq 分片（有效区域）"))


def memory_mistakes(psi, n, stage):
    """memory_per_rank's answer under known mistakes."""
    right = expected_memory(psi, n, stage)
    full_grads = {**right, "grads": 2 * psi}
    full_grads["total"] = full_grads["params"] + full_grads["grads"] + full_grads["optimizer"]
    eight_bytes = {**right, "optimizer": right["optimizer"] * 8 // 12}
    eight_bytes["total"] = eight_bytes["params"] + eight_bytes["grads"] + eight_bytes["optimizer"]
    return {("stage 2 counts the full gradients (they are sharded from stage 2 on)",
             "stage 2 计入了完整的梯度（从 stage 2 起梯度是分片的）"): full_grads,
            ("optimizer states at 8 bytes (fp32 m and v only, no fp32 master copy)",
             "优化器状态按 8 字节计（只有 fp32 的 m 和 v，没有 fp32 主权重副本）"): eight_bytes}
