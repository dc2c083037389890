"""Visible tests for part06_post_training.lora: run `pytest exercises/part06_post_training -m lora`."""
import math

import pytest
import torch
import torch.nn.functional as F

from infralab.i18n import tr
from infralab.testing import assert_close, assert_equal, expect, randn

MODULE = "part06_post_training.lora"


def test_scaling_is_alpha_over_r_or_over_sqrt_r_with_rslora(impl):
    m = impl(MODULE)
    got = m.lora_scaling(16, 8)
    expect(math.isclose(got, 2.0), "part06.lora_scaling", alpha=16, r=8, rslora="", expected=2.0, got=repr(got),
           note=tr("part06.scaling_alpha_over_r"))
    got = m.lora_scaling(16, 4, use_rslora=True)
    expect(math.isclose(got, 8.0), "part06.lora_scaling", alpha=16, r=4, rslora=", use_rslora=True", expected=8.0,
           got=repr(got), note=tr("part06.scaling_rslora"))


def test_init_gives_kaiming_uniform_a_and_zero_b(impl):
    A, B = impl(MODULE).init_lora(in_features=64, out_features=32, r=4, seed=0)
    expect(tuple(A.shape) == (4, 64) and tuple(B.shape) == (32, 4), "part06.lora_shapes", want_a=(4, 64),
           want_b=(32, 4), got_a=tuple(A.shape), got_b=tuple(B.shape))
    assert_equal(B, torch.zeros(32, 4), name=("B starts at zero", "B 初始为零"))
    expect(float(A.abs().max()) <= 1 / math.sqrt(64) and float(A.abs().max()) > 0.5 / math.sqrt(64),
           "part06.lora_a_range", bound=1 / math.sqrt(64), low=0.5 / math.sqrt(64), got=float(A.abs().max()))


def test_a_fresh_adapter_leaves_the_layer_unchanged(impl, gen):
    m = impl(MODULE)
    W, b, x = randn(32, 64, generator=gen), randn(32, generator=gen), randn(5, 64, generator=gen)
    A, B = m.init_lora(64, 32, r=8, seed=1)
    assert_close(m.lora_forward(x, W, b, A, B, m.lora_scaling(16, 8)), F.linear(x, W, b), name=("output at init",
                                                                                                "初始化时的输出"))


def test_forward_adds_the_scaled_low_rank_path(impl, gen):
    m = impl(MODULE)
    W, b, x = randn(6, 10, generator=gen), randn(6, generator=gen), randn(3, 10, generator=gen)
    A, B = randn(2, 10, generator=gen), randn(6, 2, generator=gen)
    expected = F.linear(x, W, b) + 0.5 * F.linear(F.linear(x, A), B)
    assert_close(m.lora_forward(x, W, b, A, B, 0.5), expected, name="LoRA output")


def test_merge_then_unmerge_round_trips(impl, gen):
    m = impl(MODULE)
    W, A, B, x = randn(6, 10, generator=gen), randn(2, 10, generator=gen), randn(6, 2, generator=gen), randn(3, 10, generator=gen)
    merged = m.merge(W, A, B, 2.0)
    assert_close(F.linear(x, merged), m.lora_forward(x, W, None, A, B, 2.0), name=("merged layer output", "合并后该层的输出"))
    assert_close(m.unmerge(merged, A, B, 2.0), W, name=("unmerged weight", "拆分回去的权重"))


def test_each_row_uses_its_own_adapter_and_minus_one_means_base(impl, gen):
    m = impl(MODULE)
    W, x = randn(5, 8, generator=gen), randn(4, 8, generator=gen)
    As, Bs = randn(2, 3, 8, generator=gen), randn(2, 5, 3, generator=gen)
    scalings = torch.tensor([1.0, 0.25])
    ids = torch.tensor([1, -1, 0, 1])
    rows = []
    for n, k in enumerate(ids.tolist()):
        y = F.linear(x[n], W)
        rows.append(y if k < 0 else y + scalings[k] * F.linear(F.linear(x[n], As[k]), Bs[k]))
    got = m.multi_lora_forward(x, W, None, As, Bs, scalings, ids)
    assert_close(got, torch.stack(rows), name="multi-LoRA batch")


def test_nf4_levels_and_absmax_round_trip_exactly(impl):
    m = impl(MODULE)
    code = torch.tensor(m.NF4_CODE)
    w = torch.cat([code * 3.0, code.flip(0) * 0.5])            # two blocks of 16, absmax 3 and 0.5
    codes, absmax = m.nf4_quantize(w, block_size=16)
    assert_equal(codes, torch.cat([torch.arange(16), torch.arange(15, -1, -1)]).to(torch.uint8), name="NF4 codes")
    assert_close(absmax, torch.tensor([3.0, 0.5]), name=("block absmax", "块的 absmax"))
    assert_close(m.nf4_dequantize(codes, absmax, (32,), block_size=16), w, name=("dequantised levels", "反量化后的量级"))


def test_nf4_block_size_must_divide_the_weight(impl):
    with pytest.raises(ValueError):
        impl(MODULE).nf4_quantize(torch.zeros(100), block_size=64)
