#!/usr/bin/env bash
# Device calls of the eighth session (issue #12): grade --gpu with the baseline armed too, and the cage's
# account of each armed release in the record (judge_clock.release_ms). Each call under the 600 s limit;
# every output under $OUT (packed). Run from the repository root, as root (the cage).
#   bash benchmarks/h200_session8.sh ref    # grade --gpu of every reference kernel (paged decode first)
#   bash benchmarks/h200_session8.sh rest   # bench of the same kernels, then the hostile vector_add samples
#                                           # (their large shape hit the wire limit before output sampling)
#   bash benchmarks/h200_session8.sh last   # after the judge polls for the go's answer: grade --gpu of
#                                           # vector_add, matmul, flash_attention; their bench; hostile vector_add
source benchmarks/h200_common.sh
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
    hostile_vector_add "${HOSTILE_UNTIL:-480}" 3 100 ;;
  last)
    stamp "grade --gpu: vector_add, matmul, flash_attention"
    OUT=$OUT TIMECAP=3 LIMIT=170 DEADLINE=$((T0 + 300)) ONLY="vector_add matmul flash_attention" \
      bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference.txt" 2>&1
    stamp "bench: vector_add, matmul, flash_attention"
    OUT=$OUT TIMECAP=3 ONLY="vector_add matmul flash_attention" bash benchmarks/h200_grade_gpu.sh bench \
      > "$LOGS/bench.txt" 2>&1
    stamp "hostile vector_add samples (large shape)"
    hostile_vector_add "${HOSTILE_UNTIL:-470}" 2 60 ;;
esac 2>&1 | tee "$LOGS/steps.txt"
pack_logs
exit 0
