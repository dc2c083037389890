"""Measuring a card's ceilings (``infralab profile calibrate``): copy and read bandwidth, matmul rates.

Same method as the challenges (infralab.perf.harness): random data, warm-up, L2 flush before
each sample, median of >= 30 samples. Writes a profile marked ``calibrated: true`` with the
date, the device and the versions it was measured with.
"""
from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path
from typing import Any

import yaml

from infralab.perf.harness import CudaTimer, SamplingPolicy, sample_interleaved, warm_up
from infralab.perf.profiles import current_device, parse_profile
from infralab.perf.run import gpu_environment

COPY_BYTES = 2 * 2**30


def _median_s(fn, timer: CudaTimer, policy: SamplingPolicy) -> tuple[float, int]:
    warm_up(fn, timer)
    res = sample_interleaved({"x": fn}, timer, policy, {"x": 1})
    return res.timings["x"].median, len(res.timings["x"].samples)


def measure_ceilings(policy: SamplingPolicy | None = None, log=print) -> dict[str, Any]:
    """The ceilings of the current CUDA device, and the details of each measurement."""
    import torch

    policy = policy or SamplingPolicy(time_cap_s=8.0)
    timer = CudaTimer()
    g = torch.Generator(device="cuda").manual_seed(1234)
    n = COPY_BYTES // 2
    src = torch.randn(n, device="cuda", generator=g, dtype=torch.float32).to(torch.bfloat16)
    dst = torch.empty_like(src)
    ceilings: dict[str, float] = {}
    details: dict[str, Any] = {}
    t, k = _median_s(lambda i: dst.copy_(src), timer, policy)
    ceilings["copy_gbps"] = round(2 * COPY_BYTES / t / 1e9, 1)
    details["copy"] = f"{COPY_BYTES / 2**30:g} GiB bf16 copy_, bytes read + written, median of {k}"
    log(f"copy: {ceilings['copy_gbps']:,} GB/s")
    del dst
    src32 = src.float()  # 4 GiB read
    del src
    t, k = _median_s(lambda i: src32.sum(), timer, policy)
    ceilings["read_gbps"] = round(src32.numel() * 4 / t / 1e9, 1)
    details["read"] = f"sum over {src32.numel() * 4 / 2**30:g} GiB fp32, median of {k}"
    log(f"read: {ceilings['read_gbps']:,} GB/s")
    del src32
    for dtype, name in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
        for size in (4096, 8192):
            a = torch.randn(size, size, device="cuda", generator=g).to(dtype)
            b = torch.randn(size, size, device="cuda", generator=g).to(dtype)
            t, k = _median_s(lambda i: torch.matmul(a, b), timer, policy)
            rate = round(2 * size**3 / t / 1e12, 1)
            details[f"matmul_{name}_{size}"] = rate
            if size == 8192:
                ceilings[f"matmul_{name}_tflops"] = rate
            log(f"matmul {name} {size}^3: {rate:,} TFLOP/s (median of {k})")
            del a, b
    details["l2_flush_bytes"] = timer.flush_bytes
    return {"ceilings": ceilings, "details": details}


def _slug(device_name: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "_", device_name.lower().replace("nvidia", "")).strip("_")
    return s if re.match(r"[a-z]", s) else f"gpu_{s}"


def profile_data(measured: dict[str, Any], *, name: str | None, base: dict[str, Any] | None,
                 peaks: dict[str, float] | None = None) -> dict[str, Any]:
    """A calibrated profile's YAML data: ``base`` (an existing profile) updated, or a new one."""
    env = gpu_environment()
    dev = current_device()
    assert dev is not None
    stamp = {"date": _dt.date.today().isoformat(), "source": "infralab profile calibrate",
             "device_name": dev.name, **{k: None if env.get(k) is None else str(env[k])
                                         for k in ("torch", "triton", "cuda", "driver")},
             "clocks": {str(k): str(v) for k, v in (env.get("clocks") or {}).items()},
             **measured["details"]}
    if base is not None:
        data = dict(base)
    else:
        mem = dev.memory_gib
        data = {
            "name": name or _slug(dev.name), "title": dev.name, "runs_perf": True,
            "identity": {"name_patterns": [re.escape(dev.name)], "compute_capability": list(dev.capability),
                         "memory_gib": [round(mem * 0.95, 1), round(mem * 1.05, 1)],
                         "form_factor": "pcie" if "pcie" in dev.name.lower() else "sxm"},
            "l2_mb": round(dev.l2_bytes / 1e6, 1) or 1,
        }
        if peaks:
            data["peaks"] = dict(peaks)
        else:  # no datasheet given: a stand-in so that flags still work; say so
            c = measured["ceilings"]
            data["peaks"] = {"bandwidth_gbps": round(c["copy_gbps"] / 0.89), "bf16_tflops": round(c["matmul_bf16_tflops"] / 0.75)}
            stamp["peaks_source"] = "estimated from the measured ceilings (no datasheet given): replace with the datasheet"
    data["calibrated"] = True
    data["ceilings"] = dict(measured["ceilings"])
    data["measured"] = stamp
    return data


def write_profile(path: Path, data: dict[str, Any]) -> None:
    header = (f"# {data['title']}: ceilings measured by `infralab profile calibrate` on "
              f"{data['measured']['date']} (see `measured`); peaks from the datasheet.\n")
    text = header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    parse_profile(path, yaml.safe_load(text))  # never write a profile the loader would reject
    path.write_text(text, encoding="utf-8")
