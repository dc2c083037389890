"""Hidden tests for part00_foundations.roofline: hand-derived tables on the calibrated H200 profile."""
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from infralab.course import find_course_root, load_course
from infralab.perf.profiles import load_profile
from infralab.testing import assert_close, assert_equal

MODULE = "part00_foundations.roofline"
COURSE = load_course(find_course_root(Path(__file__).parent))
H200 = load_profile(COURSE.root / COURSE.profiles_dir / "h200.yml")
PEAK = H200.ceilings["matmul_bf16_tflops"] * 1e12      # 737.7e12 FLOP/s
BW = H200.ceilings["copy_gbps"] * 1e9                  # 4228e9 bytes/s; ridge about 174.5 FLOP/byte

# (op, shape, causal, flops, bytes, bound on the H200), bf16, each computed by hand
H200_TABLE = [
    # 2*4096^3; 3 * 4096^2 * 2
    ("matmul", {"M": 4096, "N": 4096, "K": 4096}, False, 137438953472, 100663296, "compute"),
    # a decode GEMV: 2*4096^2; (4096 + 4096^2 + 4096) * 2
    ("matmul", {"M": 1, "N": 4096, "K": 4096}, False, 33554432, 33570816, "memory"),
    # a 128-token batch: intensity 120.5, still under the ridge
    ("matmul", {"M": 128, "N": 4096, "K": 4096}, False, 4294967296, 35651584, "memory"),
    # a 1024-token batch: intensity 682.7
    ("matmul", {"M": 1024, "N": 4096, "K": 4096}, False, 34359738368, 50331648, "compute"),
    # Part 03's FlashAttention shape: 4*4*32*4096^2*128; 4*4*32*4096*128*2
    ("attention", {"B": 4, "H": 32, "S": 4096, "D": 128}, False, 1099511627776, 536870912, "compute"),
    ("attention", {"B": 4, "H": 32, "S": 4096, "D": 128}, True, 549755813888, 536870912, "compute"),
    # short sequences: 4*1*32*64^2*128; 4*32*64*128*2 -> intensity 32
    ("attention", {"B": 1, "H": 32, "S": 64, "D": 128}, False, 67108864, 2097152, "memory"),
    # Part 03's RMSNorm shape: 4*32768*4096; (2*32768*4096 + 4096) * 2
    ("norm", {"M": 32768, "N": 4096}, False, 536870912, 536879104, "memory"),
    # Part 03's decode shape: 4*64*32*8192*128; (2*64*8*8192*128 + 2*64*32*128) * 2
    ("decode", {"B": 64, "HQ": 32, "HKV": 8, "S": 8192, "D": 128}, False, 8589934592, 2148532224, "memory"),
]
IDS = [f"{op}-{'x'.join(map(str, shape.values()))}{'-causal' if causal else ''}"
       for op, shape, causal, *_ in H200_TABLE]


