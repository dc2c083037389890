"""Visible tests for part02_parallelism.zero: run with `pytest exercises/part02_parallelism`."""
import torch

from infralab.distributed import run_ranks
from infralab.testing import assert_close, assert_equal, randn

MODULE = "part02_parallelism.zero"


def test_shard_size_of_10_elements_on_4_ranks(impl):
    assert_equal(impl(MODULE).shard_size(10, 4), 3)


def test_flatten_and_pad_pads_with_zeros(impl):
    flat = impl(MODULE).flatten_and_pad([torch.ones(2, 2), torch.full((3,), 2.0)], 3)
    assert_close(flat, torch.tensor([1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 0.0, 0.0]))


def test_owner_map_splits_the_second_parameter(impl):
    assert_equal([tuple(p) for p in impl(MODULE).owner_map([3, 4], 2)], [(0, 0, 0, 3), (0, 1, 0, 1), (1, 1, 1, 4)])


def test_memory_of_stage_3_is_16_bytes_per_parameter_over_n(impl):
    assert_equal(impl(MODULE).memory_per_rank(1000, 4, 3), {"params": 500, "grads": 500, "optimizer": 3000, "total": 4000})


def test_adamw_update_matches_torch(impl, gen):
    param, grad = randn(6, generator=gen), randn(6, generator=gen)
    p = torch.nn.Parameter(param.clone())
    opt = torch.optim.AdamW([p], lr=0.01, weight_decay=0.1)
    p.grad = grad.clone()
    opt.step()
    got, _, _ = impl(MODULE).adamw_update(param, grad, torch.zeros(6), torch.zeros(6), 1, 0.01, (0.9, 0.999), 1e-8, 0.1)
    assert_close(got, p.detach())


def test_zero_adamw_step_on_two_simulated_ranks(impl, gen):
    flat = torch.cat([randn(5, generator=gen), torch.zeros(1)])  # 5 parameters, padded to 6
    grads = [torch.cat([randn(5, generator=gen), torch.zeros(1)]) for _ in range(2)]
    p = torch.nn.Parameter(flat[:5].clone())
    opt = torch.optim.AdamW([p], lr=0.01, weight_decay=0.1)
    p.grad = (grads[0][:5] + grads[1][:5]) / 2
    opt.step()
    args = [(flat, grads[r], torch.zeros(3), torch.zeros(3), 1, r, 2, 0.01, (0.9, 0.999), 1e-8, 0.1) for r in range(2)]
    for rank, res in enumerate(run_ranks(impl, MODULE, "zero_adamw_step", args, allow_collectives=True)):
        assert_close(res.value[0][:5], p.detach(), name=f"rank {rank}: parameters")
