"""``infralab bench --graph-batches``: short calls timed as replays of CUDA graphs of a batch's calls,
both runners, as the caged route times them (issue #12: the two routes read the small vector_add
0.879x and 0.975x on one H100 while bench timed 23 eager calls after an L2 flush). Off by default
(docs/performance.md: on the H100 the graph replays read 0.822x).
On a CPU, with a fake capture whose "graphs" rerun the captured calls into the captured outputs."""
from __future__ import annotations

from infralab.perf.harness import GraphBatch, SamplingPolicy
from infralab.perf.run import run_challenge
from tests.test_perf_harness import H200, Fake, SoftmaxModule, WrongAfterWarmUp, spec

SHORT = 5e-6  # what the fake timer reads for one call: under short_kernel_s (20 us)
POLICY = SamplingPolicy(min_samples=4, max_samples=6, graphs=True, graph_batch_target_s=80 * SHORT)  # 80-call graphs


class FakeGraph:
    """Replays ``calls`` calls of ``runner``, writing each into the output the capture kept (a real
    graph's replay rewrites its captured outputs in place)."""

    def __init__(self, runner, calls, kept):
        self.runner, self.calls, self.kept = runner, calls, kept

    def replay(self):
        last = getattr(self.runner, "last", None)
        for i in range(self.calls):
            self.runner(i)
            if last is not None and i in self.kept:
                self.kept[i].copy_(last[i])


def fake_capture(log):
    def capture(runner, calls):
        for i in range(calls):
            runner(i)
        log.append(calls)
        return [FakeGraph(runner, calls, dict(getattr(runner, "last", None) or {}))]
    return capture


def failing_capture(runner, calls):
    raise RuntimeError("operation not permitted when stream is capturing")


def run(module, capture, seconds=SHORT):
    c = spec(dtype="float32", shapes=[{"M": 8, "N": 300}])
    return run_challenge(module, c, c["shapes"][0], H200, timer=Fake([seconds]), target="test",
                         exercise="part03_kernels.softmax", device="cpu", policy=POLICY, capture=capture)


def test_short_calls_are_timed_as_graph_replays_of_a_batch_of_distinct_sets_for_both_runners():
    log = []
    e = run(SoftmaxModule, fake_capture(log))
    assert e["correct"], e["reason"]
    assert e["workload"]["graph_replays"] is True
    calls = e["workload"]["calls_per_sample"]
    assert calls["candidate"] == 80 == e["workload"]["input_sets"]  # every call its own set, all rewritten
    assert calls["baseline"] == 80
    assert sorted(log) == [80, 80, 80, 80]  # each round captures both runners once
    assert e["metrics"]["rechecks"] == ["ok", "ok"]


def test_long_calls_stay_eager_batches():
    log = []
    e = run(SoftmaxModule, fake_capture(log), seconds=1e-3)
    assert e["workload"]["graph_replays"] is False and log == []
    assert e["workload"]["calls_per_sample"] == {"candidate": 1, "baseline": 1}


def test_a_call_wrong_when_captured_is_caught_by_the_rechecks_of_the_replayed_outputs():
    WrongAfterWarmUp.calls = 0
    e = run(WrongAfterWarmUp, fake_capture([]))
    assert not e["correct"] and e["decision"] == "reject"
    assert any(r != "ok" for r in e["metrics"]["rechecks"])


def test_calls_a_graph_cannot_hold_are_timed_eagerly_in_eager_sized_batches_with_a_note():
    e = run(SoftmaxModule, failing_capture)
    assert e["correct"] and e["workload"]["graph_replays"] is False
    assert any("could not be captured in a CUDA graph" in n and "capturing" in n for n in e["workload"]["notes"])
    # as without graphs: 0.2 ms of 5 us calls, not the graph's 80 (hundreds of eager launches would fill the
    # launch queue behind the timer's spin and time the host)
    assert e["workload"]["calls_per_sample"] == {"candidate": 40, "baseline": 40}


def test_the_replayed_outputs_are_what_the_rechecks_read_after_an_eager_profiled_batch():
    class Runner:
        def __init__(self):
            self.last = {}

        def __call__(self, i):
            self.last[i] = ("eager", i)

    def capture(runner, calls):  # the captured calls' outputs stay in runner.last; no graph to replay here
        for i in range(calls):
            runner(i)
        return []

    r = Runner()
    g = GraphBatch(r, 3, capture)
    r(0), r(1)  # an eager batch (the profiled one) overwrote two outputs
    g.replay()
    assert r.last == g.kept  # the captured outputs, which replays rewrite in place


def test_graph_batches_are_off_unless_the_policy_asks_for_them():
    log = []
    c = spec(dtype="float32", shapes=[{"M": 8, "N": 300}])
    default = SamplingPolicy(min_samples=4, max_samples=6)
    e = run_challenge(SoftmaxModule, c, c["shapes"][0], H200, timer=Fake([SHORT]), target="test",
                      exercise="part03_kernels.softmax", device="cpu", policy=default, capture=fake_capture(log))
    assert e["workload"]["graph_replays"] is False and log == []
