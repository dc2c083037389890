#!/usr/bin/env bash
# Issue #12's remaining routes and #16's W4A16 bench, written 2026-12-07 (first run on an H100 that day, fifth
# session: benchmarks/results/h100-session15/):
# three device calls (samples, refs, matmul) chained on one warm machine, or `one` and `matmul`, each under the
# 600 s limit, every output under $OUT (pack_logs keeps it to at most 8 files). Run from the repository root, as root:
#   bash benchmarks/device_session14.sh one     # one call for a scarce device: the hostile samples through
#                                               # pytest -m gpu four at a time, then the refs phase's steps;
#                                               # END (default 575): the seconds the call may take;
#                                               # PYTEST_S (default END - 360): the samples' deadline; FLASH= (empty)
#                                               # leaves flash_attention out, FLASH_S=N keeps N s for its grade
#   bash benchmarks/device_session14.sh samples # its first step alone (PYTEST_S, default 215)
#   bash benchmarks/device_session14.sh refs    # infralab bench of decode_attention, the paged decode kernel and
#                                               # flash_attention (--time-cap 2), then grade --gpu of the same
#                                               # three (caged vs bench within 5%), flash last, until END
#                                               # (default 575; FLASH_S default 240)
#   bash benchmarks/device_session14.sh matmul  # grade --gpu of matmul and its bench; grade --gpu of timer_patch
#                                               # and wrong_when_timed; infralab bench of w4a16 (#16); the decode
#                                               # footprint probe (benchmarks/probe_footprint.py); until END
#                                               # (default 570)
#   bash benchmarks/device_session14.sh first   # `tests` until END - 170 (END default 560), then busy_thread
#                                               # through pytest -m gpu (the profiled baseline batch's check)
#   bash benchmarks/device_session14.sh tests   # every GPU-marked test of graders/ and tests/ on the reference
#                                               # solutions (--perf-time-cap 1; about 190 s on an H100), the
#                                               # whole output in logs.tgz: gpu-tests.txt. Run it first: it is
#                                               # what found the autotuning and MLA faults of 2026-12-07
# Then, here: unpack the .tgz records into one folder and `infralab leaderboard <folder> --out <run>/leaderboard`.
source benchmarks/h200_common.sh
left() { echo $(( T0 + $1 - $(date +%s) )); }  # seconds until T0 + $1
# Every hostile sample through pytest -m gpu, four at a time, until T0 + PYTEST_S.
pytest_samples() {
  stamp "pytest -m gpu: every hostile sample, four at a time"
  hostile_samples | xargs -P 4 -I{} bash -c \
    'pytest_sample {} 90 ${PYTEST_S:-$(( ${END:-575} - 360 ))} > "$0/pytest-$(basename {}).txt" 2>&1' "$LOGS"
  cat "$LOGS"/pytest-*.txt > "$LOGS/pytest.txt" && rm "$LOGS"/pytest-*.txt
  grep -E "^== |FAILED|passed|failed" "$LOGS/pytest.txt" | cut -c1-300
}
# bench of decode_attention, the paged decode kernel and flash_attention (FLASH= leaves flash out), then their
# grades: decode and paged started by END - FLASH_S, flash with what is left of END.
refs_steps() {
  stamp "bench: decode_attention, paged_decode_kernel ${FLASH-flash_attention}"
  OUT=$OUT TIMECAP=2 ONLY="decode_attention part04_serving.paged_decode_kernel ${FLASH-flash_attention}" \
    bash benchmarks/h200_grade_gpu.sh bench > "$LOGS/bench.txt" 2>&1
  stamp "grade --gpu: decode_attention, paged_decode_kernel"
  OUT=$OUT TIMECAP=2 LIMIT=120 DEADLINE=$((T0 + ${END:-575} - ${FLASH_S:-240})) ONLY="decode_attention" PAGED_ONLY=1 \
    bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference-1.txt" 2>&1
  mv "$OUT/h200-grade-gpu-reference.tgz" "$OUT/grade-decode-paged.tgz" 2>/dev/null
  stamp "grade --gpu: flash_attention (limit $(left ${END:-575}) s)"
  [ -n "${FLASH-flash_attention}" ] && [ "$(left ${END:-575})" -gt 60 ] && OUT=$OUT TIMECAP=2 \
    LIMIT=$(left ${END:-575}) ONLY=flash_attention bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference-2.txt" 2>&1
  mv "$OUT/h200-grade-gpu-reference.tgz" "$OUT/grade-flash.tgz" 2>/dev/null
}
case "${1:-refs}" in
  samples)  # the first step of `one` alone (PYTEST_S, default 215)
    PYTEST_S=${PYTEST_S:-215} pytest_samples ;;
  one)  # when the device is scarce: every hostile sample through pytest -m gpu, four at a time (their verdicts
        # are the checks', not timings), until END - 360 s; then the refs steps (FLASH_S 175 unless set)
    pytest_samples
    FLASH_S=${FLASH_S:-175} refs_steps ;;
  refs)
    refs_steps ;;
  first)  # tests (until END - 170), then busy_thread through pytest -m gpu (both shapes, at most 150 s): the
          # check of the profiled baseline batch, added 2026-12-07 after busy_thread's small shape passed in-process
    stamp "pytest -m gpu: graders and tests on the reference solutions"
    timeout $(left $(( ${END:-560} - 170 ))) python3 -m pytest $PLUGIN -m gpu -q -p no:cacheprovider graders tests \
      --target solutions --perf-time-cap 1 --timeout 200 -rfE > "$LOGS/gpu-tests.txt" 2>&1
    grep -E "^E   |^FAILED|^ERROR|passed|failed" "$LOGS/gpu-tests.txt" | cut -c1-400 | tail -60
    stamp "pytest -m gpu: busy_thread"
    pytest_sample fixtures/submissions_gpu/busy_thread_vector_add/ 150 ${END:-560} ;;
  tests)
    stamp "pytest -m gpu: graders and tests on the reference solutions"
    timeout $(left ${END:-560}) python3 -m pytest $PLUGIN -m gpu -q -p no:cacheprovider graders tests \
      --target solutions --perf-time-cap 1 --timeout 200 -rfE > "$LOGS/gpu-tests.txt" 2>&1
    grep -E "^E   |^FAILED|^ERROR|passed|failed" "$LOGS/gpu-tests.txt" | cut -c1-400 | tail -60 ;;
  matmul)
    stamp "grade --gpu: timer_patch, wrong_when_timed"
    rm -rf /tmp/h200-two && mkdir -p /tmp/h200-two
    cp -r fixtures/submissions_gpu/timer_patch_vector_add fixtures/submissions_gpu/wrong_when_timed_vector_add /tmp/h200-two/
    OUT=$OUT TIMECAP=2 LIMIT=70 SAMPLES=/tmp/h200-two bash benchmarks/h200_grade_gpu.sh hostile > "$LOGS/hostile.txt" 2>&1
    stamp "bench: matmul"
    OUT=$OUT TIMECAP=2 ONLY=matmul bash benchmarks/h200_grade_gpu.sh bench > "$LOGS/bench.txt" 2>&1
    stamp "W4A16 through infralab bench"
    timeout 120 python3 -m infralab.cli bench part05_quantization.w4a16 --target solutions --time-cap 2 \
      --record "$OUT/h200-w4a16-bench.json" > "$LOGS/w4a16-bench.txt" 2>&1
    stamp "probe: footprint and rewrite of decode_attention's sets (the caged-vs-bench gap)"
    timeout 100 python3 benchmarks/probe_footprint.py --workload decode_attention > "$LOGS/probe-footprint.txt" 2>&1
    stamp "grade --gpu: matmul (limit $(left ${END:-570}) s)"
    OUT=$OUT TIMECAP=2 LIMIT=$(left ${END:-570}) ONLY=matmul \
      bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference.txt" 2>&1 ;;
esac 2>&1 | tee "$LOGS/steps.txt"
pack_logs
exit 0
