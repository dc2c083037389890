"""The attention workloads' correctness gates reject an output of zeros at long contexts.

A kernel that never reads V and writes zeros must not pass a gate: attention over thousands of keys
averages V towards 0 (|o| ~ 0.02 for scores of standard deviation 1), under bf16's tolerance, and
more so once the tolerance widens with the context. So the inputs make the scores peaky
(infralab.perf.workloads.PEAKY_Q) and no attention workload widens its tolerance with the length.
Each case failed before (decode_attention and flash_attention passed zeros; found while writing the
paged decode kernel's workload).
"""
from __future__ import annotations

import pytest
import torch

from infralab.perf.run import check_outputs
from infralab.perf.workloads import WORKLOADS

CASES = [  # (workload, shape, options, the gate's ragged inputs)
    ("paged_decode", {"B": 2, "HQ": 4, "HKV": 2, "CTX": 4096, "D": 16, "BS": 16}, {}, False),
    ("paged_decode", {"B": 2, "HQ": 4, "HKV": 2, "CTX": 4096, "D": 16, "BS": 16}, {"ragged": True}, False),
    ("paged_decode", {"B": 2, "HQ": 4, "HKV": 2, "CTX": 4096, "D": 16, "BS": 16}, {}, True),
    ("decode_attention", {"B": 2, "HQ": 4, "HKV": 2, "S": 8192, "D": 16}, {}, False),
    ("flash_attention", {"B": 1, "H": 2, "S": 4096, "D": 16}, {}, False),
]


@pytest.mark.parametrize("name, shape, options, ragged", CASES,
                         ids=[f"{c[0]}-{'-'.join(map(str, c[1].values()))}{'-ragged' if c[3] or c[2] else ''}"
                              for c in CASES])
def test_the_gate_rejects_an_output_of_zeros_at_a_long_context(name, shape, options, ragged):
    wl = WORKLOADS[name]
    opts = {**wl.options, **options}
    inputs = wl.make_inputs(shape, "bfloat16", opts, 4, "cpu", ragged=ragged)
    expected = wl.reference(inputs, opts)
    outputs = expected if isinstance(expected, tuple) else (expected,)
    zeros = tuple(torch.zeros_like(outputs[0]) if i == 0 else o for i, o in enumerate(outputs))  # the true lse kept
    got = zeros if len(zeros) > 1 else zeros[0]
    assert check_outputs(wl, got, inputs, opts) is not None
    assert check_outputs(wl, expected, inputs, opts) is None  # the reference itself passes
