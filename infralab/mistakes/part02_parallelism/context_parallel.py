"""References and known mistakes of part02_parallelism.context_parallel (ring attention, LSE merge, layout)."""
import math

import torch

NAN_ON_EMPTY_ROWS = ("a row that sees no key of this block gives NaN (softmax of all -inf): return out 0 and lse -inf",
                     "某行在这个块里看不到任何 key 时得到了 NaN（对全 -inf 做 softmax）：应输出 0、lse 为 -inf")


def check_no_nan(out, name):
    """A NaN in a block's output is the known mistake of fully masked rows: say so before comparing values."""
    from infralab.i18n import tr
    from infralab.testing import Mismatch

    if bool(torch.isnan(out).any()):
        raise Mismatch(tr("part02.cp.nan", name=name, count=int(torch.isnan(out).sum())), NAN_ON_EMPTY_ROWS)


def balanced_positions(seq_len, rank, world_size):
    size = seq_len // (2 * world_size)
    return torch.cat([torch.arange(rank * size, (rank + 1) * size),
                      torch.arange((2 * world_size - 1 - rank) * size, (2 * world_size - rank) * size)])


def contiguous_positions(seq_len, rank, world_size):
    size = seq_len // world_size
    return torch.arange(rank * size, (rank + 1) * size)


CONTIGUOUS_LAYOUT = ("contiguous blocks (rank r holds block r): under a causal mask the last rank does about 2W - 1 "
                     "times the work of the first",
                     "连续切块（rank r 持有第 r 块）：因果掩码下最后一个 rank 的计算量约为第一个的 2W - 1 倍")


def layout_mistakes(seq_len, rank, world_size):
    return {CONTIGUOUS_LAYOUT: contiguous_positions(seq_len, rank, world_size)}


def attention_with_lse(q, k, v, q_pos, k_pos, causal, scale=True):
    """float64 attention of q over (k, v) with global positions; fully masked rows give out 0, lse -inf."""
    s = q.double() @ k.double().transpose(-1, -2)
    if scale:
        s = s / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(k_pos[None, :] > q_pos[:, None], float("-inf"))
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - torch.where(torch.isinf(lse), torch.zeros_like(lse), lse).unsqueeze(-1))
    return (p @ v.double()), lse


def reference_merge(out_a, lse_a, out_b, lse_b):
    lse = torch.logaddexp(lse_a.double(), lse_b.double())
    safe = torch.where(torch.isinf(lse), torch.zeros_like(lse), lse)
    out = torch.exp(lse_a.double() - safe)[..., None] * out_a.double() + torch.exp(lse_b.double() - safe)[..., None] * out_b.double()
    return out.to(out_a.dtype), lse.to(lse_a.dtype)


def merge_mistakes(out_a, lse_a, out_b, lse_b):
    return {("outputs added without the exp(lse_i - lse) weights", "两部分输出直接相加，没有乘 exp(lse_i - lse) 权重"):
            lambda: (out_a.double() + out_b.double()).to(out_a.dtype),
            ("outputs averaged (each weighted 1/2) instead of by their log-sum-exp", "两部分输出取了平均，应按 log-sum-exp 加权"):
            lambda: ((out_a.double() + out_b.double()) / 2).to(out_a.dtype)}


def ring_result(q, k, v, rank, world_size, causal, mask_step=-1, scale=True, merge="lse"):
    """What rank `rank` computes with the full sequence's (q, k, v) laid out by balanced_positions: (out, lse)
    in the inputs' dtype (lse at least float32); variants reproduce known mistakes (``mask_step=+1``: the block
    received at step s masked with the positions of rank + s)."""
    seq_len = q.shape[-2]
    mine = balanced_positions(seq_len, rank, world_size)
    out, lse = None, None
    for step in range(world_size):
        theirs = balanced_positions(seq_len, (rank - step) % world_size, world_size)  # the block that arrived
        masked_as = balanced_positions(seq_len, (rank + mask_step * step) % world_size, world_size)
        o, l_ = attention_with_lse(q[..., mine, :], k[..., theirs, :], v[..., theirs, :], mine, masked_as, causal, scale)
        if out is None:
            out, lse = o, l_
        elif merge == "sum":
            out, lse = out + o, torch.logaddexp(lse, l_)
        else:
            out, lse = reference_merge(out, lse, o, l_)
    lse_dtype = torch.promote_types(q.dtype, torch.float32)
    return out.to(q.dtype), lse.to(lse_dtype)


def ring_mistakes(q, k, v, rank, world_size, causal):
    return {
        ("at step s the K/V block was taken to come from rank + s (it comes from rank - s): wrong causal mask",
         "第 s 步把 K/V 当成来自 rank + s（实际来自 rank - s）：因果掩码用错了位置"):
            lambda: ring_result(q, k, v, rank, world_size, causal, mask_step=+1)[0],
        ("scores not scaled by 1/sqrt(D)", "注意力分数没有除以 sqrt(D)"):
            lambda: ring_result(q, k, v, rank, world_size, causal, scale=False)[0],
        ("block outputs added without the exp(lse_i - lse) weights", "各块输出直接相加，没有按 log-sum-exp 加权"):
            lambda: ring_result(q, k, v, rank, world_size, causal, merge="sum")[0],
    }


def causal_work(positions_of_rank, world_size):
    """Unmasked (query, key) pairs each rank computes under a causal mask."""
    everything = torch.cat([positions_of_rank(r) for r in range(world_size)])
    return [int((everything[None, :] <= positions_of_rank(r)[:, None]).sum()) for r in range(world_size)]
