"""Issue #12(a) probe (GPU): does the memory a batch spreads over, or the rewriting of its sets just
before it, cost a memory-bound kernel bandwidth by itself?

The caged route gives the candidate a fresh input set per call (decode_attention long_context: 24 sets of
2 GiB, 48 GB a batch, rewritten before every batch); infralab bench at most 6 GB (3 sets). On the H200
(2026-12-04) the cage's own CUDA events read decode 5% below bench (about 3,980 vs 4,199.8 GB/s) while
vector_add's agreed (4,378 vs 4,382.8): worked out from the records' ``judge_clock.cage_timer_ms`` in
benchmarks/results/h200-session9/call1 and docs/performance.md's bench column; on an H100 (2026-12-05,
benchmarks/results/h100-session11) vector_add was flat from 1 to 16 sets.
Here a reference kernel runs batches of ``--calls`` calls cycling through k distinct input sets, made by
the workload's own generator, timed with CUDA events (median of 5 batches after a warm one), for k from 1
to ``--calls``, with the sets left as they are or rewritten (new values, same addresses, as both routes
do) just before each batch. If GB/s falls with k, the footprint is the cause; if it falls with the
rewrite, the burst of work before the batch. Bytes are counted as the cage counts a call's
(``call_bytes``: the set's inputs and one call's outputs).
  python3 benchmarks/probe_footprint.py                              # vector_add, N = 2^28 fp32, 16 calls
  python3 benchmarks/probe_footprint.py --workload decode_attention  # the long_context shape, 24 calls
  python3 benchmarks/probe_footprint.py --workload paged_decode --ragged
"""
import argparse
import importlib
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from infralab.perf.caged import _nbytes, _nbytes_of  # noqa: E402
from infralab.perf.workloads import WORKLOADS, refill  # noqa: E402

# workload -> (module of the reference solution, the challenge shape, dtype, calls a batch as the cage sizes it)
CASES = {
    "vector_add": ("solutions.part03_kernels.vector_add", {"N": 1 << 28}, "float32", 16),
    "decode_attention": ("solutions.part03_kernels.decode_attention",
                         {"B": 64, "HQ": 32, "HKV": 8, "S": 8192, "D": 128}, "bfloat16", 24),
    "paged_decode": ("solutions.part04_serving.paged_decode_kernel",
                     {"B": 64, "HQ": 32, "HKV": 8, "CTX": 8192, "D": 128, "BS": 16}, "bfloat16", 24),
}


def seconds(batch, device: str) -> float:
    """``batch()``'s time: CUDA events on a GPU, the host's clock on a CPU (--smoke)."""
    if device != "cuda":
        t0 = time.perf_counter()
        batch()
        return time.perf_counter() - t0
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    batch()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="vector_add", choices=sorted(CASES))
    ap.add_argument("--calls", type=int, help="calls a batch (default: the cage's count for the shape)")
    ap.add_argument("--ragged", action="store_true", help="the workload's ragged option (paged_decode)")
    ap.add_argument("--smoke", action="store_true", help="a CPU: tiny shapes, 2 calls, the host's clock")
    args = ap.parse_args()
    module, shape, dtype, calls = CASES[args.workload]
    calls = args.calls or calls
    device = "cpu" if args.smoke else "cuda"
    if args.smoke:
        shape, calls = {k: min(v, 16) for k, v in shape.items()}, 2
    wl, mod = WORKLOADS[args.workload], importlib.import_module(module)
    opts = {**wl.options, **({"ragged": True} if args.ragged else {})}
    make = lambda seed: wl.make_inputs(dict(shape), dtype, opts, seed, device)  # noqa: E731
    name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    print(f"device {name}; torch {torch.__version__}; {args.workload} {json.dumps(shape)}"
          f"{' ragged' if args.ragged else ''}, {calls} calls a batch")
    sets = [make(1000 + i) for i in range(calls)]
    set_bytes = _nbytes(sets[0])
    moved = set_bytes + _nbytes_of(wl.call(mod, sets[0], opts))  # what one call reads and writes, about
    seed = 5000
    for rewrite in (False, True):
        for k in sorted({n for n in (1, 2, 3, 8) if n < calls} | {calls}):
            def batch(k=k) -> None:  # each output dropped before the next call
                for i in range(calls):
                    wl.call(mod, sets[i % k], opts)

            times = []
            for rep in range(2 if args.smoke else 6):
                if rewrite:
                    for i in range(k):
                        seed += 1
                        sets[i] = refill(sets[i], make(seed))
                elapsed = seconds(batch, device)
                if rep:  # the first batch warms up
                    times.append(elapsed / calls)
            med = statistics.median(times)
            print(f"sets {'rewritten' if rewrite else 'kept':9s} {k:2d} distinct (~{k * set_bytes / 1e9:4.0f} GB): "
                  f"{med * 1e6:8.1f} us a call, {moved / med / 1e9:7.0f} GB/s (spread {min(times) * 1e6:.1f}-"
                  f"{max(times) * 1e6:.1f} us)", flush=True)


if __name__ == "__main__":
    main()
