#!/usr/bin/env bash
# Device calls of the seventh session (issues #12 and #16), each under the 600 s limit; every output under
# $OUT (packed: the device returns at most 8 files). Run from the repository root, as root (the cage).
#   bash benchmarks/h200_session7.sh a   # armed-batch probe, W4A16 bench (tuned constants), grade --gpu reference
#   bash benchmarks/h200_session7.sh b   # the rest of the reference (ONLY=...), bench of the same kernels, and the
#                                        # hostile vector_add samples again (their large shape hit the wire limit)
source benchmarks/h200_common.sh
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
    hostile_vector_add "${HOSTILE_UNTIL:-520}" 3 100 ;;
esac 2>&1 | tee "$LOGS/steps.txt"
pack_logs
exit 0
