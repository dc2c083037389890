"""Issue #12 probe (GPU): the filling device gate (infralab/perf/device_gate.py, fill=True).

Prints, for the one-block gate and the filling gate:
- whether it fills (its self-test) and its block count;
- the enqueue window: with the gate closed, a kernel launched on a side stream (the reference
  vector_add, through kernel[grid]) and a raw launch through the compiled kernel's private _run:
  did each run before the gate opened (one-block: expected yes; filling: expected no);
- the cost: an armed batch of the reference vector_add at the large shape (N = 2^28 fp32), go to
  synchronised, per call, median of 7 batches, each gate in turn (the 2% rule of issue #12);
- the release: an empty armed batch, go to synchronised (median of 7).
  python3 benchmarks/probe_filling_gate.py [--n 268435456] [--calls 16]
"""
import argparse
import statistics
import time

import torch
import triton

from infralab.perf.device_gate import DeviceGate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 28)
    ap.add_argument("--calls", type=int, default=16)
    args = ap.parse_args()
    import solutions.part03_kernels.vector_add as mod
    props = torch.cuda.get_device_properties(0)
    print(f"device {props.name}: {props.multi_processor_count} SMs, "
          f"{getattr(props, 'max_threads_per_multi_processor', '?')} threads/SM; torch {torch.__version__}, "
          f"triton {triton.__version__}")
    x = torch.randn(args.n, device="cuda")
    y = torch.randn(args.n, device="cuda")
    small = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    mod.vector_add(*small)  # compiled and warm
    torch.cuda.synchronize()
    a, b = small
    raw = mod.add_kernel.warmup(a, b, torch.empty_like(a), a.numel(), BLOCK_SIZE=1024, num_warps=8, grid=(1024,))
    raw._init_handles()
    for fill in (False, True):
        gate = DeviceGate(fill=fill)
        print(f"\n== {'filling' if fill else 'one-block'} gate: fills={gate.fills} "
              f"blocks={getattr(gate, 'blocks', 1)} problem={gate.fill_problem}")
        side = torch.cuda.Stream()
        for route in ("kernel[grid]", "raw _run"):
            out = torch.zeros_like(a)
            epoch = gate.close()
            with torch.cuda.stream(side):
                if route == "kernel[grid]":
                    mod.add_kernel[(1024,)](a, b, out, a.numel(), BLOCK_SIZE=1024, num_warps=8)
                else:
                    raw._run(1024, 1, 1, side.cuda_stream, raw.function, raw.packed_metadata, None, None, None,
                             a, b, out, a.numel(), 1024)
                done = torch.cuda.Event()
                done.record(side)
            time.sleep(0.02)
            ran = done.query()
            gate.open(epoch)
            torch.cuda.synchronize()
            right = bool(torch.equal(out, a + b))
            print(f"   enqueue window, {route} on a side stream: ran before the release: {ran}; output right: {right}")
        for label, calls in (("empty armed batch", 0), (f"{args.calls} calls of N={args.n}", args.calls)):
            times = []
            for _ in range(7):
                epoch = gate.close()
                for _ in range(calls):
                    mod.vector_add(x, y)
                time.sleep(0.01)
                t0 = time.perf_counter()
                gate.open(epoch)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            per = med / calls * 1e6 if calls else med * 1e6
            gbps = 3 * 4 * args.n / (med / calls) / 1e9 if calls else 0
            print(f"   {label}: median {med * 1e3:.3f} ms" + (f", {per:.1f} us a call, {gbps:.0f} GB/s" if calls else ""))


if __name__ == "__main__":
    main()
