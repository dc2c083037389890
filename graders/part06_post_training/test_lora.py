"""Hidden tests for part06_post_training.lora."""
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from infralab.i18n import tr
from infralab.testing import (Mismatch, assert_close, assert_equal, cancellation_atol, check_tensor, expect, randn,
                              tolerance)

MODULE = "part06_post_training.lora"


# ---- init and scaling --------------------------------------------------------------------------

@pytest.mark.weight(2)
@pytest.mark.parametrize("shape", [(256, 128, 16), (1024, 64, 4), (100, 300, 40)])
def test_init_draws_a_uniform_with_the_kaiming_bound_and_b_zero(impl, seed, shape):
    fan_in, out, r = shape
    A, B = impl(MODULE).init_lora(fan_in, out, r, seed)
    assert_equal(B, torch.zeros(out, r), name=("B at init", "初始化时的 B"), mistakes={
        ("B initialised at random (the adapted model no longer starts equal to the base)",
         "B 随机初始化（适配后的模型一开始就不等于基座模型）"): B})
    expect(tuple(A.shape) == (r, fan_in) and A.dtype == torch.float32, "part06.lora_a_shape_dtype", r=r, fan_in=fan_in,
           shape=tuple(A.shape), dtype=A.dtype)
    bound = 1.0 / math.sqrt(fan_in)
    expect(float(A.abs().max()) <= bound * (1 + 1e-6), "part06.lora_a_bound", bound=bound, got=float(A.abs().max()))
    # uniform on [-b, b]: std b/sqrt(3); r*in >= 4000 samples: the sample std is within 6% by > 8 sigma
    std = float(A.std())
    expect(abs(std - bound / math.sqrt(3)) < 0.06 * bound / math.sqrt(3), "part06.lora_a_std", std=std, bound=bound,
           expected=bound / math.sqrt(3))
    expect(abs(float(A.mean())) < 0.1 * bound, "part06.lora_a_mean", mean=float(A.mean()), limit=0.1 * bound)


def test_init_is_repeatable_from_its_seed(impl, seed):
    m = impl(MODULE)
    A1, _ = m.init_lora(32, 16, 4, seed)
    A2, _ = m.init_lora(32, 16, 4, seed)
    A3, _ = m.init_lora(32, 16, 4, seed + 1)
    expect(torch.equal(A1, A2), "part06.same_seed_same_a")
    expect(not torch.equal(A1, A3), "check.seed_unused", name="init_lora")


@pytest.mark.parametrize("alpha,r,rs,expected", [(16, 8, False, 2.0), (32, 16, False, 2.0), (8, 64, False, 0.125),
                                                 (16, 16, True, 4.0), (8, 64, True, 1.0), (1, 1, True, 1.0)])
def test_scaling_table(impl, alpha, r, rs, expected):
    got = impl(MODULE).lora_scaling(alpha, r, use_rslora=rs)
    hint = {alpha: ("alpha instead of alpha / r", "用了 alpha 而不是 alpha / r"),
            alpha / r: ("alpha / r with rsLoRA (should be alpha / sqrt(r))", "rsLoRA 下用了 alpha / r（应为 alpha / sqrt(r)）"),
            alpha / math.sqrt(r): ("alpha / sqrt(r) without rsLoRA (should be alpha / r)",
                                   "不用 rsLoRA 时用了 alpha / sqrt(r)（应为 alpha / r）")}.get(got)
    if not math.isclose(float(got), expected, rel_tol=1e-9):
        raise Mismatch(tr("part06.lora_scaling_value", alpha=alpha, r=r, rs=rs, got=got, expected=expected), hint)


# ---- forward, merge, unmerge -------------------------------------------------------------------

