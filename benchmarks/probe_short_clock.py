"""Issue #12 probe (GPU, about a minute): why do bench and the cage read the small vector_add's ratio so
differently? On an H100 (2026-12-05/06) torch's add at N = 2^20 fp32 read 4.98 us a call replayed from CUDA
graphs in bench's process (`bench --graph-batches`) and 5.70 us replayed by the judge in the caged route,
while the reference Triton kernel read 6.06 and 5.85 us (docs/performance.md). Here, in one process, each
of the two kernels (torch's add: the baseline; the reference: solutions/part03_kernels/vector_add.py) is
timed as graph replays in the ways the two routes differ:

  bench    768 calls on 768 sets, L2 flushed, then a spin, CUDA events around the replay
  sets256  2,654 calls cycling through 256 sets (the judge's baseline), events, no flush
  judge    the same behind the filling gate (infralab.perf.device_gate), the host's clock from the release
           to the synchronise, less an empty armed batch's (the judge's clock)
  cage     the events the armed batch records itself (what the cage's timer reads)

and the judge's way again while a second process holds an idle CUDA context with 20 GB allocated (as the
cage does). Prints us per call, median of 7 batches, for each.
  python3 benchmarks/probe_short_clock.py
"""
from __future__ import annotations

import multiprocessing as mp
import statistics
import time

import torch

from infralab.perf import device_gate
from infralab.perf.workloads import WORKLOADS

N = 1 << 20
REPS = 7


def _hold_context(ready, done, gib: int) -> None:
    blocks = [torch.empty(1 << 30, dtype=torch.uint8, device="cuda") for _ in range(gib)]
    torch.cuda.synchronize()
    ready.set()
    done.wait(300)
    del blocks


def main() -> None:
    if not torch.cuda.is_available():
        print("no CUDA GPU: nothing to probe")
        return
    import solutions.part03_kernels.vector_add as ref
    wl = WORKLOADS["vector_add"]
    opts = dict(wl.options)
    baseline = wl.baselines["eager"]
    kernels = {"torch": lambda s: baseline(s, opts), "reference": lambda s: wl.call(ref, s, opts)}
    sets = [wl.make_inputs({"N": N}, "float32", opts, seed, "cuda") for seed in range(768)]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    gate = device_gate.DeviceGate(fill=True)
    print(f"device {torch.cuda.get_device_name(0)}; torch {torch.__version__}; filling gate: {gate.fills}"
          f" ({gate.fill_problem or 'ok'})")
    for fn in kernels.values():  # compiled before any capture
        fn(sets[0])
    torch.cuda.synchronize()

    def graphs(fn, calls: int, n_sets: int) -> list:
        return device_gate.captured_chunks(lambda i: fn(sets[i % n_sets]), calls, 1024)

    def events(gs, calls: int, flush_first: bool) -> float:
        if flush_first:
            flush.fill_(0x5A)
            torch.cuda._sleep(100_000)
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for g in gs:
            g.replay()
        end.record()
        end.synchronize()
        return begin.elapsed_time(end) / 1e3 / calls

    def armed(gs, calls: int) -> tuple[float, float]:
        torch.cuda.synchronize()
        batch = device_gate.Armed(gate, lambda: [g.replay() for g in gs], 5.0)
        t0 = time.perf_counter()
        inner_s, early, _ = batch.go()
        return time.perf_counter() - t0, inner_s

    def null_trip() -> float:
        return statistics.median(armed([], 1)[0] for _ in range(5))

    def judge_way(gs, calls: int) -> tuple[float, float]:
        trip = null_trip()
        runs = [armed(gs, calls) for _ in range(REPS)]
        return (statistics.median(h for h, _ in runs) - trip) / calls, statistics.median(c for _, c in runs) / calls

    replays = {}  # each kernel's 2,654-call graphs, timed again beside a second context
    for name, fn in kernels.items():
        g768 = graphs(fn, 768, 768)
        bench = statistics.median(events(g768, 768, True) for _ in range(REPS))
        del g768
        g2654 = graphs(fn, 2654, 256)
        sets256 = statistics.median(events(g2654, 2654, False) for _ in range(REPS))
        judge, cage = judge_way(g2654, 2654)
        print(f"{name:9s} bench {bench * 1e6:.3f} us | sets256 {sets256 * 1e6:.3f} | judge {judge * 1e6:.3f}"
              f" | cage {cage * 1e6:.3f}", flush=True)
        replays[name] = g2654
    ctx = mp.get_context("spawn")
    ready, done = ctx.Event(), ctx.Event()
    other = ctx.Process(target=_hold_context, args=(ready, done, 20))
    other.start()
    if ready.wait(120):
        for name, g2654 in replays.items():
            judge, cage = judge_way(g2654, 2654)
            print(f"{name:9s} with a second context (20 GB): judge {judge * 1e6:.3f} us | cage {cage * 1e6:.3f}",
                  flush=True)
    else:
        print("the second process did not start in 120 s")
    done.set()
    other.join(30)


if __name__ == "__main__":
    main()