def cost_mistakes(op: str, shape: dict, s: int, causal: bool, flops: int, nbytes: int) -> dict:
    """The (flops, bytes) each known mistake gives, built from the right answer."""
    out = {("dtype size ignored (bytes counted as elements)", "忽略了 dtype 的大小（把元素个数当成字节数）"): (flops, nbytes // s)}
    if op == "matmul":
        M, N = shape["M"], shape["N"]
        out[("a multiply-add counted as 1 FLOP (M*N*K)", "一次乘加算成了 1 FLOP（M*N*K）")] = (flops // 2, nbytes)
        out[("the output C not counted (reads only)", "没有计入输出 C（只算了读取）")] = (flops, nbytes - M * N * s)
    if op == "norm":
        M, N = shape["M"], shape["N"]
        out[("read and write counted once (M*N bytes, not 2*M*N)",
             "读和写只算了一次（M*N 字节，而不是 2*M*N）")] = (flops, nbytes - M * N * s)
    if op == "attention":
        out[("causal mask ignored: full FLOPs",
             "忽略了因果掩码：按完整 FLOPs 计算")] = (flops * 2, nbytes) if causal else (flops, nbytes)
        out[("the S x S score matrix counted as HBM traffic (unfused attention)",
             "S x S 的分数矩阵被算作 HBM 流量（未融合的注意力）")] = (
            flops, nbytes + 2 * shape["B"] * shape["H"] * shape["S"] ** 2 * s)
        out[("a multiply-add counted as 1 FLOP", "一次乘加算成了 1 FLOP")] = (flops // 2, nbytes)
    if op == "decode":
        B, HQ, HKV, S, D = (shape[k] for k in ("B", "HQ", "HKV", "S", "D"))
        out[("KV cache bytes counted with the query heads (HQ) instead of the KV heads",
             "KV 缓存的字节数按查询头数（HQ）而不是 KV 头数计算")] = (
            flops, nbytes + 2 * B * (HQ - HKV) * S * D * s)
        out[("only K read from the cache (V forgotten)", "只从缓存读了 K（忘了 V）")] = (flops, nbytes - B * HKV * S * D * s)
    return out


@pytest.mark.weight(3)
@pytest.mark.parametrize("op,shape,causal,flops,nbytes,expected_bound", H200_TABLE, ids=IDS)
def test_op_cost_and_bound_match_the_hand_derived_h200_table(impl, op, shape, causal, flops, nbytes, expected_bound):
    m = impl(MODULE)
    got = m.op_cost(op, shape, torch.bfloat16, causal=causal)
    assert_equal(got, (flops, nbytes), name=(f"(flops, bytes) of {op} {shape}", f"{op} {shape} 的 (flops, bytes)"),
                 mistakes=cost_mistakes(op, shape, 2, causal, flops, nbytes))
    for value, want, what in zip(got, (flops, nbytes), ("flops", "bytes")):   # Python ints, not floats equal to them
        assert_equal(value, want, name=(f"{what} of {op} {shape} (a Python int)", f"{op} {shape} 的 {what}（Python int）"),
                     mistakes={("a float instead of a Python int (true division / where // keeps an int)",
                                "返回了 float 而不是 Python int（用了真除法 /，// 才保持整数）"): float(want)})
    assert_equal(m.bound(flops, nbytes, PEAK, BW), expected_bound, name=(f"bound of {op} {shape} on the H200",
                                                                         f"{op} {shape} 在 H200 上的瓶颈类型"),
                 mistakes={("compute and memory swapped",
                            "计算与访存对调了"): "memory" if expected_bound == "compute" else "compute"})


def reference_cost(op: str, shape: dict, s: int, causal: bool) -> tuple[int, int]:
    """The formulas again, written per tensor: (elements read + written) and multiply-adds."""
    g = shape.get
    if op == "matmul":
        tensors, macs = [g("M") * g("K"), g("K") * g("N"), g("M") * g("N")], g("M") * g("N") * g("K")
        return 2 * macs, sum(tensors) * s
    if op == "attention":
        qkvo = [g("B") * g("H") * g("S") * g("D")] * 4
        macs = 2 * g("B") * g("H") * g("S") ** 2 * g("D")
        return (2 * macs) // (2 if causal else 1), sum(qkvo) * s
    if op == "norm":
        return 4 * g("M") * g("N"), (g("M") * g("N") + g("M") * g("N") + g("N")) * s
    kv = [g("B") * g("HKV") * g("S") * g("D")] * 2
    qo = [g("B") * g("HQ") * g("D")] * 2
    return 2 * 2 * g("B") * g("HQ") * g("S") * g("D"), (sum(kv) + sum(qo)) * s


SHAPES = {
    "matmul": st.fixed_dictionaries({"M": st.integers(1, 9000), "N": st.integers(1, 9000), "K": st.integers(1, 9000)}),
    "attention": st.fixed_dictionaries({"B": st.integers(1, 16), "H": st.integers(1, 64), "S": st.integers(1, 9000),
                                        "D": st.sampled_from([64, 80, 128, 256])}),
    "norm": st.fixed_dictionaries({"M": st.integers(1, 70000), "N": st.integers(1, 16384)}),
    "decode": st.integers(1, 8).flatmap(lambda hkv: st.fixed_dictionaries({
        "B": st.integers(1, 256), "HKV": st.just(hkv), "HQ": st.sampled_from([hkv, 2 * hkv, 4 * hkv, 8 * hkv]),
        "S": st.integers(1, 131072), "D": st.sampled_from([64, 128])})),
}


@pytest.mark.weight(2)
@given(data=st.data(), op=st.sampled_from(sorted(SHAPES)),
       dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn]))
def test_op_cost_of_random_shapes_and_dtypes(impl, data, op, dtype):
    shape = data.draw(SHAPES[op])
    causal = op == "attention" and data.draw(st.booleans())
    expected = reference_cost(op, shape, dtype.itemsize, causal)
    assert_equal(impl(MODULE).op_cost(op, shape, dtype, causal=causal), expected,
                 name=(f"(flops, bytes) of {op} {shape} {dtype}{' causal' if causal else ''}",
                       f"{op} {shape} {dtype}{' causal' if causal else ''} 的 (flops, bytes)"),
                 mistakes=cost_mistakes(op, shape, dtype.itemsize, causal, *expected))


@pytest.mark.parametrize("call", [
    dict(op="conv", shape={"M": 1}), dict(op="matmul", shape={"M": 4, "N": 4, "K": 4}, causal=True)],
    ids=["unknown-op", "causal-matmul"])
def test_op_cost_rejects_bad_arguments(impl, call):
    with pytest.raises(ValueError):
        impl(MODULE).op_cost(call["op"], call["shape"], torch.float32, causal=call.get("causal", False))


def roofline_mistakes(intensity: float) -> dict:
    return {("max instead of min (the roofline is the lower ceiling)",
             "用了 max 而不是 min（roofline 取较低的上限）"): max(PEAK, intensity * BW),
            ("intensity divided by the bandwidth instead of multiplied",
             "算术强度除以了带宽，而不是乘以带宽"): min(PEAK, intensity / BW),
            ("no compute ceiling (intensity * bandwidth only)", "没有计算上限（只有 强度 * 带宽）"): intensity * BW}


@pytest.mark.weight(2)
@given(intensity=st.floats(0.01, 1e5))
def test_attainable_flops_follow_the_h200_roofline(impl, intensity):
    got = impl(MODULE).attainable_flops(intensity, PEAK, BW)
    expected = min(PEAK, intensity * BW)
    assert_close(torch.tensor(float(got), dtype=torch.float64), torch.tensor(expected, dtype=torch.float64),
                 name=(f"attainable FLOP/s at intensity {intensity:g}", f"算术强度 {intensity:g} 下可达的 FLOP/s"),
                 mistakes={k: torch.tensor(float(v), dtype=torch.float64) for k, v in roofline_mistakes(intensity).items()})


def test_intensity_and_ridge_point_on_the_h200(impl):
    m = impl(MODULE)
    assert_close(torch.tensor(float(m.ridge_point(PEAK, BW)), dtype=torch.float64),
                 torch.tensor(737.7e12 / 4228e9, dtype=torch.float64), name=("H200 ridge point (FLOP/byte)",
                                                                             "H200 的屋脊点（FLOP/byte）"),
                 mistakes={("ridge inverted (bandwidth / peak)",
                            "拐点算反了（带宽 / 峰值）"): torch.tensor(4228e9 / 737.7e12, dtype=torch.float64)})
    assert_close(torch.tensor(float(m.arithmetic_intensity(137438953472, 100663296)), dtype=torch.float64),
                 torch.tensor(4096 / 3, dtype=torch.float64), name=("intensity of a 4096^3 bf16 matmul",
                                                                    "4096^3 bf16 matmul 的算术强度"),
                 mistakes={("bytes / flops instead of flops / bytes",
                            "用了 字节 / FLOPs 而不是 FLOPs / 字节"): torch.tensor(3 / 4096, dtype=torch.float64)})
    with pytest.raises(ValueError):
        m.arithmetic_intensity(1.0, 0.0)


def test_bound_at_the_ridge_point_is_compute(impl):
    # intensity exactly 100 = 1000 / 10: "at or above the ridge" is compute-bound
    m = impl(MODULE)
    assert_equal(m.bound(100.0, 1.0, 1000.0, 10.0), "compute", name=("bound exactly at the ridge", "恰在屋脊点处的瓶颈类型"))
    assert_equal(m.bound(99.0, 1.0, 1000.0, 10.0), "memory", name=("bound just below the ridge", "略低于屋脊点的瓶颈类型"))
    assert_equal(m.bound(101.0, 1.0, 1000.0, 10.0), "compute", name=("bound just above the ridge", "略高于屋脊点的瓶颈类型"))


@pytest.mark.weight(2)
@pytest.mark.parametrize("op,shape,causal,flops,nbytes,expected_bound", H200_TABLE, ids=IDS)
def test_roofline_time_on_the_h200(impl, op, shape, causal, flops, nbytes, expected_bound):
    got = impl(MODULE).roofline_time(flops, nbytes, PEAK, BW)
    expected = max(flops / PEAK, nbytes / BW)
    assert_close(torch.tensor(float(got), dtype=torch.float64), torch.tensor(expected, dtype=torch.float64),
                 name=(f"shortest time of {op} {shape} on the H200 (s)", f"{op} {shape} 在 H200 上的最短时间（秒）"),
                 mistakes={("sum of compute and memory time (no overlap)", "计算时间与访存时间相加了（没有重叠）"):
                           torch.tensor(flops / PEAK + nbytes / BW, dtype=torch.float64),
                           ("min instead of max",
                            "用了 min 而不是 max"): torch.tensor(min(flops / PEAK, nbytes / BW), dtype=torch.float64)})
