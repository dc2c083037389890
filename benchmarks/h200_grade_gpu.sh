#!/usr/bin/env bash
# Issue #12 item 2 on the H200: `infralab grade --gpu` (the caged route, the judge's clock). NOT YET RUN.
# Three device calls, each under 10 minutes; run from the repository root, as root (the cage's namespaces):
#   bash benchmarks/h200_grade_gpu.sh reference   # the reference solutions of part03 as a one-student class
#   bash benchmarks/h200_grade_gpu.sh hostile     # every sample of fixtures/submissions_gpu as a class
#   bash benchmarks/h200_grade_gpu.sh bench       # infralab bench on the same solutions (caged vs bench: within 5%)
# Outputs under $OUT: h200-grade-gpu-<phase>/ (gradebook.csv, <student>/record.json with the perf entries) and
# h200-grade-gpu-bench.json; then `infralab leaderboard $OUT --out $OUT/leaderboard-grade-gpu` ranks them.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/h200-out}
PHASE=${1:-reference}
CLASS=/tmp/h200-class-$PHASE
EXERCISES="--exercise part03_kernels.vector_add --exercise part03_kernels.rmsnorm --exercise part03_kernels.softmax \
  --exercise part03_kernels.matmul --exercise part03_kernels.flash_attention --exercise part03_kernels.decode_attention"
PAGED="--exercise part04_serving.paged_decode_kernel"  # Part 04's Triton kernel: the reference phase only
rm -rf "$CLASS"
mkdir -p "$CLASS" "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit,pstate --format=csv
python3 -c "import numpy, torch, triton; print('numpy', numpy.__version__, 'torch', torch.__version__, 'triton', triton.__version__)"
case "$PHASE" in
  reference)
    mkdir -p "$CLASS/reference" && cp -r solutions/part03_kernels solutions/part04_serving "$CLASS/reference/"
    timeout 580 python3 -m infralab.cli grade "$CLASS" $EXERCISES $PAGED --gpu --jobs 1 --out "$OUT/h200-grade-gpu-reference" \
      2>&1 | tail -40 | cut -c1-400 ;;
  hostile)
    for d in fixtures/submissions_gpu/*/; do cp -r "$d" "$CLASS/"; done
    timeout 580 python3 -m infralab.cli grade "$CLASS" $EXERCISES --gpu --jobs 1 --out "$OUT/h200-grade-gpu-hostile" \
      2>&1 | tail -40 | cut -c1-400
    python3 - "$OUT/h200-grade-gpu-hostile" <<'PY'
import json, pathlib, sys
for rec in sorted(pathlib.Path(sys.argv[1]).glob("*/record.json")):
    r = json.loads(rec.read_text())
    for e in r.get("perf", []):
        if e.get("candidate", {}).get("function") and e.get("reason") and "NotImplementedError" not in e["reason"]:
            print(f"{r['student']:32} {e['exercise']:34} {e['challenge']:8} {e['decision']:7} {e['reason'][:200]}")
PY
    ;;
  bench)
    for ex in vector_add rmsnorm softmax matmul flash_attention decode_attention paged_decode_kernel; do
      timeout 90 python3 -m infralab.cli bench "$ex" --target solutions --record "/tmp/h200-bench-$ex.json" 2>&1 \
        | tail -4 | cut -c1-300
    done
    python3 - "$OUT/h200-grade-gpu-bench.json" /tmp/h200-bench-*.json <<'PY'
import json, sys
json.dump([json.load(open(p)) for p in sys.argv[2:]], open(sys.argv[1], "w"), indent=1)
PY
    ;;
esac
