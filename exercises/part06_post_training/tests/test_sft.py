"""Visible tests for part06_post_training.sft: run `pytest exercises/part06_post_training -m sft`."""
import math

import pytest
import torch

from infralab.testing import assert_close, assert_equal

MODULE = "part06_post_training.sft"


def test_only_assistant_tokens_get_labels(impl):
    ids = torch.tensor([5, 6, 7, 8, 9, 10])
    assistant = torch.tensor([0, 0, 0, 1, 1, 0])  # system/user, then the answer, then an end marker
    got = impl(MODULE).assistant_labels(ids, assistant)
    assert_equal(got, torch.tensor([-100, -100, -100, 8, 9, -100]), name=("labels (assistant tokens only)",
                                                                          "labels（只含 assistant token）"))


def test_packing_restarts_positions_and_ignores_each_first_label(impl):
    ids = [torch.tensor([1, 2, 3]), torch.tensor([4, 5])]
    labels = [torch.tensor([-100, 2, 3]), torch.tensor([4, 5])]
    got_ids, got_labels, positions, segments = impl(MODULE).pack_examples(ids, labels)
    assert_equal(got_ids, torch.tensor([1, 2, 3, 4, 5]), name="packed input_ids")
    assert_equal(got_labels, torch.tensor([-100, 2, 3, -100, 5]), name=("packed labels (first of each example ignored)",
                                                                        "打包后的 labels（每个样本的第一个被忽略）"))
    assert_equal(positions, torch.tensor([0, 1, 2, 0, 1]), name=("position_ids (restart per example)",
                                                                 "position_ids（每个样本重新开始）"))
    assert_equal(segments, torch.tensor([0, 0, 0, 1, 1]), name="segment_ids")


def test_packed_mask_is_block_diagonal_and_causal(impl):
    got = impl(MODULE).segment_causal_mask(torch.tensor([0, 0, 1, 1, 1]))
    expected = torch.tensor([[1, 0, 0, 0, 0],
                             [1, 1, 0, 0, 0],
                             [0, 0, 1, 0, 0],   # token 2 starts example 1: it sees only itself
                             [0, 0, 1, 1, 0],
                             [0, 0, 1, 1, 1]], dtype=torch.bool)
    assert_equal(got, expected, name=("segment-aware causal mask (plain causal lets example 1 see example 0)",
                                      "区分段的因果掩码（普通因果掩码会让样本 1 看到样本 0）"))


def test_logits_at_t_predict_the_label_at_t_plus_1(impl):
    """Position 0's logits make token 3 certain; the label at position 1 is 3."""
    V = 4
    logits = torch.zeros(1, 3, V)
    logits[0, 0, 3] = 60.0
    labels = torch.tensor([[-100, 3, 2]])
    # target 1 (labels[1] = 3, from logits[0]): loss ~0; target 2 (labels[2] = 2, uniform logits[1]): log 4
    got = impl(MODULE).causal_lm_loss(logits, labels)
    assert_close(got, torch.tensor(math.log(V) / 2), name=("loss with the shift by one", "错开一位后的损失"))


def test_token_mean_and_sequence_mean_weight_long_answers_differently(impl):
    """Row 0: a long answer (4 targets) predicted perfectly; row 1: one target at log V."""
    V = 4
    logits = torch.zeros(2, 5, V)
    labels = torch.full((2, 5), -100)
    labels[0, 1:] = 1
    logits[0, :4, 1] = 60.0  # every target of row 0 is certain
    labels[1, 1] = 2         # row 1: one target under uniform logits
    loss = impl(MODULE).causal_lm_loss
    assert_close(loss(logits, labels, "token_mean"), torch.tensor(math.log(V) / 5), name=("token mean (5 targets)",
                                                                                          "按 token 平均（5 个目标）"))
    assert_close(loss(logits, labels, "sequence_mean"), torch.tensor(math.log(V) / 2), name=("sequence mean (2 rows)",
                                                                                             "按序列平均（2 行）"))


def test_unknown_reduction_raises_value_error(impl):
    with pytest.raises(ValueError):
        impl(MODULE).causal_lm_loss(torch.zeros(1, 3, 4), torch.zeros(1, 3, dtype=torch.long), reduction="mean")
