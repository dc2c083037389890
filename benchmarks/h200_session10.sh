#!/usr/bin/env bash
# Device calls of the tenth session (issue #12), each under the 600 s limit; every output under $OUT (packed).
# Written when the one-block gate was the default: since 2026-12-05 the filling gate is, so GATE_ONE below
# (--one-block-gate) gives the runs without a flag and the runs marked -fill need none.
# Run from the repository root, as root (the cage).
#   bash benchmarks/h200_session10.sh one    # probes: the filling gate (fills? the enqueue window with
#                                           # kernel[grid] and a raw _run launch on a side stream, its cost on
#                                           # armed vector_add batches) and the footprint question of #12(a);
#                                           # grade --gpu of the three newest vector_add samples, gate as it is
#                                           # (ONE_DEADLINE: seconds after the start by which the last one starts)
#   bash benchmarks/h200_session10.sh two    # the same three samples behind the filling gate; grade --gpu of the
#                                           # reference vector_add (both shapes) with and without it (the 2% rule)
#   bash benchmarks/h200_session10.sh three  # if two showed the filling gate sound and free: every hostile
#                                           # vector_add sample and the reference rmsnorm/softmax behind it
source benchmarks/h200_common.sh
GATE_ONE=--one-block-gate
newest_samples() {  # $1: tag, $2: grade flags
  rm -rf /tmp/h200-hostile-new && mkdir -p /tmp/h200-hostile-new
  for s in enqueue_side_stream raw_launch_side_stream busy_thread; do
    cp -r fixtures/submissions_gpu/${s}_vector_add /tmp/h200-hostile-new/
  done
  OUT=$OUT TIMECAP=3 LIMIT=90 TAG=$1 GRADE_FLAGS=$2 DEADLINE=$((T0 + ${3:-540})) SAMPLES=/tmp/h200-hostile-new \
    bash benchmarks/h200_grade_gpu.sh hostile > "$LOGS/hostile-new$1.txt" 2>&1
}
case "${1:-one}" in
  one)
    stamp "probe: the filling gate"
    timeout 120 python3 benchmarks/probe_filling_gate.py > "$LOGS/probe-filling-gate.txt" 2>&1
    stamp "probe: footprint"
    timeout 120 python3 benchmarks/probe_footprint.py > "$LOGS/probe-footprint.txt" 2>&1
    stamp "grade --gpu: the newest hostile samples, one-block gate"
    newest_samples "" "$GATE_ONE" "${ONE_DEADLINE:-560}" ;;
  two)
    stamp "grade --gpu: the newest hostile samples, filling gate"
    newest_samples -fill "" 250
    stamp "grade --gpu: reference vector_add, one-block then filling gate"
    OUT=$OUT TIMECAP=3 LIMIT=150 ONLY="vector_add" GRADE_FLAGS=$GATE_ONE bash benchmarks/h200_grade_gpu.sh reference \
      > "$LOGS/reference-va.txt" 2>&1
    OUT=$OUT TIMECAP=3 LIMIT=150 ONLY="vector_add" TAG=-fill GRADE_FLAGS= \
      bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference-va-fill.txt" 2>&1 ;;
  three)
    stamp "grade --gpu: every hostile vector_add sample, filling gate"
    rm -rf /tmp/h200-hostile-va && mkdir -p /tmp/h200-hostile-va
    for s in counting side_stream timer_patch wrong_when_timed memo; do
      cp -r fixtures/submissions_gpu/${s}_vector_add /tmp/h200-hostile-va/
    done
    OUT=$OUT TIMECAP=3 LIMIT=60 TAG=-fill GRADE_FLAGS= DEADLINE=$((T0 + 330)) \
      SAMPLES=/tmp/h200-hostile-va bash benchmarks/h200_grade_gpu.sh hostile > "$LOGS/hostile-va-fill.txt" 2>&1
    stamp "grade --gpu: reference rmsnorm, softmax, filling gate"
    OUT=$OUT TIMECAP=3 LIMIT=120 ONLY="rmsnorm softmax" TAG=-fill GRADE_FLAGS= \
      DEADLINE=$((T0 + 470)) bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference-fill.txt" 2>&1 ;;
esac 2>&1 | tee "$LOGS/steps.txt"
pack_logs
exit 0
