"""Triton's autotuner under the grading guards: the launches it times while benchmarking a config are
recorded without the byte comparison (which copies every argument and synchronises inside its timed
region), so the config it caches for the timed calls is chosen by the kernel's own time; the launch with
the chosen config is compared with the bytes as they were when the autotuner was called, since its
benchmarks already wrote the output. On the CPU, with a fake kernel ``run`` and a fake Autotuner class,
and a real ``triton.autotune`` under the interpreter."""
from __future__ import annotations

import os
import sys
import types

import pytest
import torch

from infralab import triton_watch
from infralab.guards import NoKernelOutput, checked_call
from infralab.triton_watch import _AUTOTUNING, _watched_run, autotuning, watching


class FakeKernel:
    @staticmethod
    def fn():  # the @triton.jit function whose name the launch records
        pass


def launch(out):
    def run(self, *args, grid, warmup, **kwargs):
        out.fill_(1.0)
    return _watched_run(run)


def test_a_launch_while_autotuning_is_recorded_without_comparing_bytes(monkeypatch):
    compared = []
    real = triton_watch._storage_bytes
    monkeypatch.setattr(triton_watch, "_storage_bytes", lambda t: compared.append(1) or real(t))
    out = torch.zeros(8)
    run = launch(out)
    with watching(poison_allocations=False) as watch:
        _AUTOTUNING.depth = 1
        try:
            run(FakeKernel(), out, grid=(1,), warmup=False)
        finally:
            _AUTOTUNING.depth = 0
        assert compared == [] and len(watch.launches) == 1 and watch.launches[0].written == frozenset()
        out.zero_()
        run(FakeKernel(), out, grid=(1,), warmup=False)  # the launch after the benchmarks: compared
    assert compared and watch.launches[1].written == {triton_watch.Watch.storage_key(out)}
    assert watch.launches[1].name == "fn"


def test_the_autotuner_benchmark_is_marked_while_it_runs(monkeypatch):
    seen = []

    class FakeAutotuner:
        def _bench(self, *args, config, **meta):
            seen.append(autotuning())
            return 1.0

    module = types.SimpleNamespace(Autotuner=FakeAutotuner)
    monkeypatch.setitem(sys.modules, "triton.runtime.autotuner", module)
    triton_watch._install_autotune_hooks()
    assert FakeAutotuner()._bench(config=None) == 1.0
    assert seen == [True] and not autotuning()
    triton_watch._install_autotune_hooks()  # installed once: not wrapped twice
    assert FakeAutotuner._bench.__wrapped__.__name__ == "_bench"


def test_the_real_autotuner_is_marked_once_a_watch_has_opened():
    autotuner = pytest.importorskip("triton.runtime.autotuner")
    with watching(poison_allocations=False):
        pass
    assert getattr(autotuner.Autotuner._bench, "__wrapped__", None) is not None


def _autotuned_copy(kernel_writes: bool):
    """A real ``triton.autotune`` over two configs whose benchmark (a stand-in for ``do_bench``) runs
    the kernel once, as Triton's does: by the launch with the chosen config, the output is written."""
    triton = pytest.importorskip("triton")
    tl = triton.language

    def bench(kernel_call, quantiles=None):
        kernel_call()
        return [1.0, 1.0, 1.0]

    @triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=["n"],
                     do_bench=bench)
    @triton.jit
    def copy_kernel(x_ptr, out_ptr, n, WRITE: tl.constexpr, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offsets, mask=offsets < n)
        if WRITE:
            tl.store(out_ptr + offsets, x, mask=offsets < n)

    def copy(x, out=None):
        out = torch.empty_like(x) if out is None else out
        copy_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, out, x.numel(), WRITE=kernel_writes)
        return out
    return copy


needs_interpreter = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="needs the Triton interpreter")


@needs_interpreter
def test_an_autotuned_kernel_that_writes_its_output_passes_the_output_check():
    copy, x = _autotuned_copy(kernel_writes=True), torch.randn(100)
    out = checked_call(copy, (x,), {}, where="copy", triton=True)  # the call that benchmarks both configs
    assert torch.equal(out, x)
    assert torch.equal(checked_call(copy, (x,), {}, where="copy", triton=True), x)  # the tuned config, cached


@needs_interpreter
def test_an_autotuned_kernel_that_leaves_a_torch_answer_alone_is_still_caught():
    copy, x = _autotuned_copy(kernel_writes=False), torch.randn(100)
    with pytest.raises(NoKernelOutput):
        checked_call(lambda v: copy(v, out=v.clone()), (x,), {}, where="copy", triton=True)


@needs_interpreter
def test_a_cached_config_is_compared_around_its_launch_not_from_the_autotuners_call():
    """A config's pre_hook that copies an answer in, and a kernel that writes nothing: the call that
    benchmarks counts what happened since the autotuner was called (its benchmarks wrote the output), a
    blind spot that the dispatch guard keeps narrow (a pre_hook runs inside the checked call, where torch
    may only allocate, view, copy, cast and fill: it can copy in an input or a constant, no computed
    answer); a call of a cached config is compared around the launch alone, and the copy is not the kernel's."""
    triton = pytest.importorskip("triton")
    tl = triton.language

    def copy_in(nargs):
        nargs["out_ptr"].copy_(nargs["x_ptr"])

    @triton.autotune(configs=[triton.Config({"BLOCK": 16}, pre_hook=copy_in), triton.Config({"BLOCK": 32},
                     pre_hook=copy_in)], key=["n"], do_bench=lambda kernel_call, quantiles=None: [1.0] * 3)
    @triton.jit
    def idle_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        tl.load(x_ptr + tl.arange(0, BLOCK), mask=tl.arange(0, BLOCK) < n)

    def fake_copy(x):
        out = torch.empty_like(x)
        idle_kernel[(1,)](x, out, x.numel())
        return out

    x = torch.randn(10)
    checked_call(fake_copy, (x,), {}, where="copy", triton=True)  # tuned here: the known blind spot
    with pytest.raises(NoKernelOutput):
        checked_call(fake_copy, (x,), {}, where="copy", triton=True)


AUTOTUNED_MODULE = '''
import torch
import triton
import triton.language as tl


def _bench(kernel_call, quantiles=None):
    kernel_call()
    return [1.0, 1.0, 1.0]


@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=["n"], do_bench=_bench)
@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)


def copy(x):
    out = torch.empty_like(x)
    copy_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, out, x.numel())
    return out
'''


@needs_interpreter
def test_the_configs_a_submissions_autotuners_chose_are_read_per_key(tmp_path, monkeypatch):
    import importlib

    from infralab.perf.checked import autotuned_configs
    (tmp_path / "tuned_submission.py").write_text(AUTOTUNED_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("tuned_submission")
    files = [module.__file__]
    assert autotuned_configs(files) == {}  # nothing tuned before the first call
    module.copy(torch.randn(100))
    module.copy(torch.randn(7))
    got = autotuned_configs(files)
    assert list(got) == ["copy_kernel"] and len(got["copy_kernel"]) == 2  # one entry per tuning key (n)
    assert all("BLOCK: 16" in config for config in got["copy_kernel"].values())  # the first of equal timings
    assert autotuned_configs([str(tmp_path / "other.py")]) == {}
