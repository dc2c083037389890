"""References and known mistakes of part04_serving.paged_decode_kernel (the Triton split-KV kernel
over the paged pool).

The expected output is ``paged_attention``'s reference: torch SDPA on each sequence's K/V gathered
through its table. The known mistakes are rebuilt by :func:`split_attention`, a float64 emulation
of the exercise's split convention (split ``s`` covers table entries ``[s*P, (s+1)*P)``,
``P = ceil(max_blocks / num_splits)``) with one switch per mistake.
"""
import torch

from infralab.mistakes.part04_serving.paged_attention import make_batch, reference

__all__ = ["make_batch", "reference", "stale_padding", "garbage_tails", "split_attention", "mistakes",
           "EMPTY_SPLIT_NAN", "LOGICAL_BLOCKS", "BATCH_MAX_LENGTH", "LAST_PARTIAL_BLOCK", "NO_RESCALE"]

LOGICAL_BLOCKS = ("blocks read by logical index (block j of every sequence = pool block j): look up "
                  "block_tables[i, j // block_size] for each token",
                  "按逻辑下标取块（每条序列的第 j 块都当成池中第 j 块）：应对每个 token 查 block_tables[i, j // block_size]")
BATCH_MAX_LENGTH = ("every sequence read to the batch's longest length (the table's width): tokens past "
                    "context_lens[i], and padding entries of the table, were attended to; mask by each sequence's own length",
                    "所有序列都按批内最长长度（块表宽度）读取：关注了超出 context_lens[i] 的 token 与块表的填充项；"
                    "应按每条序列自己的长度掩码")
LAST_PARTIAL_BLOCK = ("the last, partly filled block was skipped (context_lens[i] // block_size blocks instead "
                      "of ceil(context_lens[i] / block_size)); mask its tail instead",
                      "跳过了最后一个未填满的块（块数用了 context_lens[i] // block_size 而不是向上取整）；"
                      "应读取该块并对其尾部掩码")
NO_RESCALE = ("the splits were combined with their sums of exponentials l_s as weights, each relative to its "
              "own max; rescale them to the common max first: w_s = l_s * exp(m_s - max_s m_s)",
              "合并时直接用各段的指数和 l_s 作权重，而它们相对各自的段内最大值；应先重缩放到公共最大值："
              "w_s = l_s · exp(m_s − max_s m_s)")
GQA_MODULO = ("query head h read kv head h % Hkv; GQA maps it to h // (Hq // Hkv)",
              "查询头 h 读了 KV 头 h % Hkv；GQA 应映射到 h // (Hq // Hkv)")
EMPTY_SPLIT_NAN = ("NaN in the output: a split that saw no token (past the end of a short sequence) divided 0 by 0 "
                   "(its weight is 0, but 0 * NaN is NaN): give an empty split output 0, max -inf and sum 0; or every "
                   "token of a sequence was skipped, or the output was never written",
                   "输出中有 NaN：没有任何 token 的段（超出短序列末尾）算了 0 / 0（权重为 0，但 0 * NaN 仍是 NaN）："
                   "空段应输出 0、最大值 -inf、指数和 0；或者某条序列的 token 全被跳过，或者输出没有被写入")


def stale_padding(tables, gen):
    """The table with every -1 padding entry replaced by a random real block id (an engine's reused
    table row: those blocks hold other tokens)."""
    num_blocks = int(tables.max()) + 1
    stale = torch.randint(0, num_blocks, tables.shape, generator=gen, dtype=tables.dtype)
    return torch.where(tables < 0, stale, tables)


def garbage_tails(k_pool, v_pool, tables, lens, value=50.0):
    """Copies of the pools with large values in the unused rows of each sequence's last block."""
    k_pool, v_pool = k_pool.clone(), v_pool.clone()
    block_size = k_pool.shape[1]
    for i, n in enumerate(lens.tolist()):
        if n % block_size:
            last = int(tables[i, (n - 1) // block_size])
            k_pool[last, n % block_size:] = value
            v_pool[last, n % block_size:] = -value
    return k_pool, v_pool


def split_attention(q, k_pool, v_pool, tables, lens, scale=None, splits=1, *, n_of=None, logical_blocks=False,
                    rescale=True, head_of=None):
    """float64 split-KV paged decode attention, one switch per known mistake:
    ``n_of(i)`` tokens read instead of ``lens[i]``, ``logical_blocks`` (block j = pool block j),
    ``rescale=False`` (combine weights l_s), ``head_of(h, group, hkv)`` the kv head of query head h."""
    b, hq, d = q.shape
    block_size, hkv = k_pool.shape[1], k_pool.shape[2]
    group = hq // hkv
    scale = d ** -0.5 if scale is None else scale
    split_len = -(-tables.shape[1] // splits) * block_size
    head_of = head_of or (lambda h, g, n_kv: h // g)
    k_rows, v_rows = k_pool.reshape(-1, hkv, d).double(), v_pool.reshape(-1, hkv, d).double()
    out = torch.zeros(b, hq, d, dtype=torch.float64)
    for i in range(b):
        n = int(lens[i]) if n_of is None else n_of(i)
        pos = torch.arange(n)
        blocks = pos // block_size if logical_blocks else tables[i].long()[pos // block_size]
        rows = blocks * block_size + pos % block_size
        for h in range(hq):
            kv = head_of(h, group, hkv)
            scores = k_rows[rows, kv] @ q[i, h].double() * scale  # (n,)
            parts = []  # (max, sum, normalised output) of each non-empty split
            for start in range(0, n, split_len):
                s = scores[start:start + split_len]
                m = s.max()
                p = torch.exp(s - m)
                parts.append((m, p.sum(), p @ v_rows[rows[start:start + split_len], kv] / p.sum()))
            if not parts:
                continue
            top = max(m for m, _, _ in parts)
            weights = [l * torch.exp(m - top) if rescale else l for m, l, _ in parts]
            out[i, h] = sum(w * o for w, (_, _, o) in zip(weights, parts)) / sum(weights)
    return out.to(q.dtype)


def mistakes(q, k_pool, v_pool, tables, lens, scale=None, splits=None):
    """{label: output} of the known mistakes; the combine's needs the test's explicit ``splits``."""
    block_size = k_pool.shape[1]
    args = (q, k_pool, v_pool, tables, lens, scale, splits or 1)
    found = {
        LOGICAL_BLOCKS: lambda: split_attention(*args, logical_blocks=True),
        BATCH_MAX_LENGTH: lambda: split_attention(*args, n_of=lambda i: tables.shape[1] * block_size),
        LAST_PARTIAL_BLOCK: lambda: split_attention(*args, n_of=lambda i: int(lens[i]) // block_size * block_size),
        GQA_MODULO: lambda: split_attention(*args, head_of=lambda h, g, n_kv: h % n_kv),
    }
    if splits:
        found[NO_RESCALE] = lambda: split_attention(*args, rescale=False)
    return found
