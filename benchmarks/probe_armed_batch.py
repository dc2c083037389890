"""Issue #12 probe (H200): can a batch be enqueued behind a device-side wait on a pinned host flag,
so that the judge's clock measures the device's work without the host's enqueueing (as the bench's
spin does)? Prints, for vector_add small (N=1M fp32) through the checked timed view and plain:
host cost per call, wall per call of a synchronised batch, device per call (events), armed-go per
call; and whether enqueueing N launches behind a blocked stream blocks the host.
  python3 benchmarks/probe_armed_batch.py
"""
import statistics
import threading
import time

import torch
import triton
import triton.language as tl

from infralab.perf import checked
from infralab.perf.workloads import WORKLOADS


@triton.jit
def _wait_flag(flag_ptr, want):
    v = tl.load(flag_ptr, volatile=True)
    while v != want:
        v = tl.load(flag_ptr, volatile=True)


def main() -> None:
    import solutions.part03_kernels.vector_add as mod
    wl = WORKLOADS["vector_add"]
    opts = dict(wl.options)
    sets = [wl.make_inputs({"N": 1 << 20}, "float32", opts, s, "cuda") for s in range(64)]
    view = checked.checked_candidate(mod, triton=True).timed
    fns = {"timed_view": lambda i: wl.call(view, sets[i % 64], opts),
           "plain_module": lambda i: wl.call(mod, sets[i % 64], opts),
           "torch_baseline": lambda i: next(iter(wl.baselines.values()))(sets[i % 64], opts)}
    flag = torch.zeros(1, dtype=torch.int32).pin_memory()
    epoch = [1]
    flag[0] = 1
    _wait_flag[(1,)](flag, 1)
    torch.cuda.synchronize()
    print("wait kernel compiled; flag ptr", hex(flag.data_ptr()))
    for name, fn in fns.items():
        for i in range(50):
            fn(i)
        torch.cuda.synchronize()
        for n in (64, 256, 1024, 4096):
            host, wall, dev, armed, blocked = [], [], [], [], False
            for rep in range(7):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for i in range(n):
                    fn(i)
                t1 = time.perf_counter()
                torch.cuda.synchronize()
                t2 = time.perf_counter()
                host.append((t1 - t0) / n)
                wall.append((t2 - t0) / n)
                b, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                b.record()
                for i in range(n):
                    fn(i)
                e.record()
                torch.cuda.synchronize()
                dev.append(b.elapsed_time(e) / 1e3 / n)
                epoch[0] += 1
                want = epoch[0]
                _wait_flag[(1,)](flag, want)
                done = threading.Event()

                def watchdog():
                    if not done.wait(10):
                        flag[0] = want  # release a stream the host blocked on

                th = threading.Thread(target=watchdog)
                th.start()
                t0 = time.perf_counter()
                for i in range(n):
                    fn(i)
                enq = time.perf_counter() - t0
                done.set()
                th.join()
                if enq > 9:
                    blocked = True
                t0 = time.perf_counter()
                flag[0] = want
                torch.cuda.synchronize()
                armed.append((time.perf_counter() - t0) / n)
            med = lambda xs: statistics.median(xs) * 1e6
            print(f"{name:15s} N={n:5d} host {med(host):7.2f} us/call  wall {med(wall):7.2f}  events {med(dev):7.2f}"
                  f"  armed-go {med(armed):7.2f}  blocked={blocked}", flush=True)
    # the go round trip alone (no calls)
    trips = []
    for rep in range(20):
        epoch[0] += 1
        _wait_flag[(1,)](flag, epoch[0])
        t0 = time.perf_counter()
        flag[0] = epoch[0]
        torch.cuda.synchronize()
        trips.append(time.perf_counter() - t0)
    print(f"go with no calls: median {statistics.median(trips) * 1e6:.1f} us, max {max(trips) * 1e6:.1f} us")


if __name__ == "__main__":
    main()
