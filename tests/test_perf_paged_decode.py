"""The paged decode kernel's GPU challenges, their CPU-side parts: the course.yml entries, the workload's
inputs (tables through a scattered pool, the ragged ramp its bytes formula counts), reference and
baseline, and the gate on the reference kernel and on a mutant (Triton interpreter). Nothing is timed
here; the H200 run is benchmarks/h200_paged_decode.sh."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from infralab.course import load_course
from infralab.perf.run import check_outputs
from infralab.perf.spec import work_amounts
from infralab.perf.workloads import WORKLOADS

ROOT = Path(__file__).resolve().parents[1]
PAGED = WORKLOADS["paged_decode"]
SMALL = {"B": 3, "HQ": 8, "HKV": 2, "CTX": 77, "D": 32, "BS": 16}


def test_the_challenges_are_the_long_context_and_ragged_shapes_with_bars_of_the_copy_bandwidth():
    ex = load_course(ROOT).exercise("part04_serving.paged_decode_kernel")
    by_id = {c["id"]: c for c in ex.perf}
    assert ex.triton and set(by_id) == {"long_context", "ragged"}
    assert all(c["shapes"] == [{"B": 64, "HQ": 32, "HKV": 8, "CTX": 8192, "D": 128, "BS": 16}] for c in ex.perf)
    assert by_id["long_context"]["pass"] == {"fraction": 0.6, "of": "copy_gbps"}
    assert by_id["long_context"]["challenge"] == {"fraction": 0.75, "of": "copy_gbps"}
    assert by_id["ragged"]["options"] == {"ragged": True} and by_id["ragged"]["challenge"]["of"] == "copy_gbps"


@pytest.mark.parametrize("challenge", ["long_context", "ragged"])
def test_the_bytes_formula_counts_the_kv_tokens_the_inputs_hold(challenge):
    """K and V of every token of every sequence, once, plus q and out; at a shape small enough to draw."""
    c = {c["id"]: c for c in load_course(ROOT).exercise("part04_serving.paged_decode_kernel").perf}[challenge]
    shape = {"B": 8, "HQ": 4, "HKV": 2, "CTX": 64, "D": 16, "BS": 16}
    inputs = PAGED.make_inputs(shape, "bfloat16", c["options"], 0, "cpu")
    tokens = int(inputs["context_lens"].sum())
    assert tokens == (64 * 8 if challenge == "long_context" else 64 * 9 // 2)
    assert work_amounts(c, shape)["bytes"] == 2 * tokens * 2 * 16 * 2 + 2 * 8 * 4 * 16 * 2


def test_the_tables_scatter_every_sequence_over_distinct_real_blocks():
    inputs = PAGED.make_inputs(SMALL, "float32", {}, 1, "cpu", ragged=True)
    tables = inputs["block_tables"]
    assert tables.dtype == torch.int32 and tables.shape == (3, 5) and int(tables.min()) >= 0
    assert len(set(tables.flatten().tolist())) == tables.numel()  # no block shared: stale entries are real blocks
    assert not torch.equal(tables.flatten(), tables.flatten().sort().values)


@pytest.mark.parametrize("options, ragged", [({}, False), ({"ragged": True}, False), ({}, True)])
def test_the_gather_sdpa_baseline_matches_the_reference(options, ragged):
    inputs = PAGED.make_inputs(SMALL, "float32", options, 2, "cpu", ragged=ragged)
    opts = {**PAGED.options, **options, **({"ragged": True} if ragged else {})}
    assert check_outputs(PAGED, PAGED.baselines["gather_sdpa"](inputs, opts), inputs, opts) is None


def _mutant(name):
    path = ROOT / "fixtures/mutants/part04_serving/paged_decode_kernel" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"paged_decode_mutant_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU check of the reference kernel (interpreter)")
def test_the_reference_kernel_passes_the_gate_and_a_logical_block_mutant_does_not():
    from solutions.part04_serving import paged_decode_kernel
    inputs = PAGED.make_inputs(SMALL, "float16", {}, 3, "cpu", ragged=True)
    assert check_outputs(PAGED, PAGED.call(paged_decode_kernel, inputs, {}), inputs, {}) is None
    wrong = _mutant("logical_block_index")
    assert check_outputs(PAGED, PAGED.call(wrong, inputs, {}), inputs, {}) is not None


