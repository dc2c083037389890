"""Hidden tests for part02_parallelism.zero (partition rule, memory, AdamW, sharded step on sim and gloo)."""
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from infralab.distributed import run_ranks
from infralab.i18n import tr
from infralab.mistakes.part02_parallelism.zero import (FLOOR_SHARDS, HYPER, UNPADDED, adamw_mistakes,
                                                       check_step_against_adamw, expected_memory, floor_owner_map,
                                                       fsdp_style_owner_map, memory_mistakes, torch_adamw)
from infralab.testing import Mismatch, assert_close, assert_equal, randn

MODULE = "part02_parallelism.zero"
numels_st = st.lists(st.integers(1, 13), min_size=1, max_size=5)


# --- the partition rule

@given(total=st.integers(0, 200), n=st.integers(1, 9))
def test_shard_size_rounds_up(impl, total, n):
    assert_equal(impl(MODULE).shard_size(total, n), math.ceil(total / n), name=f"shard_size({total}, {n})",
                 mistakes={("floor division: the last elements belong to no rank",
                            "用了向下取整的除法：最后的元素不属于任何 rank"): total // n})


@given(numels=numels_st, n=st.integers(1, 4), seed=st.integers(0, 2**31 - 1))
def test_flatten_and_pad_lays_params_back_to_back_then_zeros(impl, numels, n, seed):
    g = torch.Generator().manual_seed(seed)
    shapes = [(k,) if k % 2 else (2, k // 2) for k in numels]
    tensors = [randn(*s, generator=g) for s in shapes]
    total = sum(numels)
    padded = math.ceil(total / n) * n
    flat = impl(MODULE).flatten_and_pad(tensors, n)
    if not isinstance(flat, torch.Tensor):
        raise Mismatch(tr("part02.zero.flat_not_tensor", got=type(flat).__name__))
    assert_equal(tuple(flat.shape), (padded,), name=(f"shape of the flat buffer for {total} elements on {n} ranks",
                                                     f"{total} 个元素分到 {n} 个 rank 时扁平缓冲区的形状"),
                 mistakes={UNPADDED: (total,)})
    expected = torch.cat([torch.cat([t.reshape(-1) for t in tensors]), torch.zeros(padded - total)])
    assert_close(flat, expected, name=("flat buffer", "扁平缓冲区"))


@pytest.mark.weight(2)
@given(numels=numels_st, n=st.integers(1, 5))
def test_owner_map_matches_the_torch_chunk_rule(impl, numels, n):
    got = impl(MODULE).owner_map(numels, n)
    got = [tuple(int(v) for v in p) for p in got] if isinstance(got, (list, tuple)) else got
    assert_equal(got, fsdp_style_owner_map(numels, n), name=f"owner_map({numels}, {n})",
                 mistakes={FLOOR_SHARDS: floor_owner_map(numels, n)})


def test_owner_map_example_from_the_specification(impl):
    assert_equal([tuple(p) for p in impl(MODULE).owner_map([3, 4], 2)], [(0, 0, 0, 3), (0, 1, 0, 1), (1, 1, 1, 4)])


@pytest.mark.parametrize("numels,n", [([10], 4), ([3, 3], 5), ([1, 1], 4)])
def test_owner_map_leaves_ranks_with_only_padding_empty(impl, numels, n):
    """10 elements on 4 ranks: shards of 3, rank 3 holds 1 element; 2 elements on 4 ranks: ranks 2, 3 hold none."""
    got = [tuple(int(v) for v in p) for p in impl(MODULE).owner_map(numels, n)]
    assert_equal(got, fsdp_style_owner_map(numels, n), name=f"owner_map({numels}, {n})",
                 mistakes={FLOOR_SHARDS: floor_owner_map(numels, n)})


# --- memory per rank

@pytest.mark.weight(2)
@pytest.mark.parametrize("stage", [0, 1, 2, 3])
@pytest.mark.parametrize("psi,n", [(7_500_000_000, 64), (1_000_003, 3), (10, 4)])
def test_memory_per_rank_follows_the_zero_paper(impl, psi, n, stage):
    """7.5B parameters on 64 GPUs: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB for stages 0-3 (ZeRO paper, Fig. 1)."""
    got = impl(MODULE).memory_per_rank(psi, n, stage)
    got = {k: int(v) for k, v in got.items()} if isinstance(got, dict) else got
    assert_equal(got, expected_memory(psi, n, stage), name=f"memory_per_rank({psi}, {n}, stage={stage})",
                 mistakes=memory_mistakes(psi, n, stage))


def test_memory_per_rank_rejects_unknown_stages(impl):
    with pytest.raises(ValueError):
        impl(MODULE).memory_per_rank(1000, 4, 4)


# --- AdamW

@pytest.mark.weight(2)
@given(steps=st.integers(1, 4), lr=st.sampled_from([1e-3, 3e-2]), wd=st.sampled_from([0.0, 0.1, 0.5]),
       betas=st.sampled_from([(0.9, 0.999), (0.8, 0.95)]), seed=st.integers(0, 2**31 - 1))
def test_adamw_update_matches_torch_optim_adamw(impl, steps, lr, wd, betas, seed):
    g = torch.Generator().manual_seed(seed)
    param = randn(11, generator=g)
    grads = [randn(11, generator=g) for _ in range(steps)]
    p, m, v = param, torch.zeros(11), torch.zeros(11)
    for t, grad in enumerate(grads, start=1):
        p, m, v = impl(MODULE).adamw_update(p, grad, m, v, t, lr, betas, 1e-8, wd)
    ref_p, ref_m, ref_v = torch_adamw(param, grads, lr, betas, 1e-8, wd)
    assert_close(p, ref_p, name=(f"parameter after {steps} AdamW steps", f"{steps} 步 AdamW 之后的参数"),
                 mistakes=adamw_mistakes(param, grads, lr, betas, 1e-8, wd))
    assert_close(m, ref_m, name="exp_avg")
    assert_close(v, ref_v, name="exp_avg_sq")


def test_adamw_update_weight_decay_is_decoupled(impl, gen):
    """Large weight decay and a zero gradient: decoupled decay only scales the parameter."""
    param = randn(8, generator=gen)
    zero = torch.zeros(8)
    grads = [randn(8, generator=gen) * 0.01]
    p, _, _ = impl(MODULE).adamw_update(param, grads[0], zero, zero, 1, 0.1, (0.9, 0.999), 1e-8, 0.5)
    ref, _, _ = torch_adamw(param, grads, 0.1, (0.9, 0.999), 1e-8, 0.5)
    assert_close(p, ref, name="parameter", mistakes=adamw_mistakes(param, grads, 0.1, (0.9, 0.999), 1e-8, 0.5))


# --- the sharded step

def sharded_inputs(numels, n, g):
    total = sum(numels)
    size = math.ceil(total / n)
    flat = torch.zeros(size * n)
    flat[:total] = randn(total, generator=g)
    grads = []
    for _ in range(n):
        grad = torch.zeros(size * n)
        grad[:total] = randn(total, generator=g)
        grads.append(grad)
    return flat, grads, total, size


@pytest.mark.weight(3)
@pytest.mark.parametrize("numels,n", [([5, 2], 3), ([4, 4], 2), ([3, 6, 2], 3), ([9], 4)])
def test_zero_adamw_step_equals_unsharded_adamw_on_the_simulated_group(impl, gen, numels, n):
    flat, grads, total, size = sharded_inputs(numels, n, gen)
    states = [(torch.zeros(size), torch.zeros(size)) for _ in range(n)]
    for step in (1, 2, 3):
        args = [(flat, grads[r], states[r][0], states[r][1], step, r, n, HYPER["lr"], HYPER["betas"], HYPER["eps"],
                 HYPER["weight_decay"]) for r in range(n)]
        results = run_ranks(impl, MODULE, "zero_adamw_step", args, allow_collectives=True)
        full_m = torch.cat([s[0] for s in states])
        full_v = torch.cat([s[1] for s in states])
        check_step_against_adamw(results, flat, grads, total, size, n, step,
                                 None if step == 1 else (full_m, full_v), where=f"step {step}: ")
        flat = results[0].value[0].clone()
        flat[total:] = 0
        states = [(res.value[1], res.value[2]) for res in results]
        grads = [g * 0.5 + 0.1 for g in grads]
        for g in grads:
            g[total:] = 0


@pytest.mark.timeout(120)
@pytest.mark.weight(3)
@pytest.mark.parametrize("n", [2, 3])
def test_zero_adamw_step_on_real_gloo_processes(impl, gen, n):
    """One step from a non-trivial state (step 3) on gloo, parameters that do not divide by n."""
    numels = [5, 3] if n == 2 else [4, 3, 1]  # 8 on 2 ranks pads to 8; 8 on 3 ranks pads to 9
    flat, grads, total, size = sharded_inputs(numels, n, gen)
    m_full = randn(size * n, generator=gen) * 0.1
    v_full = randn(size * n, generator=gen).abs() * 0.1
    args = [(flat, grads[r], m_full[r * size:(r + 1) * size].clone(), v_full[r * size:(r + 1) * size].clone(), 3, r, n,
             HYPER["lr"], HYPER["betas"], HYPER["eps"], HYPER["weight_decay"]) for r in range(n)]
    results = run_ranks(impl, MODULE, "zero_adamw_step", args, backend="gloo", allow_collectives=True, timeout_s=30)
    check_step_against_adamw(results, flat, grads, total, size, n, 3, (m_full, v_full), where="gloo: ")
