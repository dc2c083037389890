"""Visible tests for part00_foundations.roofline: run `pytest exercises/part00_foundations -m roofline`."""
from pathlib import Path

import pytest
import torch

from infralab.course import find_course_root, load_course
from infralab.perf.profiles import load_profile
from infralab.testing import assert_equal, expect

MODULE = "part00_foundations.roofline"


def h200_ceilings() -> tuple[float, float]:
    """(peak FLOP/s, bandwidth bytes/s) of the calibrated H200 profile: bf16 matmul and copy."""
    course = load_course(find_course_root(Path(__file__).parent))
    ceilings = load_profile(course.root / course.profiles_dir / "h200.yml").ceilings
    return ceilings["matmul_bf16_tflops"] * 1e12, ceilings["copy_gbps"] * 1e9


def test_matmul_cost_counts_two_flops_per_multiply_add_and_every_operand_once(impl):
    # 2*64*32*16 FLOPs; (64*16 + 16*32 + 64*32) fp32 elements * 4 bytes
    assert_equal(impl(MODULE).op_cost("matmul", {"M": 64, "N": 32, "K": 16}, torch.float32), (65536, 14336),
                 name=("(flops, bytes) of a 64x32x16 fp32 matmul", "64x32x16 fp32 matmul 的 (flops, bytes)"),
                 mistakes={("a multiply-add counted as 1 FLOP", "一次乘加算成了 1 FLOP"): (32768, 14336),
                           ("the output C not counted (reads only)", "没有计入输出 C（只算了读取）"): (65536, 6144)})


def test_norm_cost_reads_the_input_and_writes_the_output(impl):
    # 4*8*128 FLOPs; (2*8*128 + 128) bf16 elements * 2 bytes
    assert_equal(impl(MODULE).op_cost("norm", {"M": 8, "N": 128}, torch.bfloat16), (4096, 4352),
                 name=("(flops, bytes) of an 8x128 bf16 RMSNorm", "8x128 bf16 RMSNorm 的 (flops, bytes)"),
                 mistakes={("read and write counted once (M*N, not 2*M*N)", "读和写只算了一次（M*N，而不是 2*M*N）"): (4096, 2304)})


def test_decode_cost_reads_the_kv_heads_not_the_query_heads(impl):
    shape = {"B": 2, "HQ": 8, "HKV": 2, "S": 100, "D": 64}
    # flops 4*2*8*100*64; bytes (2*2*2*100*64 + 2*2*8*64) * 2
    assert_equal(impl(MODULE).op_cost("decode", shape, torch.bfloat16), (409600, 106496),
                 name=("(flops, bytes) of GQA decode attention", "GQA decode 注意力的 (flops, bytes)"),
                 mistakes={("KV cache bytes counted with the query heads (HQ) instead of the KV heads",
                            "KV 缓存的字节数按查询头数（HQ）而不是 KV 头数计算"):
                           (409600, 413696)})


def test_causal_attention_does_half_the_flops(impl):
    shape = {"B": 1, "H": 2, "S": 256, "D": 64}
    full = impl(MODULE).op_cost("attention", shape, torch.float16)
    causal = impl(MODULE).op_cost("attention", shape, torch.float16, causal=True)
    assert_equal(full, (4 * 2 * 256 * 256 * 64, 4 * 2 * 256 * 64 * 2), name=("full attention (flops, bytes)",
                                                                             "完整注意力的 (flops, bytes)"))
    assert_equal(causal, (full[0] // 2, full[1]), name=("causal attention (flops, bytes)", "因果注意力的 (flops, bytes)"),
                 mistakes={("causal mask ignored: the skipped upper triangle still charged",
                            "忽略了因果掩码：跳过的上三角仍被计入"): full})


def test_ridge_point_and_roofline_on_the_h200(impl):
    m = impl(MODULE)
    peak, bw = h200_ceilings()
    ridge = m.ridge_point(peak, bw)
    expect(ridge == pytest.approx(737.7e12 / 4228e9), "part00.ridge_point",  # about 174.5 FLOP/byte
           got=repr(ridge), expected=737.7e12 / 4228e9)
    for intensity, expected in ((10.0, 10.0 * 4228e9), (1000.0, 737.7e12)):  # memory side, then capped at P
        got = m.attainable_flops(intensity, peak, bw)
        expect(got == pytest.approx(expected), "part00.lower_ceiling", intensity=intensity, got=repr(got),
               expected=expected)


@pytest.mark.parametrize("op,shape,expected", [
    ("matmul", {"M": 4096, "N": 4096, "K": 4096}, "compute"),      # intensity 1365
    ("matmul", {"M": 1, "N": 4096, "K": 4096}, "memory"),          # a GEMV: intensity about 1
    ("norm", {"M": 32768, "N": 4096}, "memory"),                   # intensity about 1
], ids=["square-matmul", "gemv", "rmsnorm"])
def test_bound_on_the_h200(impl, op, shape, expected):
    m = impl(MODULE)
    flops, nbytes = m.op_cost(op, shape, torch.bfloat16)
    assert_equal(m.bound(flops, nbytes, *h200_ceilings()), expected, name=(f"bound of {op} {shape}",
                                                                           f"{op} {shape} 的瓶颈类型"))


def test_roofline_time_is_set_by_the_slower_side(impl):
    m = impl(MODULE)
    for nbytes, expected in ((1e9, 1e-3), (4e9, 4e-3)):  # both 1 ms; then memory 4 ms, compute 1 ms
        got = m.roofline_time(1e12, nbytes, 1e15, 1e12)
        expect(got == pytest.approx(expected), "part00.roofline_time", got=repr(got), expected=expected,
               memory=nbytes / 1e12, compute=1e-3)
