"""The Triton guard of `triton: true` exercises: launch check, outputs written by the submission's own
kernels, interpreter bounds check, NaN-filled allocations."""
import os

import pytest
import torch

from infralab.guards import NoKernelLaunched, NoKernelOutput, checked_call, guarded

triton = pytest.importorskip("triton")
tl = triton.language
pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="needs the Triton interpreter")


@triton.jit
def _copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, MASK_STORE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    if MASK_STORE:
        tl.store(out_ptr + offsets, x, mask=offsets < n)
    else:
        tl.store(out_ptr + offsets, x)


def _copy(x, mask_store=True, grid=None):
    out = torch.empty_like(x)
    _copy_kernel[grid or (triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64, MASK_STORE=mask_store)
    return out


def test_a_call_that_launches_a_kernel_passes_the_launch_check():
    x = torch.randn(100)
    assert torch.equal(guarded(_copy, (), "copy", triton=True)(x), x)


def test_a_call_that_launches_no_kernel_raises_no_kernel_launched():
    with pytest.raises(NoKernelLaunched, match="without launching a Triton kernel"):
        guarded(lambda x: x.clone(), (), "clone", triton=True)(torch.randn(10))


@triton.jit
def _nothing_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(x_ptr + offsets, mask=offsets < n)


def _do_nothing_launch_then_torch(x):
    _nothing_kernel[(1,)](x, x.numel(), BLOCK=64)
    return x.clone()  # the "answer" comes from torch, not from a kernel


def test_a_returned_tensor_no_kernel_wrote_fails_even_after_a_launch():
    flags = []
    with pytest.raises(NoKernelOutput, match="returned tensor 0 was not written by a @triton.jit kernel"):
        checked_call(_do_nothing_launch_then_torch, (torch.randn(10),), {}, where="copy", triton=True,
                     on_flag=lambda kind, detail: flags.append(kind))
    assert flags == ["not-kernel-output"]


def test_a_kernel_defined_outside_the_submissions_files_is_no_evidence():
    with pytest.raises(NoKernelOutput):
        checked_call(_copy, (torch.randn(10),), {}, where="copy", triton=True, own_kernel=lambda f: f != __file__)
    checked_call(_copy, (torch.randn(10),), {}, where="copy", triton=True, own_kernel=lambda f: f == __file__)


def test_an_unmasked_store_past_the_end_fails_instead_of_corrupting_the_heap():
    with pytest.raises(Exception, match="out-of-bounds tl.store"):
        guarded(_copy, (), "copy", triton=True)(torch.randn(100), mask_store=False)


def test_outputs_the_kernel_never_writes_are_nan():
    got = guarded(_copy, (), "copy", triton=True)(torch.randn(100), grid=(1,))  # only the first block runs
    assert not got[:64].isnan().any() and got[64:].isnan().all()


def test_the_guard_restores_torch_settings():
    def settings():
        return (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
                torch.utils.deterministic.fill_uninitialized_memory)

    before = settings()
    guarded(_copy, (), "copy", triton=True)(torch.randn(10))
    assert settings() == before


def test_an_interpreter_that_will_fail_is_named_before_the_run(monkeypatch):
    import importlib.metadata as md

    from infralab.plugin import interpreter_version_problem
    versions = {"triton": "3.6.0", "numpy": "2.5.2"}
    monkeypatch.setattr(md, "version", lambda name: versions[name])
    assert "numpy<2.3" in interpreter_version_problem()
    versions["numpy"] = "2.2.6"
    assert interpreter_version_problem() is None


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, OTHER_ZERO: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    if OTHER_ZERO:
        x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    else:
        x = tl.load(x_ptr + offsets, mask=offsets < n)  # masked lanes undefined on a GPU
    tl.store(out_ptr, tl.sum(x, axis=0))


def _row_sum(x, other_zero):
    out = torch.zeros(1)  # not empty: a NaN result over the NaN-filled allocation would change no byte
    _row_sum_kernel[(1,)](x, out, x.numel(), BLOCK=128, OTHER_ZERO=other_zero)
    return out


def test_masked_lanes_of_a_float_load_without_other_are_nan_under_the_watch():
    """The interpreter fills them with 0, a GPU leaves them undefined: a reduction over them that passed
    on the CPU was wrong on the GPU. Under the watch they read NaN, so the CPU tests see the mistake."""
    x = torch.randn(100)
    assert torch.allclose(guarded(_row_sum, (), "sum", triton=True)(x, True), x.sum().reshape(1), atol=1e-5)
    assert torch.isnan(guarded(_row_sum, (), "sum", triton=True)(x, False)).all()


@triton.jit
def _widen_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n).to(tl.float32))  # every lane


def _widen(x):
    out = torch.zeros(8)
    _widen_kernel[(1,)](x, out, x.numel(), BLOCK=8)
    return out


def test_masked_lanes_of_a_bfloat16_load_without_other_are_nan_too():
    """The interpreter holds bfloat16 as its 16 bits: the lanes get bfloat16's NaN bits."""
    x = torch.randn(5).to(torch.bfloat16)
    got = guarded(_widen, (), "widen", triton=True)(x)
    assert torch.equal(got[:5], x.float()) and torch.isnan(got[5:]).all()
