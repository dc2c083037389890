"""Issue #12 probe (H200): how large a CUDA graph can be replayed behind the closed device gate before the
host blocks in the launch (grade --gpu replays graphs of short calls behind the gate; a launch that blocks
is released by the watchdog and the batch reads as released early). For graphs of N small kernels (torch
add on 1M floats, as the baseline of the small vector_add) and of N Triton launches (the reference
vector_add): the host's enqueue time behind the gate, whether the watchdog had to release it, and the
device time per call from events. Also one graph of 512 kernels replayed R times behind the gate, and
4,096 calls in distinct graphs of 256 or 1,024 calls (each launched once before: captured() uploads it).
  python3 benchmarks/probe_graph_gate.py
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from infralab.perf import device_gate  # noqa: E402


def main() -> None:
    import solutions.part03_kernels.vector_add as mod
    gate = device_gate.gate_or_none("cuda")
    x, y = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    kinds = {"torch_add": lambda: x + y, "triton_add": lambda: mod.vector_add(x, y)}
    for name, fn in kinds.items():
        fn()
        torch.cuda.synchronize()
        for n in (1024, 3072, 4096):
            graph = device_gate.captured(lambda: [fn() for _ in range(n)])
            armed = device_gate.Armed(gate, graph.replay, 1.0)
            enqueue = time.perf_counter() - armed.closed_at
            batch_s, early, _ = armed.go()
            print(f"{name:10s} graph of {n:5d} calls: enqueue {enqueue * 1e3:8.2f} ms  released early {early!s:5}  "
                  f"{batch_s / n * 1e6:6.2f} us per call", flush=True)
            del graph
        graph = device_gate.captured(lambda: [fn() for _ in range(512)])
        for r in (2, 4, 8, 16):
            armed = device_gate.Armed(gate, lambda: [graph.replay() for _ in range(r)], 1.0)  # noqa: B023
            enqueue = time.perf_counter() - armed.closed_at
            batch_s, early, _ = armed.go()
            print(f"{name:10s} 512-call graph x {r:2d}: enqueue {enqueue * 1e3:8.2f} ms  released early {early!s:5}  "
                  f"{batch_s / (512 * r) * 1e6:6.2f} us per call", flush=True)
        for n in (256, 1024):  # distinct graphs, each launched once beforehand by captured() (uploaded)
            graphs = device_gate.captured_chunks(lambda i: fn(), 4096, n)  # noqa: B023
            armed = device_gate.Armed(gate, lambda: [g.replay() for g in graphs], 1.0)  # noqa: B023
            enqueue = time.perf_counter() - armed.closed_at
            batch_s, early, _ = armed.go()
            print(f"{name:10s} {len(graphs):2d} distinct {n}-call graphs: enqueue {enqueue * 1e3:8.2f} ms  "
                  f"released early {early!s:5}  {batch_s / 4096 * 1e6:6.2f} us per call", flush=True)


if __name__ == "__main__":
    main()
