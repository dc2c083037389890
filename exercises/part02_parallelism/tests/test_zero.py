"""Visible tests for part02_parallelism.zero: run with `pytest exercises/part02_parallelism`.

``golden`` replays recorded inputs and expectations (infralab.golden): ``golden.gen`` draws the
recorded inputs, ``golden.ref.*`` returns the recorded expected values and known mistakes' outputs.
"""
import torch

from infralab.distributed import run_ranks
from infralab.i18n import tr
from infralab.testing import Mismatch, assert_close, assert_equal, randn

MODULE = "part02_parallelism.zero"


def test_shard_size_of_10_elements_on_4_ranks(impl):
    assert_equal(impl(MODULE).shard_size(10, 4), 3, mistakes={("floor division: the last elements belong to no rank",
                                                               "用了向下取整的除法：最后的元素不属于任何 rank"): 2})


def test_flatten_and_pad_pads_with_zeros(impl, golden):
    flat = impl(MODULE).flatten_and_pad([torch.ones(2, 2), torch.full((3,), 2.0)], 3)
    assert_equal(tuple(flat.shape), (9,), name=("shape of the flat buffer for 7 elements on 3 ranks",
                                                "7 个元素分到 3 个 rank 时扁平缓冲区的形状"),
                 mistakes={golden.ref.UNPADDED: (7,)})
    assert_close(flat, torch.tensor([1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 0.0, 0.0]))


def test_owner_map_splits_the_second_parameter(impl, golden):
    assert_equal([tuple(p) for p in impl(MODULE).owner_map([3, 4], 2)], [(0, 0, 0, 3), (0, 1, 0, 1), (1, 1, 1, 4)],
                 mistakes={golden.ref.FLOOR_SHARDS: golden.ref.floor_owner_map([3, 4], 2)})


def test_owner_map_of_10_elements_on_4_ranks_gives_the_last_rank_one_element(impl, golden):
    """Shards of ceil(10 / 4) = 3: ranks 0-2 own 3 elements each, rank 3 owns 1 (and 2 of padding)."""
    got = [tuple(int(v) for v in p) for p in impl(MODULE).owner_map([10], 4)]
    assert_equal(got, [(0, 0, 0, 3), (1, 0, 3, 6), (2, 0, 6, 9), (3, 0, 9, 10)], name="owner_map([10], 4)",
                 mistakes={golden.ref.FLOOR_SHARDS: golden.ref.floor_owner_map([10], 4)})


def test_memory_of_stage_3_is_16_bytes_per_parameter_over_n(impl, golden):
    assert_equal(impl(MODULE).memory_per_rank(1000, 4, 3), {"params": 500, "grads": 500, "optimizer": 3000, "total": 4000},
                 mistakes=golden.ref.memory_mistakes(1000, 4, 3))


def test_memory_of_stage_2_shards_gradients_and_optimizer_states(impl, golden):
    """Stage 2: fp16 parameters stay whole (2 bytes each); gradients and optimizer states are sharded."""
    assert_equal(impl(MODULE).memory_per_rank(1000, 4, 2), golden.ref.expected_memory(1000, 4, 2),
                 mistakes=golden.ref.memory_mistakes(1000, 4, 2))


def test_adamw_update_matches_torch_over_three_steps(impl, golden):
    param, grads = randn(6, generator=golden.gen), [randn(6, generator=golden.gen) for _ in range(3)]
    p, m, v = param, torch.zeros(6), torch.zeros(6)
    for t, grad in enumerate(grads, start=1):
        p, m, v = impl(MODULE).adamw_update(p, grad, m, v, t, 0.01, (0.9, 0.999), 1e-8, 0.1)
    expected, _, _ = golden.ref.torch_adamw(param, grads, 0.01, (0.9, 0.999), 1e-8, 0.1)
    assert_close(p, expected, name=("parameter after 3 AdamW steps", "3 步 AdamW 之后的参数"),
                 mistakes=golden.ref.adamw_mistakes(param, grads, 0.01, (0.9, 0.999), 1e-8, 0.1))


def test_zero_adamw_step_averages_gradients_over_two_simulated_ranks(impl, golden):
    """Step 3 from a non-zero optimizer state (at step 1 Adam cannot tell a sum from a mean)."""
    gen, hyper = golden.gen, golden.ref.HYPER
    flat = torch.cat([randn(5, generator=gen), torch.zeros(1)])  # 5 parameters, padded to 6
    grads = [torch.cat([randn(5, generator=gen), torch.zeros(1)]) for _ in range(2)]
    m_full, v_full = randn(6, generator=gen) * 0.1, randn(6, generator=gen).abs() * 0.1
    args = [(flat, grads[r], m_full[3 * r:3 * r + 3].clone(), v_full[3 * r:3 * r + 3].clone(), 3, r, 2, hyper["lr"],
             hyper["betas"], hyper["eps"], hyper["weight_decay"]) for r in range(2)]
    results = run_ranks(impl, MODULE, "zero_adamw_step", args, allow_collectives=True)
    want = golden.ref.step_expectation(flat, grads, 5, 3, 2, 3, (m_full, v_full))
    for rank, res in enumerate(results):  # rank r owns elements 3r .. 3r + 2 of the 5 valid ones
        if not isinstance(res.value, (tuple, list)) or len(res.value) != 3:
            raise Mismatch(tr("part02.zero.step_triple", rank=rank, got=type(res.value).__name__))
        got_flat, got_m, got_v = res.value
        assert_close(got_flat[:5], want["params"], name=(f"rank {rank}: gathered parameters", f"rank {rank}：收集到的参数"),
                     mistakes=want["mistakes"][rank])
        own = slice(3 * rank, min(3 * rank + 3, 5))
        assert_close(got_m[:own.stop - own.start], want["exp_avg"][own], name=(f"rank {rank}: exp_avg shard",
                                                                               f"rank {rank}：exp_avg 分片"))
        assert_close(got_v[:own.stop - own.start], want["exp_avg_sq"][own], name=(f"rank {rank}: exp_avg_sq shard",
                                                                                  f"rank {rank}：exp_avg_sq 分片"))