def forward_mistakes(x, W, b, A, B, s):
    base = F.linear(x, W, b)
    low = F.linear(F.linear(x, A), B)
    return {
        ("scaling left out of the low-rank path", "低秩路径漏了 scaling"): lambda: base + low,
        ("scaling applied to the whole output", "scaling 作用在了整个输出上"): lambda: s * (base + low),
        ("bias left out", "漏了 bias"): lambda: F.linear(x, W) + s * low,
        ("low-rank path forgotten", "忘了低秩路径"): lambda: base,
    }


@pytest.mark.weight(2)
@given(lead=st.sampled_from([(3,), (2, 5), (1,)]), io=st.sampled_from([(8, 6), (16, 32), (7, 3)]),
       r=st.integers(1, 6), bias=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_lora_forward_matches_the_formula(impl, lead, io, r, bias, seed):
    g = torch.Generator().manual_seed(seed)
    fin, fout = io
    x, W = randn(*lead, fin, generator=g), randn(fout, fin, generator=g)
    b = randn(fout, generator=g) if bias else None
    A, B = randn(r, fin, generator=g), randn(fout, r, generator=g)
    s = 16.0 / r
    expected = (x.double() @ W.double().T + (b.double() if bias else 0)
                + s * (x.double() @ A.double().T) @ B.double().T)
    got = impl(MODULE).lora_forward(x, W, b, A, B, s)
    # fp32 rounding scales with the size of the terms summed (W x and s B A x may cancel), not of the result
    rtol, atol = tolerance(torch.float32, reduction=fin)
    size = float((x.abs().double() @ (W.abs().double() + s * (B.abs().double() @ A.abs().double())).T).max())
    assert_close(got, expected.float(), name="LoRA output", rtol=rtol, atol=atol * max(1.0, size),
                 mistakes=forward_mistakes(x, W, b, A, B, s))


def merge_mistakes(W, A, B, s):
    return {("merge forgot the scaling (W + B A)", "merge 忘了 scaling（W + B A）"): lambda: W + B @ A,
            ("merge used A B^T-like transposes (W + s * (A^T B^T)^T)",
             "merge 用了类似 A B^T 的转置（W + s * (A^T B^T)^T）"): lambda: W + s * (A.T @ B.T).T,
            ("merge subtracted the update", "merge 减去了增量"): lambda: W - s * B @ A}


@pytest.mark.weight(2)
@given(io=st.sampled_from([(8, 6), (16, 32)]), r=st.integers(1, 6), alpha=st.sampled_from([1.0, 8.0, 32.0]),
       rs=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_merged_weight_serves_the_same_outputs(impl, io, r, alpha, rs, seed):
    m = impl(MODULE)
    g = torch.Generator().manual_seed(seed)
    fin, fout = io
    W, A, B, x = randn(fout, fin, generator=g), randn(r, fin, generator=g), randn(fout, r, generator=g), randn(4, fin, generator=g)
    s = alpha / math.sqrt(r) if rs else alpha / r
    merged = m.merge(W, A, B, s)
    expected = W.double() + s * B.double() @ A.double()
    assert_close(merged, expected.float(), name=("merged weight",
                                                 "合并后的权重"), reduction=r, mistakes=merge_mistakes(W, A, B, s))
    # fp32 rounding of either route scales with the size of the terms summed, not of the result
    # (W x and s B A x may cancel): the bound is the dtype's tolerance times that size
    rtol, atol = tolerance(torch.float32, reduction=fin)
    update = s * (B.abs().double() @ A.abs().double())
    size = float((x.abs().double() @ (W.abs().double() + update).T).max())
    assert_close(x @ merged.T, m.lora_forward(x, W, None, A, B, s), name=("merged vs adapted outputs", "合并后与带适配器的输出对比"),
                 rtol=rtol, atol=atol * max(1.0, size))
    assert_close(m.unmerge(merged, A, B, s), W, name="unmerge(merge(W))", rtol=rtol,
                 atol=atol * max(1.0, float(update.max())), mistakes={
        ("unmerge forgot the scaling", "unmerge 忘了 scaling"): lambda: merged - B @ A,
        ("unmerge added the update", "unmerge 加上了增量"): lambda: merged + s * B @ A})


def test_merge_and_unmerge_leave_their_inputs_untouched(impl, gen):
    m = impl(MODULE)
    W, A, B = randn(6, 5, generator=gen), randn(2, 5, generator=gen), randn(6, 2, generator=gen)
    before = [t.clone() for t in (W, A, B)]
    merged = m.merge(W, A, B, 2.0)
    merged_copy = merged.clone()
    m.unmerge(merged, A, B, 2.0)
    expect(all(torch.equal(a, b) for a, b in zip((W, A, B), before)), "check.modified_input", name="merge")
    expect(torch.equal(merged, merged_copy), "check.modified_input", name="unmerge")


# ---- multi-LoRA --------------------------------------------------------------------------------

def multi_reference(x, W, b, As, Bs, scalings, ids):
    rows = []
    for n, k in enumerate(ids.tolist()):
        y = x[n].double() @ W.double().T + (b.double() if b is not None else 0)
        if k >= 0:
            y = y + scalings[k].double() * (x[n].double() @ As[k].double().T) @ Bs[k].double().T
        rows.append(y)
    return torch.stack(rows).float()


def multi_mistakes(x, W, b, As, Bs, scalings, ids):
    def with_ids(new_ids, new_scalings=scalings):
        return lambda: multi_reference(x, W, b, As, Bs, new_scalings, new_ids)
    return {
        ("id -1 taken as the last adapter (Python negative indexing) instead of the base",
         "id -1 被当成最后一个 adapter（Python 负索引），而不是基座模型"):
            with_ids(torch.where(ids < 0, torch.full_like(ids, As.shape[0] - 1), ids)),
        ("every row used adapter 0", "每一行都用了 adapter 0"): with_ids(torch.zeros_like(ids)),
        ("every row used the first row's adapter",
         "每一行都用了第一行的 adapter"): with_ids(torch.full_like(ids, int(ids[0]))),
        ("every adapter used adapter 0's scaling",
         "每个 adapter 都用了 adapter 0 的 scaling"): with_ids(ids, scalings[:1].expand_as(scalings)),
    }


@pytest.mark.weight(3)
@given(N=st.integers(1, 9), K=st.integers(1, 4), r=st.integers(1, 4), bias=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_multi_lora_batch_matches_row_by_row(impl, N, K, r, bias, seed):
    g = torch.Generator().manual_seed(seed)
    fin, fout = 10, 7
    x, W = randn(N, fin, generator=g), randn(fout, fin, generator=g)
    b = randn(fout, generator=g) if bias else None
    As, Bs = randn(K, r, fin, generator=g), randn(K, fout, r, generator=g)
    scalings = torch.rand(K, generator=g) * 4 + 0.1
    ids = torch.randint(-1, K, (N,), generator=g)
    got = impl(MODULE).multi_lora_forward(x, W, b, As, Bs, scalings, ids)
    # a row may cancel far below its terms (scalings up to 4): float32 roundoff at the terms' size
    size = multi_reference(x.abs(), W.abs(), None if b is None else b.abs(), As.abs(), Bs.abs(), scalings, ids)
    assert_close(got, multi_reference(x, W, b, As, Bs, scalings, ids), name="multi-LoRA batch",
                 atol=cancellation_atol(size), mistakes=multi_mistakes(x, W, b, As, Bs, scalings, ids))


def test_multi_lora_base_rows_ignore_every_adapter(impl, gen):
    x, W, b = randn(5, 6, generator=gen), randn(4, 6, generator=gen), randn(4, generator=gen)
    As, Bs = randn(3, 2, 6, generator=gen), randn(3, 4, 2, generator=gen)
    ids = torch.tensor([-1, 2, -1, 0, -1])
    scalings = torch.tensor([1.0, 2.0, 3.0])
    got = impl(MODULE).multi_lora_forward(x, W, b, As, Bs, scalings, ids)
    assert_close(got, multi_reference(x, W, b, As, Bs, scalings, ids), name=("multi-LoRA with base rows",
                                                                             "含基座行的 multi-LoRA"),
                 mistakes=multi_mistakes(x, W, b, As, Bs, scalings, ids))


# ---- NF4 ---------------------------------------------------------------------------------------

NF4 = torch.tensor([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
                    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
                    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
                    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0], dtype=torch.float64)


def check_nf4_codes(w, codes, absmax, block_size):
    """absmax per block exactly; each code is a nearest level of value / absmax (ties either way)."""
    blocks = w.reshape(-1, block_size).double()
    expected_absmax = blocks.abs().amax(1)
    global_absmax = torch.full_like(expected_absmax, float(w.abs().max()))
    assert_close(absmax, expected_absmax.float(), name=("block absmax", "块的 absmax"), mistakes={
        ("one absmax for the whole tensor instead of per block",
         "整个张量只用一个 absmax，而不是每块一个"): global_absmax.float()})
    expect(tuple(codes.shape) == (w.numel(),) and codes.dtype == torch.uint8, "part06.nf4_codes_shape",
           numel=w.numel(), shape=tuple(codes.shape), dtype=codes.dtype)
    expect(int(codes.max()) < 16, "part06.nf4_codes_range", got=int(codes.max()))
    scale = torch.where(expected_absmax > 0, expected_absmax, torch.ones_like(expected_absmax)).unsqueeze(1)
    normalised = (blocks / scale).reshape(-1)
    dist = (normalised.unsqueeze(-1) - NF4).abs()
    chosen = dist.gather(1, codes.long().unsqueeze(1)).squeeze(1)
    worst = int((chosen - dist.min(1).values).argmax())
    expect(float((chosen - dist.min(1).values).max()) <= 1e-6, "part06.nf4_not_nearest", code=int(codes[worst]),
           index=worst, value=float(normalised[worst]), nearest=int(dist[worst].argmin()))


@pytest.mark.weight(3)
@given(rows=st.integers(1, 6), block=st.sampled_from([16, 32, 64]), scale=st.sampled_from([0.01, 1.0, 30.0]),
       seed=st.integers(0, 2**31 - 1))
def test_nf4_quantize_picks_the_nearest_level_per_block(impl, rows, block, scale, seed):
    g = torch.Generator().manual_seed(seed)
    w = randn(rows, 64, generator=g, scale=scale) * (torch.rand(rows, 1, generator=g) * 4 + 0.1)
    codes, absmax = impl(MODULE).nf4_quantize(w, block_size=block)
    check_nf4_codes(w, codes, absmax, block)


@pytest.mark.weight(2)
def test_nf4_blocks_are_independent(impl, gen):
    """One huge outlier ruins only its own block's resolution."""
    m = impl(MODULE)
    w = randn(4, 64, generator=gen)
    w[0, 3] = 1000.0
    codes, absmax = m.nf4_quantize(w, block_size=64)
    check_nf4_codes(w, codes, absmax, 64)
    deq = m.nf4_dequantize(codes, absmax, (4, 64), block_size=64)
    err = (deq - w).abs()[1:].max()
    expect(float(err) <= 0.2 * float(w[1:].abs().max()), "part06.nf4_block_resolution", err=float(err),
           limit=0.2 * float(w[1:].abs().max()))


@pytest.mark.weight(2)
@given(shape=st.sampled_from([(8, 16), (2, 3, 32), (128,)]), block=st.sampled_from([16, 32]), seed=st.integers(0, 2**31 - 1))
def test_nf4_dequantize_inverts_the_table_lookup(impl, shape, block, seed):
    m = impl(MODULE)
    g = torch.Generator().manual_seed(seed)
    w = randn(*shape, generator=g)
    codes, absmax = m.nf4_quantize(w, block_size=block)
    got = m.nf4_dequantize(codes, absmax, shape, block_size=block)
    expected = (NF4[codes.long()].view(-1, block) * absmax.double().unsqueeze(1)).reshape(shape)
    assert_close(got, expected.float(), name=("dequantised weight", "反量化后的权重"), mistakes={
        ("codes taken as offsets from 8 (symmetric int4) instead of table indices",
         "码字被当成相对 8 的偏移（对称 int4），而不是查找表索引"):
            lambda: ((codes.float() - 8) / 7).view(-1, block).mul(absmax.unsqueeze(1)).reshape(shape)})
    # the worst case is half the widest gap between neighbouring levels (between -1 and -0.696)
    bound = (0.5 * (NF4[1] - NF4[0]) * absmax.double()).repeat_interleave(block).reshape(shape)
    moved = (got.double() - w.double()).abs() > bound + 1e-6
    expect(bool(((got.double() - w.double()).abs() <= bound + 1e-6).all()), "part06.nf4_round_trip",
           count=int(moved.sum()), total=moved.numel())


def test_nf4_of_a_zero_block_is_zero(impl):
    m = impl(MODULE)
    w = torch.cat([torch.zeros(16), torch.linspace(-1, 1, 16)])
    codes, absmax = m.nf4_quantize(w, block_size=16)
    assert_equal(codes[:16], torch.full((16,), 7, dtype=torch.uint8), name=("codes of a zero block (level 0.0 = 7)",
                                                                            "全零块的编码（量级 0.0 = 7）"))
    deq = m.nf4_dequantize(codes, absmax, (32,), block_size=16)
    assert_close(deq[:16], torch.zeros(16), name=("dequantised zero block", "反量化后的全零块"))


@pytest.mark.parametrize("numel,block", [(100, 64), (64, 0), (48, 32)], ids=["not-dividing", "zero", "not-dividing-2"])
def test_nf4_bad_block_size_raises_value_error(impl, numel, block):
    with pytest.raises(ValueError):
        impl(MODULE).nf4_quantize(torch.ones(numel), block_size=block)


def test_defaults_are_plain_lora_scaling_and_qlora_blocks_of_64(impl, gen):
    """The signatures' defaults: alpha / r (rsLoRA only when asked) and QLoRA's blocks of 64 values."""
    m = impl(MODULE)
    got = m.lora_scaling(16, 4)
    if not math.isclose(float(got), 4.0, rel_tol=1e-9):
        raise Mismatch(tr("part06.lora_scaling_value", alpha=16, r=4, rs=False, got=got, expected=4.0),
                       ("use_rslora defaults to True (it should default to plain LoRA, alpha / r)",
                        "use_rslora 默认为 True（默认应为普通 LoRA，即 alpha / r）"))
    w = randn(2, 64, generator=gen) * torch.tensor([[1.0], [10.0]])  # one block per row at the default size
    codes, absmax = m.nf4_quantize(w)
    assert_close(check_tensor(absmax, shape=(2,), name=("absmax with the default block size (64)", "默认块大小（64）的 absmax")),
                 w.abs().amax(dim=1), name=("absmax with the default block size (64)", "默认块大小（64）的 absmax"))
    expected = NF4[codes.long()].view(2, 64) * absmax.double().unsqueeze(1)
    assert_close(m.nf4_dequantize(codes, absmax, (2, 64)), expected.float(),
                 name=("nf4_dequantize with the default block size (64)", "默认块大小（64）下的 nf4_dequantize"))


def test_nf4_block_of_one_value_is_allowed(impl):
    """block_size = 1 divides every size: each value is its own block, its own absmax, a level of ±1 (or 0)."""
    w = torch.tensor([0.5, -2.0, 0.0, 3.0])
    codes, absmax = impl(MODULE).nf4_quantize(w, block_size=1)
    assert_close(absmax, w.abs(), name=("absmax of one-value blocks", "单值块的 absmax"))
    assert_equal(codes, torch.tensor([15, 0, 7, 15], dtype=torch.uint8), name=("codes of one-value blocks", "单值块的编码"))
