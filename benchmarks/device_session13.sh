#!/usr/bin/env bash
# Issue #12's run of 2026-12-06 (after bench's short calls became graph replays, f9e4dd0), and #16's W4A16
# sweep: four device calls, each under the 600 s limit, chained on one warm machine; every output under $OUT
# (packed; at most 8 files). Run from the repository root, as root (the cage).
#   bash benchmarks/device_session13.sh checks  # bench and pytest -m gpu routes of every hostile sample; every
#                                               # reference kernel through bench with the timed-call checks on
#                                               # and off (benchmarks/h200_checks.sh, --time-cap 1)
#   bash benchmarks/device_session13.sh ref1    # grade --gpu: vector_add rmsnorm softmax decode_attention and
#                                               # the paged decode kernel; bench of the paged kernel; then
#                                               # flash_attention, its limit what is left of 570 s
#   bash benchmarks/device_session13.sh ref2    # grade --gpu: matmul; the hostile samples added since the last
#                                               # H200 run (busy_thread, enqueue_side_stream, raw_launch_side_stream)
#   bash benchmarks/device_session13.sh w4a16   # #16: infralab bench of w4a16, then benchmarks/h200_w4a16_fast.sh
#   bash benchmarks/device_session13.sh pytest  # pytest -m gpu (graders/part03_kernels/test_perf.py) of every hostile
#                                               # sample on its exercise, --perf-time-cap 1, 60 s each, until 560 s
#   bash benchmarks/device_session13.sh core    # one call when the device is scarce: benchmarks/probe_short_clock.py
#                                               # (<= 120 s); grade --gpu of vector_add,
#                                               # decode_attention and the paged kernel (started by 190 s); bench of
#                                               # vector_add with eager batches and with --graph-batches; every
#                                               # reference kernel through bench, checks on and off (--time-cap 1),
#                                               # until END - 100 s; the hostile samples through the suite until END
#                                               # (default 575). Ran once, in an older order, on 2026-12-06
#                                               # (benchmarks/results/h100-session13)
# Then, here: `infralab leaderboard <unpacked ref1 + ref2 folders> --out benchmarks/results/<run>/leaderboard`.
source benchmarks/h200_common.sh
left() { echo $(( T0 + $1 - $(date +%s) )); }  # seconds until T0 + $1
case "${1:-checks}" in
  checks)
    stamp "bench and pytest -m gpu routes, checks on/off"
    OUT=$OUT NAMES=0 CAP=1 HOSTILE_LIMIT=200 bash benchmarks/h200_checks.sh > "$LOGS/checks.txt" 2>&1 ;;
  ref1)
    stamp "grade --gpu: vector_add rmsnorm softmax decode_attention paged_decode_kernel"
    OUT=$OUT TIMECAP=3 LIMIT=150 DEADLINE=$((T0 + 260)) ONLY="vector_add rmsnorm softmax decode_attention" PAGED_ONLY=1 \
      bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference-1.txt" 2>&1
    stamp "bench: paged_decode_kernel"
    OUT=$OUT TIMECAP=2 ONLY=part04_serving.paged_decode_kernel bash benchmarks/h200_grade_gpu.sh bench \
      > "$LOGS/bench-paged.txt" 2>&1
    stamp "grade --gpu: flash_attention (limit $(left 570) s)"
    OUT=$OUT TIMECAP=3 LIMIT=$(left 570) ONLY=flash_attention bash benchmarks/h200_grade_gpu.sh reference \
      > "$LOGS/reference-2.txt" 2>&1 ;;
  ref2)
    stamp "grade --gpu: matmul"
    OUT=$OUT TIMECAP=3 LIMIT=330 ONLY=matmul bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference-3.txt" 2>&1
    stamp "grade --gpu: the newer hostile samples"
    rm -rf /tmp/h200-newer && mkdir -p /tmp/h200-newer
    for s in busy_thread enqueue_side_stream raw_launch_side_stream; do
      cp -r "fixtures/submissions_gpu/${s}_vector_add" /tmp/h200-newer/
    done
    OUT=$OUT TIMECAP=2 LIMIT=90 DEADLINE=$((T0 + 470)) SAMPLES=/tmp/h200-newer \
      bash benchmarks/h200_grade_gpu.sh hostile > "$LOGS/hostile.txt" 2>&1 ;;
  core)
    stamp "probe: the small vector_add's clocks (benchmarks/probe_short_clock.py)"
    timeout 120 python3 benchmarks/probe_short_clock.py > "$LOGS/probe-short-clock.txt" 2>&1
    stamp "grade --gpu: vector_add decode_attention paged_decode_kernel"
    OUT=$OUT TIMECAP=3 LIMIT=100 DEADLINE=$((T0 + 190)) ONLY="vector_add decode_attention" PAGED_ONLY=1 \
      bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference.txt" 2>&1
    stamp "bench: vector_add, eager batches and graph replays (--graph-batches)"
    for g in "" --graph-batches; do
      timeout 90 python3 benchmarks/h200_suite.py --out "$OUT" --candidates solutions --exercise vector_add $g \
        --tag "vector-add${g:+-graphs}" --time-cap 1 > "$LOGS/vector-add${g:+-graphs}.txt" 2>&1
    done
    stamp "bench: the reference kernels, checks on and off (limit $(left $(( ${END:-575} - 100 ))) s)"
    timeout "$(left $(( ${END:-575} - 100 )))" python3 benchmarks/h200_suite.py --out "$OUT" --candidates solutions \
      --checks both --tag checks-solutions --time-cap 1 > "$LOGS/solutions.txt" 2>&1
    stamp "the hostile samples through the suite (limit $(left ${END:-575}) s)"
    [ "$(left ${END:-575})" -gt 30 ] && timeout "$(left ${END:-575})" python3 benchmarks/h200_suite.py --out "$OUT" \
      $(hostile_samples | sed 's/^/--submission /') --tag checks-hostile --time-cap 1 \
      > "$LOGS/hostile-suite.txt" 2>&1 ;;
  pytest)
    stamp "pytest -m gpu: every hostile sample on its exercise (until 560 s)"
    for d in $(hostile_samples); do pytest_sample "$d" 60 560; done > "$LOGS/pytest.txt" 2>&1 ;;
  w4a16)
    stamp "W4A16 through infralab bench (autotuned outside the gate's byte comparison since 2026-12-06)"
    timeout 120 python3 -m infralab.cli bench part05_quantization.w4a16 --target solutions --time-cap 2 \
      --record "$OUT/h200-w4a16-bench.json" > "$LOGS/w4a16-bench.txt" 2>&1
    stamp "W4A16 sweep and GPU tests"
    OUT=$OUT bash benchmarks/h200_w4a16_fast.sh > "$LOGS/w4a16.txt" 2>&1 ;;
esac 2>&1 | tee "$LOGS/steps.txt"
mv "$OUT"/*-summary.txt "$LOGS/" 2>/dev/null
pack_logs
exit 0
