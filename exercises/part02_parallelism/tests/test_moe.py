"""Visible tests for part02_parallelism.moe: run with `pytest exercises/part02_parallelism -k moe`.

``golden`` replays recorded inputs and expectations (infralab.golden); ``run_ranks`` runs
``expert_parallel_moe`` on every rank of a simulated group, and ``assert_traffic`` checks each rank's
calls and bytes (``infralab.distributed``'s accounting: an all_to_all_single counts its input).
"""
import torch

from infralab.distributed import Counts, assert_traffic, run_ranks
from infralab.i18n import tr
from infralab.testing import assert_close, assert_equal, randn

MODULE = "part02_parallelism.moe"


def test_top_k_routing_renormalises_the_chosen_probabilities(impl, golden):
    logits = randn(5, 4, generator=golden.gen, scale=2.0)
    weights, experts = impl(MODULE).top_k_routing(logits, 2)
    want_w, want_e = golden.ref.reference_routing(logits, 2)
    assert_equal(experts, want_e, name=("chosen experts", "选中的专家"))
    assert_close(weights, want_w, name=("routing weights (each row sums to 1)",
                                        "路由权重（每行和为 1）"), mistakes=golden.ref.routing_mistakes(logits, 2))


def test_capacity_of_10_tokens_top2_over_4_experts_with_factor_1_25(impl, golden):
    assert_equal(int(impl(MODULE).expert_capacity(10, 4, 2, 1.25)), 7, name="ceil(1.25 * 10 * 2 / 4)",
                 mistakes=golden.ref.capacity_mistakes(10, 4, 2, 1.25))


def test_capacity_mask_serves_first_choices_first(impl, golden):
    """Expert 0 has 2 slots: the first choices of tokens 1 and 2 take them; token 0's second choice is dropped."""
    experts = torch.tensor([[1, 0], [0, 1], [0, 2]])
    want = torch.tensor([[True, False], [True, True], [True, True]])
    assert_equal(impl(MODULE).capacity_mask(experts, 3, 2), want, name=("kept assignments", "保留的分配"),
                 mistakes=golden.ref.keep_mistakes(experts, 3, 2))


def test_load_balancing_loss_is_one_when_perfectly_balanced(impl, golden):
    logits, experts = torch.zeros(4, 4), torch.tensor([[0, 1], [2, 3], [1, 0], [3, 2]])
    assert_close(impl(MODULE).load_balancing_loss(logits, experts, 4), torch.tensor(1.0), name=("balanced aux loss",
                                                                                                "均衡时的辅助损失"),
                 mistakes=golden.ref.balance_mistakes(logits, experts, 4))


def test_load_balancing_loss_on_random_logits(impl, golden):
    logits = randn(6, 4, generator=golden.gen, scale=2.0)
    experts = golden.ref.reference_routing(logits, 2)[1]
    assert_close(impl(MODULE).load_balancing_loss(logits, experts, 4), golden.ref.reference_balance_loss(logits, experts, 4),
                 name=("aux loss", "辅助损失"), mistakes=golden.ref.balance_mistakes(logits, experts, 4))


def test_biased_routing_weighs_with_the_unbiased_scores(impl, golden):
    scores = torch.tensor([[0.9, 0.8, 0.1, 0.2]])
    bias = torch.tensor([0.0, -0.5, 0.0, 0.3])  # scores + bias = [0.9, 0.3, 0.1, 0.5]: experts 0 and 3
    weights, experts = impl(MODULE).biased_routing(scores, bias, 2)
    assert_equal(experts, torch.tensor([[0, 3]]), name=("experts chosen by scores + bias", "按 scores + bias 选出的专家"))
    assert_close(weights, torch.tensor([[0.9 / 1.1, 0.2 / 1.1]]), name=("gate weights", "门控权重"),
                 mistakes=golden.ref.biased_mistakes(scores, bias, 2))


def test_routing_bias_decreases_for_overloaded_experts(impl, golden):
    experts = torch.tensor([[0], [0], [0], [1]])  # loads [3, 1, 0], mean 4/3
    bias = torch.zeros(3)
    assert_close(impl(MODULE).update_routing_bias(bias, experts, 3, 0.1), torch.tensor([-0.1, 0.1, 0.1]),
                 name=("updated bias", "更新后的 bias"), mistakes=golden.ref.bias_update_mistakes(bias, experts, 3, 0.1))


def test_moe_forward_matches_a_per_token_loop(impl, golden):
    gen = golden.gen
    x, router = randn(5, 6, generator=gen), randn(4, 6, generator=gen)
    gate, up, down = (randn(4, 3, 6, generator=gen) * 0.3, randn(4, 3, 6, generator=gen) * 0.3,
                      randn(4, 6, 3, generator=gen) * 0.3)
    assert_close(impl(MODULE).moe_forward(x, router, gate, up, down, 2), golden.ref.reference_moe(x, router, gate, up, down, 2),
                 name="MoE output", mistakes=golden.ref.moe_mistakes(x, router, gate, up, down, 2))


def test_expert_parallel_moe_on_2_ranks_is_three_all_to_alls_of_the_routed_tokens(impl, golden):
    """Counts (E int64), then the T_r * k routed rows out, then the results of the rows routed here back:
    three dist.all_to_all_single per rank, nothing else. Sending every token everywhere moves the batch W times."""
    gen, H = golden.gen, 6
    xs, router = [randn(4, H, generator=gen), randn(3, H, generator=gen)], randn(4, H, generator=gen)
    gate, up, down = (randn(4, 3, H, generator=gen) * 0.3, randn(4, 3, H, generator=gen) * 0.3,
                      randn(4, H, 3, generator=gen) * 0.3)
    args = [(xs[r], router, gate[2 * r:2 * r + 2], up[2 * r:2 * r + 2], down[2 * r:2 * r + 2], 2, r, 2) for r in range(2)]
    results = run_ranks(impl, MODULE, "expert_parallel_moe", args, allow_collectives=True)
    for rank, res in enumerate(results):
        assert_close(res.value, golden.ref.reference_moe(xs[rank], router, gate, up, down, 2), name=(f"rank {rank}'s output",
                                                                                                     f"rank {rank} 的输出"))
    expected = [{"all_to_all_single": Counts(3, b)} for b in golden.ref.ep_expected_bytes(xs, router, 2, 2, 4, H)]
    row, everything = H * 4, 4 + 3  # bytes of one token, tokens of both ranks
    whole_batch = [lambda t, mine=len(x): sum(c.bytes for c in t.values()) >= (2 * mine + everything) * row for x in xs]
    assert_traffic(results, expected, "expert_parallel_moe",
                   {tr("part02.moe.point_to_point"): lambda t: "send" in t or "recv" in t,
                    tr("part02.moe.every_token_to_every_rank"): whole_batch})
