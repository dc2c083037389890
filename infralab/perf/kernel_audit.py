"""Which kernels a timed batch really ran: one batch per round under the CUDA profiler (Kineto).

In a Triton exercise every kernel of a timed call must be one of the submission's own
``@triton.jit`` kernels, or a copy/fill kernel of torch (``.contiguous()``, ``.to(dtype)``,
``torch.zeros``). A cuBLAS, cuDNN, FlashAttention, aten compute or Inductor kernel rejects, with
its name in the reason. A name alone proves little (a student may call a ``@triton.jit`` function
``nvjet_tst_...``), so an own kernel must also have been launched through Triton's launcher in the
same batch (the launch hook counts them), and every kernel must run on the timed stream (a marker
kernel the harness enqueues first tells which stream that is).

In-process, one baseline batch per round is profiled too (:func:`audit_baseline`): nothing may run on
another stream while the judge times its baseline.

Everything but :func:`profile_batch` is pure logic over recorded kernel lists: the kit's tests
feed it recorded traces on a CPU.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from infralab.i18n import tr

MARKER_KERNEL = "spin_kernel"  # torch.cuda._sleep: enqueued by the harness before the profiled batch
MARKER_CYCLES = 1000

# torch's elementwise copy and fill kernels (allocation, layout, dtype casts): allowed around a kernel
ALLOWED_PATTERNS = (
    re.compile(r"FillFunctor"),  # torch.zeros/full/fill_
    re.compile(r"direct_copy_kernel"),  # .contiguous(), .to(dtype), .copy_
    re.compile(r"CatArrayBatchedCopy"),  # torch.cat of outputs
    re.compile(r"^Memcpy "),  # cudaMemcpy device to device (profiler's name)
    re.compile(r"^Memset "),  # cudaMemset (zeros)
)
# kernel families, checked in this order: the first match names the reason
FAMILIES = (
    ("inductor", re.compile(r"^triton_(poi|red|per|tem|for|mm|bmm|unk)_")),
    ("cudnn", re.compile(r"cudnn|fprop|dgrad|wgrad|implicit_convolve|conv2d|convolve", re.I)),
    ("attention-library", re.compile(r"flash_fwd|flash_bwd|fmha|cutlassF|pytorch_flash|efficient_attention", re.I)),
    ("cublas", re.compile(r"cublas|gemm|nvjet|xmma|cutlass|sm\d+_|magma|gemv|dot_kernel", re.I)),
    ("aten-compute", re.compile(r"at::native|at::cuda|\bat_|reduce_kernel|elementwise_kernel|softmax|cunn_", re.I)),
)


@dataclass(frozen=True)
class Kernel:
    """One device activity of the profiled batch."""

    name: str
    stream: int | None = None
    kind: str = "kernel"  # kernel | gpu_memcpy | gpu_memset
    start_us: float = 0.0


def kernels_from_trace(trace: dict) -> list[Kernel]:
    """Device activities of a Kineto chrome trace (``prof.export_chrome_trace``), in start order."""
    out = []
    for ev in trace.get("traceEvents", []):
        if not isinstance(ev, dict) or ev.get("ph") != "X" or ev.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        args = ev.get("args") or {}
        stream = args.get("stream", ev.get("tid"))
        try:
            stream = int(stream)
        except (TypeError, ValueError):
            stream = None
        out.append(Kernel(str(ev.get("name", "")), stream, ev["cat"], float(ev.get("ts", 0.0))))
    return sorted(out, key=lambda k: k.start_us)


def family(name: str) -> str:
    """``allowed`` for torch's copy/fill kernels, else the library family that wrote ``name``."""
    if any(p.search(name) for p in ALLOWED_PATTERNS):
        return "allowed"
    for fam, pattern in FAMILIES:
        if pattern.search(name):
            return fam
    return "unknown"


