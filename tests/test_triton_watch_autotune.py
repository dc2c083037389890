"""Triton's autotuner under the grading guards: the launches it times while benchmarking a config are
recorded without the byte comparison (which copies every argument and synchronises inside its timed
region), so the config it caches for the timed calls is chosen by the kernel's own time. On the CPU, with
a fake kernel ``run`` and a fake Autotuner class."""
from __future__ import annotations

import sys
import types

import pytest
import torch

from infralab import triton_watch
from infralab.triton_watch import _AUTOTUNING, _watched_run, autotuning, watching


class FakeKernel:
    @staticmethod
    def fn():  # the @triton.jit function whose name the launch records
        pass


def launch(out):
    def run(self, *args, grid, warmup, **kwargs):
        out.fill_(1.0)
    return _watched_run(run, compare_when_autotuning=False)


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
    triton_watch._install_autotune_marker()
    assert FakeAutotuner()._bench(config=None) == 1.0
    assert seen == [True] and not autotuning()
    triton_watch._install_autotune_marker()  # installed once: not wrapped twice
    assert FakeAutotuner._bench.__wrapped__.__name__ == "_bench"


def test_the_real_autotuner_is_marked_once_a_watch_has_opened():
    autotuner = pytest.importorskip("triton.runtime.autotuner")
    with watching(poison_allocations=False):
        pass
    assert getattr(autotuner.Autotuner._bench, "__wrapped__", None) is not None
