#!/usr/bin/env bash
# Device calls of the seventh session (issues #12 and #16), each under the 600 s limit; every output under
# $OUT (packed: the device returns at most 8 files). Run from the repository root, as root (the cage).
#   bash benchmarks/h200_session7.sh a   # armed-batch probe, W4A16 bench (tuned constants), grade --gpu reference
#   bash benchmarks/h200_session7.sh b   # the rest of the reference (ONLY=...), bench of the same kernels, and the
#                                        # hostile vector_add samples again (their large shape hit the wire limit)
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$(pwd)
OUT=${OUT:-/tmp/h200-out}
LOGS=$OUT/logs
mkdir -p "$LOGS"
T0=$(date +%s)
stamp() { echo "== $(date +%T) $*"; }
{
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit,pstate --format=csv
python3 -c "import numpy, torch, triton, sys; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'torch', torch.__version__, 'triton', triton.__version__)"
} > "$LOGS/environment.txt" 2>&1
case "${1:-a}" in
  a)
    stamp "probe: batches armed behind a device wait"
    timeout 90 python3 benchmarks/probe_armed_batch.py > "$LOGS/probe-armed.txt" 2>&1; echo "rc=$?" >> "$LOGS/probe-armed.txt"
    stamp "w4a16 bench (GEMV split 4, GEMM split 8, no swap)"
    timeout 70 python3 -m infralab.cli bench part05_quantization.w4a16 --target solutions --time-cap 3 \
      --record "$OUT/h200-w4a16-bench-tuned.json" > "$LOGS/w4a16-bench.txt" 2>&1; echo "rc=$?" >> "$LOGS/w4a16-bench.txt"
    rm -f "$OUT"/*.png
    stamp "grade --gpu: reference, one exercise at a time"
    OUT=$OUT TIMECAP=3 LIMIT=150 DEADLINE=$((T0 + ${REF_UNTIL:-470})) bash benchmarks/h200_grade_gpu.sh reference \
      > "$LOGS/reference.txt" 2>&1 ;;
  b)
    if [ -n "${ONLY:-}${PAGED_ONLY:-}" ]; then
      stamp "grade --gpu: the rest of the reference"
      OUT=$OUT TIMECAP=3 LIMIT=150 DEADLINE=$((T0 + ${REF_UNTIL:-250})) bash benchmarks/h200_grade_gpu.sh reference \
        > "$LOGS/reference-rest.txt" 2>&1
    fi
    stamp "bench of the reference kernels (caged vs bench)"
    OUT=$OUT TIMECAP=3 ONLY= bash benchmarks/h200_grade_gpu.sh bench > "$LOGS/bench.txt" 2>&1
    stamp "hostile vector_add samples (large shape)"
    rm -rf /tmp/h200-hostile-va && mkdir -p /tmp/h200-hostile-va
    for s in counting side_stream timer_patch wrong_when_timed; do
      cp -r fixtures/submissions_gpu/${s}_vector_add /tmp/h200-hostile-va/
    done
    OUT=$OUT TIMECAP=3 LIMIT=100 DEADLINE=$((T0 + ${HOSTILE_UNTIL:-520})) SAMPLES=/tmp/h200-hostile-va \
      bash benchmarks/h200_grade_gpu.sh hostile > "$LOGS/hostile-va.txt" 2>&1 ;;
esac 2>&1 | tee "$LOGS/steps.txt"
tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$LOGS"
exit 0
