#!/usr/bin/env bash
# Issue #14 on the H200 in one device call (about 3 minutes): offline throughput of the reference engine
# (solutions/part04_serving/engine.py) against the naive one-request-at-a-time loop, in the same run.
# Workload: 256 requests, prompts 128-1024, outputs 128-512, a ~124M-parameter random LLaMA in bf16.
# Writes $OUT/h200-engine.json (batched attention, the figure for the >= 8x target) and
# $OUT/h200-engine-course-attention.json (the reference per-row paged_decode_attention, 32 requests).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/h200-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit,pstate --format=csv
timeout 360 python3 benchmarks/engine_throughput.py --out "$OUT/h200-engine.json" 2>&1 | cut -c1-600
timeout 200 python3 benchmarks/engine_throughput.py --attention course --requests 32 --naive-requests 4 \
  --out "$OUT/h200-engine-course-attention.json" 2>&1 | cut -c1-600
