#!/usr/bin/env bash
# Issue #12's committed run (written 2026-12-05, when no device was lent): three device calls, each under the
# 600 s limit, every output under $OUT (packed; at most 8 files). Run from the repository root, as root (the cage).
#   bash benchmarks/device_session12.sh reference  # grade --gpu of every reference Triton kernel (part03 and the
#                                                  # paged decode kernel) behind the default filling gate; then
#                                                  # infralab bench of vector_add, rmsnorm, softmax (caged vs bench)
#   bash benchmarks/device_session12.sh hostile    # grade --gpu of every sample of fixtures/submissions_gpu
#   bash benchmarks/device_session12.sh checks     # the bench and pytest -m gpu routes of the samples, and the
#                                                  # reference kernels with the timed-call checks on and off
#                                                  # (benchmarks/h200_checks.sh)
# REF_S / HOSTILE_S (default 400 / 500): seconds after the call's start by which the last grade starts.
# Then, here: `infralab leaderboard <unpacked reference + hostile folders> --out benchmarks/results/<run>/leaderboard`.
# The records hold `workload.memory` (judge_peak_bytes, cage_peak_bytes): softmax large ran out of memory on the
# H100 (2026-12-05) before batches that do not fit were retried at half the budget; read them first.
source benchmarks/h200_common.sh
case "${1:-reference}" in
  reference)
    stamp "grade --gpu: the reference kernels"
    OUT=$OUT TIMECAP=3 LIMIT=200 DEADLINE=$((T0 + ${REF_S:-400})) \
      bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference.txt" 2>&1
    stamp "infralab bench: vector_add rmsnorm softmax"
    OUT=$OUT TIMECAP=2 ONLY="vector_add rmsnorm softmax" bash benchmarks/h200_grade_gpu.sh bench > "$LOGS/bench.txt" 2>&1 ;;
  hostile)
    stamp "grade --gpu: every hostile sample"
    OUT=$OUT TIMECAP=2 LIMIT=120 DEADLINE=$((T0 + ${HOSTILE_S:-500})) bash benchmarks/h200_grade_gpu.sh hostile \
      > "$LOGS/hostile.txt" 2>&1 ;;
  checks)
    stamp "bench and pytest -m gpu routes"
    OUT=$OUT NAMES=0 bash benchmarks/h200_checks.sh > "$LOGS/checks.txt" 2>&1 ;;
esac 2>&1 | tee "$LOGS/steps.txt"
mv "$OUT"/*-summary.txt "$LOGS/" 2>/dev/null
pack_logs
exit 0
