"""Cross-check: part05_quantization.awq (the reference solution) against AutoAWQ 0.2.9's quantiser.

AutoAWQ ships as an sdist whose quantiser is pure Python (its CUDA kernels are a separate package,
autoawq-kernels). `make` installs it with `pip install --no-deps autoawq==0.2.9` (its declared
requirements pull triton, datasets, accelerate, zstandard... and it is deprecated upstream, last
tested with torch 2.6 / transformers 4.51). We load only ``awq.quantize.quantizer`` under an empty
parent package, with the three modules it imports for the parts we do not call (calibration data,
scale application, the packed kernels' linear layers) replaced by empty stand-ins: the whole
package imports here too, but takes ~20 s on the 2-core machine (transformers' model zoo).

Compared on small layers with outlier input channels (``AwqQuantizer.__new__``, no model):
``pseudo_quantize_tensor`` (zero point, groups) against ``fake_quantize``, and
``_search_best_scale`` with ``duo_scaling=False`` (the paper's ``s = mean|x|^alpha``, grid of 20)
against ``search_scales``: the same factors. Measured: bit-identical scales and fake-quantised
weights in every case below (torch 2.13 CPU, fp32). AutoAWQ's default ``duo_scaling=True`` divides
by the weights' mean ``^(1 - alpha)`` too; that is shown to differ, as the stub says.
"""
from __future__ import annotations

import importlib.util
import sys
import types

import pytest
import torch

from infralab.mistakes.part05_quantization.awq import outlier_layer
from infralab.testing import assert_close

from solutions.part05_quantization import awq as ours

UNUSED = {  # module -> names the quantiser imports from it but the functions we call never use
    "awq.utils.calib_data": ["get_calib_dataset"],
    "awq.quantize.scale": ["apply_scale", "apply_clip"],
    "awq.modules.linear": ["WQLinear_GEMM", "WQLinear_GEMV", "WQLinear_Marlin", "WQLinear_GEMVFast"],
}


def _load_awq_quantizer():
    spec = importlib.util.find_spec("awq")
    if spec is None or spec.submodule_search_locations is None:
        pytest.skip("AutoAWQ 0.2.9 not installed (make installs it with pip install --no-deps autoawq==0.2.9)")
    if "awq.quantize.quantizer" not in sys.modules:
        saved = {name: sys.modules.get(name) for name in ("awq", *UNUSED)}
        parent = types.ModuleType("awq")  # skip awq/__init__.py: it imports every model class
        parent.__path__ = list(spec.submodule_search_locations)
        sys.modules["awq"] = parent
        for name, attrs in UNUSED.items():
            stand_in = types.ModuleType(name)
            for attr in attrs:
                setattr(stand_in, attr, None)
            sys.modules[name] = stand_in
        try:
            importlib.import_module("awq.quantize.quantizer")
        finally:
            for name in UNUSED:  # the stand-ins must not outlive the import
                if saved[name] is None:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = saved[name]
    return sys.modules["awq.quantize.quantizer"].AwqQuantizer


@pytest.fixture(scope="module")
def AwqQuantizer():
    return _load_awq_quantizer()


def _quantizer(AwqQuantizer, bits, group_size, duo_scaling=False):
    q = AwqQuantizer.__new__(AwqQuantizer)  # no model: only the search and the quantiser are used
    q.w_bit, q.group_size, q.zero_point, q.duo_scaling = bits, group_size, True, duo_scaling
    q.max_chunk_memory, q.n_parallel_calib_samples = 1 << 30, None
    return q


class _Block(torch.nn.Module):
    """The previous op (a norm) and the layer, as AutoAWQ's search expects them inside one module."""

    def __init__(self, w):
        super().__init__()
        self.norm = torch.nn.LayerNorm(w.shape[1])
        self.fc = torch.nn.Linear(w.shape[1], w.shape[0], bias=False)
        self.fc.weight.data = w.clone()


def _autoawq_scales(q, w, x):
    block = _Block(w)
    _, _, scales = q._search_best_scale(block, block.norm, [block.fc], x.unsqueeze(0))
    return scales


CASES = [(4, 32, 1), (4, 32, 3), (4, 64, 4), (3, 32, 2)]  # bits, group_size, outlier channels


@pytest.mark.parametrize("bits,group_size,n_outliers", CASES, ids=[f"b{b}-g{g}-o{o}" for b, g, o in CASES])
def test_search_scales_and_fake_quantize_equal_autoawq(AwqQuantizer, bits, group_size, n_outliers):
    for seed in (0, 1):
        w, x = outlier_layer(torch.Generator().manual_seed(seed), n=64, cin=128, out=32, n_outliers=n_outliers)
        q = _quantizer(AwqQuantizer, bits, group_size)
        s, alpha, _ = ours.search_scales(w, x, bits, group_size, n_grid=20)
        assert_close(s, _autoawq_scales(q, w, x), name=f"s (alpha {alpha}) vs AutoAWQ, seed {seed}")
        assert_close(ours.fake_quantize(w * s, bits, group_size), q.pseudo_quantize_tensor(w * s)[0],
                     name="Q(w * s) vs AutoAWQ's pseudo_quantize_tensor")


def test_documented_difference_duo_scaling(AwqQuantizer):
    """AutoAWQ's default also divides by the weights' mean^(1 - alpha): other factors than the paper's."""
    w, x = outlier_layer(torch.Generator().manual_seed(7), n=64, cin=128, out=32)
    duo = _autoawq_scales(_quantizer(AwqQuantizer, 4, 32, duo_scaling=True), w, x)
    s, _, _ = ours.search_scales(w, x, 4, 32, n_grid=20)
    assert not torch.allclose(s, duo), "expected AutoAWQ's duo_scaling=True to differ from s = mean|x|^alpha"
