"""References and known mistakes of part04_serving.paged_attention: random pools and scattered block
tables, compared with torch SDPA on the gathered K/V of each sequence."""
import torch
import torch.nn.functional as F

from infralab.testing import randn


def make_batch(gen, lens, block_size, hq, hkv, d, dtype=torch.float32):
    """Pools with sequences scattered over random blocks; tables padded with -1."""
    need = [-(-n // block_size) for n in lens]
    num_blocks = sum(need) + 3
    perm = torch.randperm(num_blocks, generator=gen).tolist()
    tables = torch.full((len(lens), max(need) + 1), -1, dtype=torch.int32)
    for i, n in enumerate(need):
        tables[i, :n] = torch.tensor([perm.pop() for _ in range(n)], dtype=torch.int32)
    k_pool = randn(num_blocks, block_size, hkv, d, generator=gen, dtype=dtype)
    v_pool = randn(num_blocks, block_size, hkv, d, generator=gen, dtype=dtype)
    q = randn(len(lens), hq, d, generator=gen, dtype=dtype)
    return q, k_pool, v_pool, tables, torch.tensor(lens, dtype=torch.int32)


def gathered(pool, table, n, block_size):
    pos = torch.arange(n)
    return pool.reshape(-1, *pool.shape[2:])[table.long()[pos // block_size] * block_size + pos % block_size]


def reference(q, k_pool, v_pool, tables, lens, scale=None, *, group_of=lambda h, g, hkv: h // g, n_of=None):
    """Dense attention on each sequence's gathered K/V (torch SDPA); the keyword hooks build the
    outputs of known mistakes."""
    b, hq, d = q.shape
    block_size, hkv = k_pool.shape[1], k_pool.shape[2]
    out = torch.empty(b, hq, d, dtype=torch.float32)
    for i in range(b):
        n = int(lens[i]) if n_of is None else n_of(i)
        k, v = gathered(k_pool, tables[i], n, block_size).float(), gathered(v_pool, tables[i], n, block_size).float()
        heads = torch.tensor([group_of(h, hq // hkv, hkv) for h in range(hq)])
        out[i] = F.scaled_dot_product_attention(q[i].float()[:, None], k[:, heads].transpose(0, 1),
                                                v[:, heads].transpose(0, 1), scale=scale)[:, 0]
    return out.to(q.dtype)


def mistakes(q, k_pool, v_pool, tables, lens, scale=None):
    block_size = k_pool.shape[1]
    return {
        ("context_lens ignored: the padded tail of the last block was attended to",
         "忽略了 context_lens：关注了最后一个块中填充的尾部"):
            lambda: reference(q, k_pool, v_pool, tables, lens, scale,
                              n_of=lambda i: -(-int(lens[i]) // block_size) * block_size),
        ("GQA head mapping h % Hkv instead of h // (Hq / Hkv)", "GQA 头映射用了 h % Hkv，而不是 h // (Hq / Hkv)"):
            lambda: reference(q, k_pool, v_pool, tables, lens, scale, group_of=lambda h, g, hkv: h % hkv),
        ("softmax scale missing (1 / sqrt(D) not applied)", "缺少 softmax 缩放（没有乘 1 / sqrt(D)）"):
            lambda: reference(q, k_pool, v_pool, tables, lens, 1.0),
    }
