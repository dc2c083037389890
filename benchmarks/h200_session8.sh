#!/usr/bin/env bash
# Device calls of the eighth session (issue #12): grade --gpu with the baseline armed too, and the cage's
# account of each armed release in the record (judge_clock.release_ms). Each call under the 600 s limit;
# every output under $OUT (packed). Run from the repository root, as root (the cage).
#   bash benchmarks/h200_session8.sh ref    # grade --gpu of every reference kernel (paged decode first)
#   bash benchmarks/h200_session8.sh rest   # bench of the same kernels, then the hostile vector_add samples
#                                           # (their large shape hit the wire limit before output sampling)
#   bash benchmarks/h200_session8.sh last   # after the judge polls for the go's answer: grade --gpu of
#                                           # vector_add, matmul, flash_attention; their bench; hostile vector_add
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
case "${1:-ref}" in
  ref)
    stamp "grade --gpu: reference, one exercise at a time"
    OUT=$OUT TIMECAP=3 LIMIT=150 DEADLINE=$((T0 + ${REF_UNTIL:-420})) PAGED_ONLY=1 \
      ONLY="${ONLY:-decode_attention vector_add rmsnorm softmax matmul flash_attention}" \
      bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference.txt" 2>&1 ;;
  rest)
    stamp "bench of the reference kernels (caged vs bench)"
    OUT=$OUT TIMECAP=3 ONLY= bash benchmarks/h200_grade_gpu.sh bench > "$LOGS/bench.txt" 2>&1
    stamp "hostile vector_add samples (large shape)"
    rm -rf /tmp/h200-hostile-va && mkdir -p /tmp/h200-hostile-va
    for s in counting side_stream timer_patch wrong_when_timed; do
      cp -r fixtures/submissions_gpu/${s}_vector_add /tmp/h200-hostile-va/
    done
    OUT=$OUT TIMECAP=3 LIMIT=100 DEADLINE=$((T0 + ${HOSTILE_UNTIL:-480})) SAMPLES=/tmp/h200-hostile-va \
      bash benchmarks/h200_grade_gpu.sh hostile > "$LOGS/hostile-va.txt" 2>&1 ;;
  last)
    stamp "grade --gpu: vector_add, matmul, flash_attention"
    OUT=$OUT TIMECAP=3 LIMIT=170 DEADLINE=$((T0 + 300)) ONLY="vector_add matmul flash_attention" \
      bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference.txt" 2>&1
    stamp "bench: vector_add, matmul, flash_attention"
    OUT=$OUT TIMECAP=3 ONLY="vector_add matmul flash_attention" bash benchmarks/h200_grade_gpu.sh bench \
      > "$LOGS/bench.txt" 2>&1
    stamp "hostile vector_add samples (large shape)"
    rm -rf /tmp/h200-hostile-va && mkdir -p /tmp/h200-hostile-va
    for s in counting side_stream timer_patch wrong_when_timed; do
      cp -r fixtures/submissions_gpu/${s}_vector_add /tmp/h200-hostile-va/
    done
    OUT=$OUT TIMECAP=2 LIMIT=60 DEADLINE=$((T0 + ${HOSTILE_UNTIL:-470})) SAMPLES=/tmp/h200-hostile-va \
      bash benchmarks/h200_grade_gpu.sh hostile > "$LOGS/hostile-va.txt" 2>&1 ;;
esac 2>&1 | tee "$LOGS/steps.txt"
stamp done >> "$LOGS/steps.txt"
tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$LOGS"
exit 0
