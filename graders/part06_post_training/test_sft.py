"""Hidden tests for part06_post_training.sft.

The loss is compared with transformers' ``LlamaForCausalLM(labels=...)`` loss (5.17) on a tiny
random model (infralab.tiny_llama), and packing with running that model on the packed row with
the submission's mask and position ids: every example's loss must equal its unpacked loss.
"""
from functools import lru_cache

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from infralab.testing import assert_close, assert_equal, expect, randn
from infralab.tiny_llama import hf_llama, random_llama_weights, tiny_llama_config

MODULE = "part06_post_training.sft"
IGNORE = -100
VOCAB = 64
lengths_st = st.lists(st.integers(1, 9), min_size=1, max_size=5)


@lru_cache(maxsize=1)
def tiny_model(seed: int = 7):
    pytest.importorskip("transformers")
    config = tiny_llama_config(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2)
    return hf_llama(config, random_llama_weights(config, torch.Generator().manual_seed(seed)))


def random_chat(g, lengths):
    """One example per length: random ids, an assistant span at the end of each (>= 1 token)."""
    ids = [torch.randint(0, VOCAB, (n,), generator=g) for n in lengths]
    starts = [int(torch.randint(0, n, (1,), generator=g)) for n in lengths]
    masks = [torch.arange(n) >= s for n, s in zip(lengths, starts)]
    return ids, masks


# ---- labels ------------------------------------------------------------------------------------

def label_mistakes(ids, mask):
    ids = ids.long()
    masked = torch.where(mask.bool(), ids, torch.full_like(ids, IGNORE))
    return {
        ("loss on the prompt tokens too: labels = input_ids everywhere",
         "prompt token 也算了损失：labels 处处等于 input_ids"): lambda: ids.clone(),
        ("mask inverted: the prompt labelled, the answer ignored",
         "掩码取反了：prompt 有标签，回答被忽略"): lambda: torch.where(mask.bool(), torch.full_like(ids, IGNORE), ids),
        ("labels shifted in the labelling step (the loss shifts again: shifted twice)",
         "在打标签时就移位了（损失还会再移一次：移了两次）"):
            lambda: torch.cat([masked[..., 1:], torch.full_like(masked[..., :1], IGNORE)], dim=-1),
        ("ignored positions set to 0 instead of -100",
         "被忽略的位置设成了 0 而不是 -100"): lambda: torch.where(mask.bool(), ids, torch.zeros_like(ids)),
    }


