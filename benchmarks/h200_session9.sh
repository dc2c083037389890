#!/usr/bin/env bash
# Device calls of the ninth session (issues #12 and #16), each under the 600 s limit; every output under $OUT
# (packed). Run from the repository root, as root (the cage).
#   bash benchmarks/h200_session9.sh one   # grade --gpu: vector_add (fresh inputs per call, graph replays for
#                                          # the small shape), the W4A16 sweep (K tiles of several groups),
#                                          # grade --gpu of decode and paged decode (TF32 off), hostile vector_add
#   bash benchmarks/h200_session9.sh two   # after call one: every timed call checked, graphs capped (2,048 calls,
#                                          # halved when a replay blocks): the graph-behind-the-gate probe, grade --gpu
#                                          # of vector_add, the memo and wrong-when-timed samples, rmsnorm, softmax, flash
#   bash benchmarks/h200_session9.sh four  # after call three (distinct graphs blocked even at 32 calls): graphs
#                                          # launched once when captured; the probe, grade --gpu of vector_add
#   bash benchmarks/h200_session9.sh three # after call two: graphs of 1,024 calls, several a batch, the caches
#                                          # emptied before sizing: grade --gpu of vector_add and matmul (a longer
#                                          # limit); bench: vector_add
source benchmarks/h200_common.sh
case "${1:-one}" in
  one)
    stamp "grade --gpu: vector_add"
    OUT=$OUT TIMECAP=3 LIMIT=150 ONLY="vector_add" bash benchmarks/h200_grade_gpu.sh reference \
      > "$LOGS/reference-va.txt" 2>&1
    stamp "W4A16 sweep"
    timeout 200 python3 benchmarks/tune_w4a16.py --out "$OUT/h200-w4a16-sweep.json" > "$LOGS/w4a16-sweep.txt" 2>&1
    echo "sweep rc=$?" >> "$LOGS/w4a16-sweep.txt"
    stamp "grade --gpu: paged decode, decode"
    OUT=$OUT TIMECAP=3 LIMIT=120 DEADLINE=$((T0 + 430)) PAGED_ONLY=1 ONLY="decode_attention" \
      bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference-decode.txt" 2>&1
    stamp "hostile vector_add samples"
    hostile_vector_add "${HOSTILE_UNTIL:-500}" 3 60 ;;
  two)
    stamp "probe: CUDA graphs behind the gate"
    timeout 90 python3 benchmarks/probe_graph_gate.py > "$LOGS/probe-graph.txt" 2>&1
    stamp "grade --gpu: vector_add, then the memo and wrong-when-timed samples"
    OUT=$OUT TIMECAP=3 LIMIT=150 ONLY="vector_add" bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference-va.txt" 2>&1
    rm -rf /tmp/h200-hostile-va && mkdir -p /tmp/h200-hostile-va
    cp -r fixtures/submissions_gpu/memo_vector_add fixtures/submissions_gpu/wrong_when_timed_vector_add /tmp/h200-hostile-va/
    OUT=$OUT TIMECAP=3 LIMIT=90 SAMPLES=/tmp/h200-hostile-va bash benchmarks/h200_grade_gpu.sh hostile \
      > "$LOGS/hostile-va.txt" 2>&1
    stamp "grade --gpu: rmsnorm, softmax, flash_attention"
    OUT=$OUT TIMECAP=3 LIMIT=200 DEADLINE=$((T0 + 400)) ONLY="rmsnorm softmax flash_attention" \
      bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference.txt" 2>&1 ;;
  three)
    stamp "grade --gpu: vector_add, matmul"
    OUT=$OUT TIMECAP=3 LIMIT=150 ONLY="vector_add" bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference-va.txt" 2>&1
    OUT=$OUT TIMECAP=3 LIMIT=300 ONLY="matmul" bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference.txt" 2>&1
    stamp "bench: vector_add"
    OUT=$OUT TIMECAP=3 ONLY="vector_add" timeout 100 bash benchmarks/h200_grade_gpu.sh bench > "$LOGS/bench.txt" 2>&1 ;;
  four)
    stamp "probe: CUDA graphs behind the gate"
    timeout 60 python3 benchmarks/probe_graph_gate.py > "$LOGS/probe-graph.txt" 2>&1
    stamp "grade --gpu: vector_add"
    OUT=$OUT TIMECAP=3 LIMIT=120 ONLY="vector_add" bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference-va.txt" 2>&1 ;;
esac 2>&1 | tee "$LOGS/steps.txt"
pack_logs
exit 0
