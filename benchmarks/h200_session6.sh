#!/usr/bin/env bash
# One device call of the sixth session (issues #12 and #14): each step under its own timeout, every
# output under $OUT (packed: the device returns at most 8 files). Run from the repository root, as root.
#   bash benchmarks/h200_session6.sh first    # #12 diagnosis (where grade --gpu spends its time), #14 figures
#   bash benchmarks/h200_session6.sh final    # #16 W4A16 sweep + bench, then #12 grade --gpu: hostile samples, reference
#     (HOSTILE_UNTIL: seconds after the start by which the last hostile grade starts; REFERENCE=0 skips the reference)
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/h200-out}
LOGS=$OUT/logs
mkdir -p "$LOGS"
PLUGIN=$(python3 -c 'from infralab.runner import plugin_args; print(*plugin_args())')
stamp() { echo "== $(date +%T) $*"; }
{
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit,pstate --format=csv
python3 -c "import numpy, torch, triton, sys; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'torch', torch.__version__, 'triton', triton.__version__)"
} > "$LOGS/environment.txt" 2>&1
case "${1:-first}" in
  first)
    stamp "diag A: vector_add hidden tests (not perf) in the cage on the GPU"
    timeout 100 python3 -m pytest $PLUGIN graders/part03_kernels/test_vector_add.py --isolated --gpu --target solutions \
      -q -p no:cacheprovider --durations 12 > "$LOGS/diag-a-hidden-caged.txt" 2>&1; echo "rc=$?" >> "$LOGS/diag-a-hidden-caged.txt"
    stamp "diag B: the same in process"
    timeout 60 python3 -m pytest $PLUGIN graders/part03_kernels/test_vector_add.py --gpu --target solutions \
      -q -p no:cacheprovider --durations 12 > "$LOGS/diag-b-hidden-inprocess.txt" 2>&1; echo "rc=$?" >> "$LOGS/diag-b-hidden-inprocess.txt"
    stamp "diag C: one caged perf shape, judge progress and stacks on a hang"
    timeout 110 python3 -m pytest $PLUGIN graders/part03_kernels/test_perf.py --isolated --gpu --target solutions \
      -k "vector_add-small" --perf-time-cap 2 --timeout 100 -s -q -p no:cacheprovider --durations 5 \
      > "$LOGS/diag-c-perf-caged.txt" 2>&1; echo "rc=$?" >> "$LOGS/diag-c-perf-caged.txt"
    stamp "paged decode kernel: bench on the reference"
    timeout 120 python3 -m infralab.cli bench part04_serving.paged_decode_kernel --target solutions --time-cap 5 \
      --record "$OUT/h200-paged-decode-bench.json" > "$LOGS/paged-decode-bench.txt" 2>&1; echo "rc=$?" >> "$LOGS/paged-decode-bench.txt"
    stamp "engine throughput"
    timeout 200 python3 benchmarks/engine_throughput.py --out "$OUT/h200-engine.json" > "$LOGS/engine.txt" 2>&1
    echo "rc=$?" >> "$LOGS/engine.txt"
    stamp done ;;
  final)
    T0=$(date +%s)
    stamp "w4a16: the sweep of the reference's variants, then infralab bench"
    timeout 200 python3 benchmarks/tune_w4a16.py --out "$OUT/h200-w4a16-tune.json" > "$LOGS/w4a16-tune.txt" 2>&1
    echo "rc=$?" >> "$LOGS/w4a16-tune.txt"
    timeout 70 python3 -m infralab.cli bench part05_quantization.w4a16 --target solutions --time-cap 3 \
      --record "$OUT/h200-w4a16-bench.json" > "$LOGS/w4a16-bench.txt" 2>&1; echo "rc=$?" >> "$LOGS/w4a16-bench.txt"
    rm -f "$OUT"/*.png
    timeout 50 python3 -m pytest $PLUGIN graders/part05_quantization/test_w4a16.py -m gpu --target solutions -q -n 0 \
      -p no:cacheprovider > "$LOGS/w4a16-gpu-tests.txt" 2>&1; echo "rc=$?" >> "$LOGS/w4a16-gpu-tests.txt"
    stamp "grade --gpu: hostile samples"
    OUT=$OUT TIMECAP=3 LIMIT=80 DEADLINE=$((T0 + ${HOSTILE_UNTIL:-450})) bash benchmarks/h200_grade_gpu.sh hostile \
      > "$LOGS/hostile.txt" 2>&1
    if [ "${REFERENCE:-1}" = 1 ]; then  # REFERENCE=0: the reference phase gets a call of its own
      stamp "grade --gpu: reference, one exercise at a time"
      OUT=$OUT TIMECAP=3 LIMIT=120 DEADLINE=$((T0 + 545)) bash benchmarks/h200_grade_gpu.sh reference > "$LOGS/reference.txt" 2>&1
    fi
    stamp done ;;
esac 2>&1 | tee "$LOGS/steps.txt"
tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$LOGS"
exit 0