@pytest.mark.weight(2)
@given(B=st.integers(0, 3), T=st.integers(1, 12), as_int=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_assistant_labels_keep_only_assistant_tokens(impl, B, T, as_int, seed):
    g = torch.Generator().manual_seed(seed)
    shape = (T,) if B == 0 else (B, T)
    ids = torch.randint(0, VOCAB, shape, generator=g)
    mask = torch.rand(shape, generator=g) > 0.5
    before = ids.clone()
    got = impl(MODULE).assistant_labels(ids, mask.long() if as_int else mask)
    expected = torch.where(mask, ids, torch.full_like(ids, IGNORE))
    assert_equal(got, expected, name=("assistant labels", "assistant 的 labels"), mistakes=label_mistakes(ids, mask))
    expect(torch.equal(ids, before), "check.modified_input", name="assistant_labels")


@pytest.mark.parametrize("dtype", [torch.int32, torch.uint8])
def test_assistant_labels_of_narrower_integer_ids_are_long(impl, gen, dtype):
    """Ids of any integer dtype (uint8 for a byte-level vocabulary): labels are long, -100 included."""
    ids = torch.randint(0, VOCAB, (2, 9), generator=gen, dtype=dtype)
    mask = torch.rand(2, 9, generator=gen) > 0.5
    mask[:, 0], mask[:, -1] = False, True
    expected = torch.where(mask, ids.long(), torch.full((2, 9), IGNORE))
    mistakes = label_mistakes(ids, mask)
    mistakes[("-100 written in the ids' dtype first (uint8 wraps it to 156)",
              "-100 先按 ids 的 dtype 写入（uint8 会把它回绕成 156）")] = \
        lambda: torch.where(mask, ids, torch.full_like(ids, IGNORE)).long()
    got = impl(MODULE).assistant_labels(ids, mask)
    assert_equal(got, expected, name=(f"assistant labels of {dtype} ids", f"{dtype} ids 的 assistant labels"),
                 mistakes=mistakes)


def test_assistant_labels_shape_mismatch_raises(impl):
    with pytest.raises(ValueError):
        impl(MODULE).assistant_labels(torch.zeros(5, dtype=torch.long), torch.ones(4, dtype=torch.bool))


# ---- packing -----------------------------------------------------------------------------------

def reference_pack(ids, labels):
    out_ids, out_labels, positions, segments = [], [], [], []
    for k, (i, lab) in enumerate(zip(ids, labels)):
        for t in range(len(i)):
            out_ids.append(int(i[t]))
            out_labels.append(IGNORE if t == 0 else int(lab[t]))
            positions.append(t)
            segments.append(k)
    return tuple(torch.tensor(x, dtype=torch.long) for x in (out_ids, out_labels, positions, segments))


def pack_mistakes(ids, labels):
    _, _, e_pos, e_seg = reference_pack(ids, labels)
    return {
        ("position ids not restarting per packed example (0 .. T-1 over the whole row)",
         "position id 没有在每个打包样本处重新开始（整行 0 .. T-1）"):
            lambda: torch.arange(e_pos.numel()),
        ("first label of each example not ignored",
         "每个样本的第一个标签没有被忽略"): lambda: torch.cat([lab.long() for lab in labels]),
        ("segment ids starting at 1", "segment id 从 1 开始"): lambda: e_seg + 1,
    }


@pytest.mark.weight(3)
@given(lengths=lengths_st, seed=st.integers(0, 2**31 - 1))
def test_pack_examples_matches_reference(impl, lengths, seed):
    g = torch.Generator().manual_seed(seed)
    ids, masks = random_chat(g, lengths)
    labels = [torch.where(m, i, torch.full_like(i, IGNORE)) for i, m in zip(ids, masks)]
    got = impl(MODULE).pack_examples(ids, labels)
    expect(isinstance(got, tuple) and len(got) == 4, "check.not_a_tuple", name="pack_examples", count=4,
           fields="input_ids, labels, position_ids, segment_ids", got=type(got).__name__)
    mistakes = pack_mistakes(ids, labels)
    for name, g_t, e_t in zip(("packed input_ids", "packed labels", "position_ids", "segment_ids"),
                              got, reference_pack(ids, labels)):
        assert_equal(g_t, e_t, name=name, mistakes=mistakes)


@pytest.mark.parametrize("case", ["empty-list", "length-mismatch", "empty-example", "two-d"])
def test_pack_examples_rejects_bad_input(impl, case):
    one = torch.tensor([1, 2, 3])
    args = {"empty-list": ([], []), "length-mismatch": ([one], [one, one]),
            "empty-example": ([one, one[:0]], [one, one[:0]]), "two-d": ([one[None]], [one[None]])}[case]
    with pytest.raises(ValueError):
        impl(MODULE).pack_examples(*args)


# ---- mask --------------------------------------------------------------------------------------

def reference_mask(segments):
    T = segments.shape[-1]
    out = torch.zeros(*segments.shape, T, dtype=torch.bool)
    flat_s, flat_o = segments.reshape(-1, T), out.view(-1, T, T)
    for b in range(flat_s.shape[0]):
        for i in range(T):
            for j in range(i + 1):
                flat_o[b, i, j] = bool(flat_s[b, i] == flat_s[b, j])
    return out


def mask_mistakes(segments):
    T = segments.shape[-1]
    causal = torch.ones(T, T, dtype=torch.bool).tril().expand(*segments.shape[:-1], T, T)
    same = segments.unsqueeze(-1) == segments.unsqueeze(-2)
    return {
        ("plain causal mask: packed segments attend to each other", "普通因果掩码：打包的各段互相关注"): lambda: causal.clone(),
        ("block-diagonal but not causal (a token sees later tokens of its example)",
         "块对角但不是因果的（token 能看到本样本后面的 token）"): lambda: same,
        ("strictly causal (j < i): a token does not see itself",
         "严格因果（j < i）：token 看不到自己"): lambda: same & causal & ~torch.eye(T, dtype=torch.bool),
        ("transposed (j >= i)", "转置了（j >= i）"): lambda: same & causal.transpose(-1, -2),
    }


def segments_of(lengths):
    return torch.cat([torch.full((n,), k, dtype=torch.long) for k, n in enumerate(lengths)])


@pytest.mark.weight(3)
@given(lengths=lengths_st, batched=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_segment_causal_mask_matches_reference(impl, lengths, batched, seed):
    segments = segments_of(lengths)
    if batched:  # a second row cut differently, same total length
        g = torch.Generator().manual_seed(seed)
        cuts = torch.randint(0, 3, (segments.numel(),), generator=g)
        cuts[0] = 0
        segments = torch.stack([segments, (cuts > 1).long().cumsum(0)])
    got = impl(MODULE).segment_causal_mask(segments)
    assert_equal(got, reference_mask(segments), name=(f"segment causal mask {tuple(segments.shape)}",
                                                      f"分段因果掩码 {tuple(segments.shape)}"),
                 mistakes=mask_mistakes(segments))


# ---- loss --------------------------------------------------------------------------------------

def reference_loss(logits, labels, reduction, segments=None):
    """fp64, target by target."""
    logp = logits.double().log_softmax(-1)
    sums, counts = {}, {}
    B, T = labels.shape
    for b in range(B):
        for t in range(1, T):
            y = int(labels[b, t])
            if y == IGNORE:
                continue
            key = (b, 0 if segments is None else int(segments[b, t]))
            sums[key] = sums.get(key, 0.0) - float(logp[b, t - 1, y])
            counts[key] = counts.get(key, 0) + 1
    if not counts:
        return torch.tensor(0.0)
    if reduction == "token_mean":
        return torch.tensor(sum(sums.values()) / sum(counts.values()), dtype=torch.float32)
    return torch.tensor(sum(sums[k] / counts[k] for k in sums) / len(sums), dtype=torch.float32)


def loss_mistakes(logits, labels, segments=None):
    lf = logits.float()

    def nll(lg, lab):
        m = (lab != IGNORE).float()
        return F.cross_entropy(lg.transpose(1, 2), lab.clamp(min=0), reduction="none") * m, m

    shifted, m1 = nll(lf[:, :-1], labels[:, 1:])
    unshifted, m0 = nll(lf, labels)
    twice, m2 = nll(lf[:, :-2], labels[:, 2:]) if labels.shape[1] > 2 else (shifted, m1)
    return {
        ("labels not shifted: logits at t scored against labels at t",
         "标签没有移位：位置 t 的 logit 对位置 t 的标签算分"): lambda: unshifted.sum() / m0.sum().clamp(min=1),
        ("labels shifted twice (t scored against t + 2)",
         "标签移位了两次（t 对 t + 2 算分）"): lambda: twice.sum() / m2.sum().clamp(min=1),
        ("sequence mean computed as the token mean",
         "序列平均被算成了 token 平均"): lambda: shifted.sum() / m1.sum().clamp(min=1),
        ("token mean computed as the sequence mean",
         "token 平均被算成了序列平均"): lambda: reference_loss(logits, labels, "sequence_mean", segments),
        ("ignored (-100) positions counted in the denominator",
         "被忽略（-100）的位置算进了分母"): lambda: shifted.sum() / shifted.numel(),
        ("-100 labels scored as token 0 instead of ignored",
         "-100 标签被当成 token 0 算分，而不是被忽略"): lambda: reference_loss(
            logits, torch.where(labels == IGNORE, torch.zeros_like(labels), labels), "token_mean"),
    }


@pytest.mark.weight(3)
@given(B=st.integers(1, 4), T=st.integers(2, 10), reduction=st.sampled_from(["token_mean", "sequence_mean"]),
       seed=st.integers(0, 2**31 - 1))
def test_causal_lm_loss_matches_reference(impl, B, T, reduction, seed):
    g = torch.Generator().manual_seed(seed)
    logits = randn(B, T, 11, generator=g, scale=2.0)
    labels = torch.randint(0, 11, (B, T), generator=g)
    keep = torch.rand(B, T, generator=g) < 0.3 + 0.6 * torch.rand(B, 1, generator=g)  # unequal answer lengths
    keep[:, 1] = True
    labels = torch.where(keep, labels, torch.full_like(labels, IGNORE))
    got = impl(MODULE).causal_lm_loss(logits, labels, reduction)
    assert_close(got, reference_loss(logits, labels, reduction), name=f"SFT loss ({reduction})",
                 mistakes=loss_mistakes(logits, labels))


def test_causal_lm_loss_without_labels_is_zero_not_nan(impl):
    labels = torch.full((2, 4), IGNORE)
    for reduction in ("token_mean", "sequence_mean"):
        got = impl(MODULE).causal_lm_loss(torch.zeros(2, 4, 5), labels, reduction)
        assert_close(got, torch.tensor(0.0), name=(f"loss with no labelled token ({reduction})",
                                                   f"没有带标签 token 时的损失（{reduction}）"))


def padded_batch(ids, labels):
    T = max(len(i) for i in ids)
    batch_ids = torch.zeros(len(ids), T, dtype=torch.long)
    batch_labels = torch.full((len(ids), T), IGNORE)
    for b, (i, lab) in enumerate(zip(ids, labels)):
        batch_ids[b, :len(i)], batch_labels[b, :len(i)] = i, lab
    return batch_ids, batch_labels


@pytest.mark.weight(3)
@settings(max_examples=10)
@given(lengths=st.lists(st.integers(2, 9), min_size=1, max_size=4), seed=st.integers(0, 2**31 - 1))
def test_token_mean_equals_transformers_loss(impl, lengths, seed):
    """Right padding with -100 labels; causal attention makes the padding invisible to real tokens."""
    m = impl(MODULE)
    g = torch.Generator().manual_seed(seed)
    ids, masks = random_chat(g, lengths)
    labels = [m.assistant_labels(i, a) for i, a in zip(ids, masks)]
    batch_ids, batch_labels = padded_batch(ids, labels)
    with torch.no_grad():
        out = tiny_model()(batch_ids, labels=batch_labels)
    got = m.causal_lm_loss(out.logits, batch_labels, "token_mean")
    assert_close(got, out.loss.float(), name=("token-mean loss vs transformers LlamaForCausalLM(labels=...)",
                                              "按 token 平均的损失对比 transformers LlamaForCausalLM(labels=...)"),
                 mistakes=loss_mistakes(out.logits, batch_labels))


@pytest.mark.weight(4)
@settings(max_examples=10)
@given(lengths=st.lists(st.integers(1, 9), min_size=2, max_size=4), seed=st.integers(0, 2**31 - 1))
def test_packed_row_gives_every_example_its_unpacked_loss(impl, lengths, seed):
    """The tiny model on the packed row with the submission's mask and position ids."""
    m = impl(MODULE)
    g = torch.Generator().manual_seed(seed)
    ids, masks = random_chat(g, lengths)
    labels = [m.assistant_labels(i, a) for i, a in zip(ids, masks)]
    model = tiny_model()
    with torch.no_grad():
        alone = [model(i[None]).logits for i in ids]
        p_ids, p_labels, positions, segments = m.pack_examples(ids, labels)
        allowed = m.segment_causal_mask(segments[None])
        assert_equal(allowed, reference_mask(segments[None]), name=("segment causal mask of the packed row",
                                                                    "打包行的分段因果掩码"),
                     mistakes=mask_mistakes(segments[None]))
        additive = torch.zeros(allowed.shape).masked_fill(~allowed, torch.finfo(torch.float32).min)
        packed = model(p_ids[None], attention_mask=additive[:, None], position_ids=positions[None]).logits
    start = 0
    for k, (n, lab, lg) in enumerate(zip(lengths, labels, alone)):
        expected = reference_loss(lg, lab[None], "token_mean")
        got = m.causal_lm_loss(packed[:, start:start + n], p_labels[None, start:start + n])
        assert_close(got, expected, name=(f"loss of packed example {k} vs the example alone",
                                          f"打包中样本 {k} 的损失对比单独计算该样本"),
                     mistakes=loss_mistakes(packed[:, start:start + n], p_labels[None, start:start + n]))
        start += n
    batch_ids, batch_labels = padded_batch(ids, labels)
    for reduction in ("token_mean", "sequence_mean"):
        unpacked = reference_loss(torch.cat([F.pad(lg, (0, 0, 0, batch_ids.shape[1] - lg.shape[1])) for lg in alone]),
                                  batch_labels, reduction)
        got = m.causal_lm_loss(packed, p_labels[None], reduction, segment_ids=segments[None])
        assert_close(got, unpacked, name=(f"packed-row {reduction} vs the unpacked batch",
                                          f"打包行的 {reduction} 对比未打包的批次"),
                     mistakes=loss_mistakes(packed, p_labels[None], segments[None]))
