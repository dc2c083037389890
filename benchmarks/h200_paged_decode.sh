#!/usr/bin/env bash
# Issue #14 (paged_attention as a Triton kernel) on the H200: the GPU challenges of
# part04_serving.paged_decode_kernel. `bench` ran on 2026-12-03 (docs/serving.md); the other phases not yet. Target: the reference >= 75% of copy bandwidth
# at B64 Hq32 Hkv8 ctx 8192 D128 block 16. Run from the repository root; each phase under 10 minutes:
#   bash benchmarks/h200_paged_decode.sh bench     # infralab bench on the reference (both challenges) + the GPU tests
#   bash benchmarks/h200_paged_decode.sh mutants   # every mutant must be rejected at the correctness gate
#   bash benchmarks/h200_paged_decode.sh tune      # 5 launch settings of the reference, do_bench medians
#   bash benchmarks/h200_paged_decode.sh grade     # infralab grade --gpu (the cage, the judge's clock), as root
# Outputs under $OUT: h200-paged-decode-bench.json (+ .roofline.png), h200-paged-decode-mutants.txt (+ one record
# per mutant: every decision must be reject, at the gate),
# h200-paged-decode-tune.json, h200-paged-decode-grade/ (gradebook.csv, <student>/record.json).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/h200-out}
PHASE=${1:-bench}
EX=part04_serving.paged_decode_kernel
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit,pstate --format=csv
python3 -c "import numpy, torch, triton; print('numpy', numpy.__version__, 'torch', torch.__version__, 'triton', triton.__version__)"
case "$PHASE" in
  bench)
    timeout 400 python3 -m infralab.cli bench "$EX" --target solutions --record "$OUT/h200-paged-decode-bench.json" 2>&1 \
      | tail -25 | cut -c1-400
    timeout 150 python3 -m pytest $(python3 -c "from infralab.runner import plugin_args; print(*plugin_args())") \
      graders/part04_serving/test_paged_decode_kernel.py -m gpu \
      --target solutions -q -n 0 2>&1 | tail -5 ;;
  mutants)
    for m in fixtures/mutants/part04_serving/paged_decode_kernel/*.py; do
      name=$(basename "$m" .py)
      echo "== $name"
      timeout 100 python3 -m infralab.cli bench "$EX" --target "mutant:$EX:$name" --challenge long_context --time-cap 2 \
        --record "$OUT/h200-paged-decode-mutant-$name.json" > /dev/null 2>&1
      python3 - "$OUT/h200-paged-decode-mutant-$name.json" <<'PY'
import json, sys
try:
    for e in json.load(open(sys.argv[1])).get("perf", []):
        print(f"{e.get('challenge')}: {e.get('decision')} {(e.get('reason') or '')[:300]}")
except (OSError, ValueError) as exc:
    print(f"no record: {exc}")
PY
    done 2>&1 | tee "$OUT/h200-paged-decode-mutants.txt" ;;
  tune)
    timeout 580 python3 benchmarks/tune_paged_decode.py --out "$OUT/h200-paged-decode-tune.json" 2>&1 | tail -30 ;;
  grade)
    CLASS=/tmp/h200-class-paged-decode
    rm -rf "$CLASS" && mkdir -p "$CLASS/reference" && cp -r solutions/part04_serving "$CLASS/reference/"
    timeout 580 python3 -m infralab.cli grade "$CLASS" --exercise "$EX" --gpu --jobs 1 \
      --out "$OUT/h200-paged-decode-grade" 2>&1 | tail -30 | cut -c1-400 ;;
  *) echo "unknown phase $PHASE: bench, mutants, tune or grade"; exit 2 ;;
esac
