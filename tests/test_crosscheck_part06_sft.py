"""Cross-check: part06_post_training.sft (the reference solution) against transformers 5.17.

- ``causal_lm_loss(..., "token_mean")`` equals ``LlamaForCausalLM(input_ids, labels=...).loss``
  (the shift by one, -100 ignored, the token mean over the batch) on a tiny random model;
- ``pack_examples`` equals ``DataCollatorWithFlattening(return_seq_idx=True)``: the same
  concatenation, the first label of every example set to -100, position ids restarting at 0,
  ``seq_idx`` = our ``segment_ids``; and ``masking_utils.find_packed_sequence_indices`` recovers
  our segments from our position ids;
- ``segment_causal_mask`` equals transformers' own mask functions
  ``and_masks(causal_mask_function, packed_sequence_mask_function(segments))``.
"""
from __future__ import annotations

import pytest
import torch

from infralab.testing import assert_close, assert_equal
from infralab.tiny_llama import hf_llama, random_llama_weights, tiny_llama_config

transformers = pytest.importorskip("transformers", reason="transformers (dev extra) not installed")
masking = pytest.importorskip("transformers.masking_utils", reason="transformers (dev extra) not installed")

from solutions.part06_post_training import sft

VOCAB = 64


def _examples(gen, lengths):
    ids = [torch.randint(0, VOCAB, (n,), generator=gen) for n in lengths]
    labels = [sft.assistant_labels(i, torch.arange(n) >= n // 2) for i, n in zip(ids, lengths)]
    return ids, labels


def test_token_mean_equals_llama_for_causal_lm_loss():
    config = tiny_llama_config(vocab_size=VOCAB, hidden_size=32, intermediate_size=48)
    model = hf_llama(config, random_llama_weights(config, torch.Generator().manual_seed(3)))
    gen = torch.Generator().manual_seed(11)
    for lengths in ([7, 3, 5], [2], [9, 9]):
        ids, labels = _examples(gen, lengths)
        T = max(lengths)
        batch_ids = torch.stack([torch.nn.functional.pad(i, (0, T - len(i))) for i in ids])
        batch_labels = torch.stack([torch.nn.functional.pad(lab, (0, T - len(lab)), value=-100) for lab in labels])
        with torch.no_grad():
            out = model(batch_ids, labels=batch_labels)
        assert_close(sft.causal_lm_loss(out.logits, batch_labels), out.loss.float(),
                     name=f"token-mean loss vs LlamaForCausalLM loss (lengths {lengths})")


def test_pack_examples_equals_data_collator_with_flattening():
    gen = torch.Generator().manual_seed(5)
    collate = transformers.DataCollatorWithFlattening(return_seq_idx=True, return_tensors="pt")
    for lengths in ([4, 1, 6], [3], [2, 2, 2, 2]):
        ids, labels = _examples(gen, lengths)
        hf = collate([{"input_ids": i.tolist(), "labels": lab.tolist()} for i, lab in zip(ids, labels)])
        p_ids, p_labels, positions, segments = sft.pack_examples(ids, labels)
        assert_equal(p_ids, hf["input_ids"][0].long(), name="packed input_ids vs DataCollatorWithFlattening")
        assert_equal(p_labels, hf["labels"][0].long(), name="packed labels vs DataCollatorWithFlattening")
        assert_equal(positions, hf["position_ids"][0].long(), name="position_ids vs DataCollatorWithFlattening")
        assert_equal(segments, hf["seq_idx"][0].long(), name="segment_ids vs seq_idx")
        found = masking.find_packed_sequence_indices(positions[None])
        assert found is None or torch.equal(found[0].long(), segments), \
            "transformers' find_packed_sequence_indices reads other segments from our position ids"
        if len(lengths) > 1:
            assert found is not None, "transformers did not recognise our position ids as a packed row"


def test_segment_causal_mask_equals_transformers_mask_functions():
    for lengths in ([3, 1, 4], [5], [1, 1, 2]):
        segments = torch.cat([torch.full((n,), k) for k, n in enumerate(lengths)])[None]
        T = segments.shape[1]
        mask_fn = masking.and_masks(masking.causal_mask_function, masking.packed_sequence_mask_function(segments))
        expected = mask_fn(0, 0, torch.arange(T)[:, None], torch.arange(T)[None, :])
        assert_equal(sft.segment_causal_mask(segments)[0], expected.bool(), name=f"mask vs transformers ({lengths})")
