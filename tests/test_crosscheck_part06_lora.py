"""Cross-check: part06_post_training.lora (the reference solution) against peft 0.21.

A small two-layer model (bias on the first layer only) gets LoRA adapters from peft
(``LoraConfig(r, lora_alpha, use_rslora)``); we copy the factors peft drew into our functions
and compare: the adapted model's output (eval mode, dropout 0), peft's scaling, its
``merge_and_unload`` weights, and peft's own initialisation (A inside the Kaiming-uniform bound
1/sqrt(in), B zero). Then two adapters on one peft model (``set_adapter`` one at a time) against
our ``multi_lora_forward`` serving both, plus base rows, in one batch.
"""
from __future__ import annotations

import math

import pytest
import torch

from infralab.testing import assert_close

peft = pytest.importorskip("peft", reason="peft (dev extra) not installed")

from solutions.part06_post_training import lora  # noqa: E402


def _model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(12, 20), torch.nn.ReLU(), torch.nn.Linear(20, 6, bias=False))


def _randomise_b(model, gen):
    """peft initialises B at zero; give it values so the low-rank path shows."""
    for name, module in model.named_modules():
        if hasattr(module, "lora_B"):
            for key in module.lora_B:
                module.lora_B[key].weight.data = torch.randn(module.lora_B[key].weight.shape, generator=gen)


def _ours(x, layers, adapter):
    """Our lora_forward through the same two layers, with the factors peft holds."""
    h = x
    for i, (layer, act) in enumerate(zip(layers, (True, False))):
        A = layer.lora_A[adapter].weight.detach()
        B = layer.lora_B[adapter].weight.detach()
        h = lora.lora_forward(h, layer.base_layer.weight.detach(),
                              None if layer.base_layer.bias is None else layer.base_layer.bias.detach(),
                              A, B, layer.scaling[adapter])
        if act:
            h = torch.relu(h)
    return h


@pytest.mark.parametrize("r,alpha,rs", [(4, 8, False), (8, 16, True), (2, 32, False)])
def test_adapted_output_scaling_and_merge_equal_peft(r, alpha, rs):
    gen = torch.Generator().manual_seed(r * 100 + alpha)
    config = peft.LoraConfig(r=r, lora_alpha=alpha, use_rslora=rs, lora_dropout=0.0, target_modules=["0", "2"])
    model = peft.get_peft_model(_model(r), config).eval()
    layers = [model.base_model.model[0], model.base_model.model[2]]
    for layer in layers:
        A = layer.lora_A["default"].weight.detach()
        bound = 1 / math.sqrt(A.shape[1])
        assert float(A.abs().max()) <= bound and torch.count_nonzero(layer.lora_B["default"].weight) == 0, \
            "peft's init: A within 1/sqrt(in), B zero (the convention of init_lora)"
        assert math.isclose(layer.scaling["default"], lora.lora_scaling(alpha, r, use_rslora=rs)), "scaling vs peft"
    _randomise_b(model, gen)
    x = torch.randn(5, 12, generator=gen)
    with torch.no_grad():
        expected = model(x)
    assert_close(_ours(x, layers, "default"), expected, name=f"adapted output vs peft (r={r}, alpha={alpha}, rs={rs})")
    factors = [(layer.lora_A["default"].weight.detach().clone(), layer.lora_B["default"].weight.detach().clone(),
                layer.base_layer.weight.detach().clone(), layer.scaling["default"]) for layer in layers]
    merged_model = model.merge_and_unload()
    for (A, B, W, s), index in zip(factors, (0, 2)):
        merged = lora.merge(W, A, B, s)
        assert_close(merged, merged_model[index].weight.detach(), name=f"merged weight of layer {index} vs peft")
        assert_close(lora.unmerge(merged, A, B, s), W, name=f"unmerged weight of layer {index}")


def test_two_adapters_served_in_one_batch_equal_peft_one_at_a_time():
    gen = torch.Generator().manual_seed(5)
    base = torch.nn.Sequential(torch.nn.Linear(12, 9))
    torch.manual_seed(5)
    model = peft.get_peft_model(base, peft.LoraConfig(r=4, lora_alpha=8, target_modules=["0"]), adapter_name="math")
    model.add_adapter("code", peft.LoraConfig(r=4, lora_alpha=16, use_rslora=True, target_modules=["0"]))
    model.eval()
    _randomise_b(model, gen)
    layer = model.base_model.model[0]
    x = torch.randn(6, 12, generator=gen)
    ids = torch.tensor([0, 1, -1, 1, 0, -1])
    expected = []
    for n, k in enumerate(ids.tolist()):
        with torch.no_grad():
            if k < 0:
                with model.disable_adapter():
                    expected.append(model(x[n:n + 1])[0])
            else:
                model.set_adapter(["math", "code"][k])
                expected.append(model(x[n:n + 1])[0])
    As = torch.stack([layer.lora_A[n].weight.detach() for n in ("math", "code")])
    Bs = torch.stack([layer.lora_B[n].weight.detach() for n in ("math", "code")])
    scalings = torch.tensor([layer.scaling["math"], layer.scaling["code"]])
    got = lora.multi_lora_forward(x, layer.base_layer.weight.detach(), layer.base_layer.bias.detach(), As, Bs, scalings, ids)
    assert_close(got, torch.stack(expected), name="multi-LoRA batch vs peft adapter by adapter")
