#!/usr/bin/env bash
# Issue #12 item 2 on the H200: `infralab grade --gpu` (the caged route, the judge's clock).
# Three device calls, each under 10 minutes; run from the repository root, as root (the cage's namespaces):
#   bash benchmarks/h200_grade_gpu.sh reference   # the reference solutions, one grade per exercise (part03 + paged decode)
#   bash benchmarks/h200_grade_gpu.sh hostile     # every sample of fixtures/submissions_gpu, on the exercises it submits
#   bash benchmarks/h200_grade_gpu.sh bench       # infralab bench on the same solutions (caged vs bench: within 5%)
#   bash benchmarks/h200_grade_gpu.sh diagnose    # first: one caged shape under pytest-timeout (stacks if it hangs)
# DEADLINE (epoch seconds; reference, hostile): grades not started by then are skipped, so the outputs are packed in time.
# SAMPLES (hostile; default fixtures/submissions_gpu): the folder of samples to grade.
# PAGED_ONLY=1 with ONLY: the reference phase grades the paged decode kernel too.
# TIMECAP (default 20): seconds of sampling per shape (grade --time-cap, bench --time-cap).
# Outputs: the grade folders are written under $WORK (default /tmp/h200-work) and packed into
# $OUT/h200-grade-gpu-<phase>.tgz (the device returns at most 8 files); bench writes $OUT/h200-grade-gpu-bench.json.
# Then `infralab leaderboard <unpacked folder> --out DIR` ranks them. LIMIT (default 580) is each grade's timeout.
# GRADE_FLAGS (reference, hostile): more options of grade, e.g. --one-block-gate; TAG: a suffix of the phase's
# output names (two runs of one phase in a call, e.g. TAG=-oneblock).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/h200-out}
WORK=${WORK:-/tmp/h200-work}
LIMIT=${LIMIT:-580}
PHASE=${1:-reference}
GRADE_FLAGS=${GRADE_FLAGS:-}
TAG=${TAG:-}
CLASS=/tmp/h200-class-$PHASE
TIMECAP=${TIMECAP:-20}
ONLY=${ONLY:-}  # e.g. ONLY="vector_add softmax": grade and bench only these part03 exercises
EXERCISES="--exercise part03_kernels.vector_add --exercise part03_kernels.rmsnorm --exercise part03_kernels.softmax \
  --exercise part03_kernels.flash_attention --exercise part03_kernels.decode_attention"
MATMUL="--exercise part03_kernels.matmul"  # last: its grade is the longest (145-251 s on the H200 on 2026-12-04, docs/performance.md)
PAGED="--exercise part04_serving.paged_decode_kernel"  # Part 04's Triton kernel: the reference phase only
if [ -n "$ONLY${PAGED_ONLY:-}" ]; then
  EXERCISES=""; MATMUL=""; [ -z "${PAGED_ONLY:-}" ] && PAGED=""
  for e in $ONLY; do EXERCISES="$EXERCISES --exercise part03_kernels.$e"; done
fi
rm -rf "$CLASS"
mkdir -p "$CLASS" "$OUT" "$WORK"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit,pstate --format=csv
python3 -c "import numpy, torch, triton; print('numpy', numpy.__version__, 'torch', torch.__version__, 'triton', triton.__version__)"
case "$PHASE" in
  diagnose)  # where a caged challenge spends its time: one shape, the judge's stacks dumped if it hangs
    # (pytest-timeout prints every thread's stack at the limit; -s shows the judge's progress lines)
    PLUGIN=$(python3 -c 'from infralab.runner import plugin_args; print(*plugin_args())')  # -p unless installed
    timeout "$LIMIT" python3 -m pytest $PLUGIN graders/part03_kernels/test_perf.py --isolated --gpu \
      --target solutions -k "vector_add-small" --perf-time-cap "$TIMECAP" --timeout 150 -s -q -p no:cacheprovider \
      --durations 5 2>&1 | tail -120 | cut -c1-300 ;;
  reference)  # one grade per exercise (a record as soon as each is done; DEADLINE skips the rest)
    mkdir -p "$CLASS/reference" && cp -r solutions/part03_kernels solutions/part04_serving "$CLASS/reference/"
    for ex in $EXERCISES $PAGED $MATMUL; do
      [ "$ex" = --exercise ] && continue
      if [ -n "${DEADLINE:-}" ] && [ "$(date +%s)" -ge "$DEADLINE" ]; then echo "== $ex: not run (DEADLINE)"; continue; fi
      t0=$(date +%s)
      timeout "$LIMIT" python3 -m infralab.cli grade "$CLASS" --exercise "$ex" --gpu --time-cap "$TIMECAP" --jobs 1 $GRADE_FLAGS \
        --out "$WORK/h200-grade-gpu-reference$TAG/$ex" 2>&1 | tail -3 | cut -c1-300
      echo "== $ex: $(( $(date +%s) - t0 )) s"
    done ;;
  hostile)  # each sample graded on the exercises it submits (the stubs of the others would only fail)
    for d in "${SAMPLES:-fixtures/submissions_gpu}"/*/; do
      name=$(basename "$d")
      if [ -n "${DEADLINE:-}" ] && [ "$(date +%s)" -ge "$DEADLINE" ]; then echo "== $name: not run (DEADLINE)"; continue; fi
      rm -rf "$CLASS" && mkdir -p "$CLASS" && cp -r "$d" "$CLASS/"
      mine=$(cd "$d" && find . -name '*.py' | sed 's|^\./||; s|/|.|; s|\.py$||' | sed 's/^/--exercise /' | tr '\n' ' ')
      echo "== $(date +%T) $name: $mine"
      timeout "$LIMIT" python3 -m infralab.cli grade "$CLASS" $mine --gpu --time-cap "$TIMECAP" --jobs 1 $GRADE_FLAGS \
        --out "$WORK/h200-grade-gpu-hostile$TAG/$name" 2>&1 | tail -3 | cut -c1-300
    done
    ;;
  bench)
    rm -f /tmp/h200-bench-*.json  # an earlier call's records on the same warm machine
    for ex in ${ONLY:-vector_add rmsnorm softmax matmul flash_attention decode_attention part04_serving.paged_decode_kernel}; do
      timeout 90 python3 -m infralab.cli bench "$ex" --target solutions --time-cap "$TIMECAP" --record "/tmp/h200-bench-$ex.json" 2>&1 \
        | tail -4 | cut -c1-300
    done
    python3 - "$OUT/h200-grade-gpu-bench.json" /tmp/h200-bench-*.json <<'PY'
import json, sys
json.dump([json.load(open(p)) for p in sys.argv[2:]], open(sys.argv[1], "w"), indent=1)
PY
    ;;
esac
[ -d "$WORK/h200-grade-gpu-$PHASE$TAG" ] && python3 benchmarks/perf_summary.py "$WORK/h200-grade-gpu-$PHASE$TAG" | tee "$OUT/h200-grade-gpu-$PHASE$TAG-summary.txt"
[ "$PHASE" = bench ] && python3 benchmarks/perf_summary.py "$OUT/h200-grade-gpu-bench.json" | tee "$OUT/h200-grade-gpu-bench-summary.txt"
[ -d "$WORK/h200-grade-gpu-$PHASE$TAG" ] && tar czf "$OUT/h200-grade-gpu-$PHASE$TAG.tgz" -C "$WORK" "h200-grade-gpu-$PHASE$TAG"
exit 0