def _base_name(name: str) -> str:
    """A profiler kernel name without its argument list and namespaces
    (``at::cuda::(anonymous namespace)::spin_kernel(long)`` -> ``spin_kernel``)."""
    name = name.strip()
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    return name.rsplit("::", 1)[-1].strip()


def _own(name: str, own_kernels: frozenset[str]) -> bool:
    return _base_name(name) in own_kernels


def audit(kernels: Iterable[Kernel], own_kernels: frozenset[str], launched: Iterable[str]) -> str | None:
    """None when every kernel of the batch is allowed; else why not (the kernel named).

    ``kernels``: the batch's device activities, the harness's marker first; ``own_kernels``: the
    names of the ``@triton.jit`` functions in the submission's files; ``launched``: the names
    Triton's launch hook saw during the batch.
    """
    marker, kernels = _split_marker(kernels)
    hook = Counter(_base_name(n) for n in launched)
    seen: Counter[str] = Counter()
    if not any(_own(k.name, own_kernels) for k in kernels):
        return tr("perf.audit_no_own_kernel", kernels=_listing(kernels))
    for k in kernels:
        if _off_stream(k, marker):
            return tr("perf.audit_side_stream", kernel=k.name, stream=k.stream, timed=marker.stream)
        if _own(k.name, own_kernels):
            seen[_base_name(k.name)] += 1
            continue
        fam = family(k.name)
        if fam != "allowed":
            return tr("perf.audit_foreign_kernel", kernel=k.name, family=tr(f"perf.family_{fam.replace('-', '_')}"))
    for name, count in seen.items():
        if count > hook[name]:
            return tr("perf.audit_not_via_triton", kernel=name, count=count, launched=hook[name])
    return None


def audit_baseline(kernels: Iterable[Kernel]) -> str | None:
    """None when every device activity of a profiled *baseline* batch ran on the timed stream; else the
    first that did not, named. In-process, only the judge and the submission run in the process, and
    the judge's baseline launches on one stream: work on another stream during the baseline's batch
    is the submission's, left running between its own calls (a thread that keeps the device busy
    while the candidate is idle slows the baseline and lifts the candidate's ratio). CUPTI sees the
    activity of this process only; another process's work is the caged route's canary's to catch."""
    marker, kernels = _split_marker(kernels)
    off = next((k for k in kernels if _off_stream(k, marker)), None)
    return None if off is None else tr("perf.audit_baseline_side_stream", kernel=off.name, stream=off.stream,
                                       timed=marker.stream)


def _split_marker(kernels: Iterable[Kernel]) -> tuple[Kernel | None, list[Kernel]]:
    """The harness's marker kernel (None if the profile lacks it) and the batch's other activities."""
    kernels = list(kernels)
    marker = next((k for k in kernels if _base_name(k.name) == MARKER_KERNEL), None)
    if marker is not None:
        kernels.remove(marker)
    return marker, kernels


def _off_stream(k: Kernel, marker: Kernel | None) -> bool:
    """``k`` ran on another stream than the marker (the timed stream); unknown streams are not judged."""
    return marker is not None and marker.stream is not None and k.stream is not None and k.stream != marker.stream


def _listing(kernels: list[Kernel], limit: int = 4) -> str:
    names = [k.name[:120] for k in kernels[:limit]]
    return ", ".join(names) + (f", ... ({len(kernels)} in all)" if len(kernels) > limit else "") if names else "-"


def profile_batch(run: Callable[[], None]) -> tuple[list[Kernel], list[str]]:
    """Run ``run`` (one batch of timed calls) under the CUDA profiler, after a marker kernel on the
    current stream; return (device activities in start order, Triton launches the hook saw)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from infralab.triton_watch import watching

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        with watching(poison_allocations=False, record_writes=False) as watch:
            torch.cuda._sleep(MARKER_CYCLES)
            run()
            torch.cuda.synchronize()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as f:
            trace = json.load(f)
    finally:
        os.unlink(path)
    return kernels_from_trace(trace), [launch.name for launch in watch.launches]
