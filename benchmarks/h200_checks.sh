#!/usr/bin/env bash
# Issue #12 on the H200 (one device call): profiler kernel names, every reference solution with the
# timed-call checks on and off (what they cost, baselines in the same run), every hostile sample of
# fixtures/submissions_gpu through the suite, `infralab bench` and `pytest -m gpu`.
# MODE=probe runs a short version. Writes at most 8 files under $OUT.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/h200-out}
MODE=${MODE:-full}
CAP=${CAP:-4}
mkdir -p "$OUT" /tmp/h200-extra
PLUGIN=$(python3 -c "from importlib.metadata import entry_points as e
print('' if any(x.value == 'infralab.plugin' for x in e(group='pytest11')) else '-p infralab.plugin')")
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit,pstate --format=csv
timeout 120 python3 benchmarks/probe_kernel_names.py "$OUT/h200-kernel-names.json" 2>&1 | cut -c1-600
HOSTILE=$(ls -d fixtures/submissions_gpu/*/ | sed 's/^/--submission /')
timeout 240 python3 benchmarks/h200_suite.py --out "$OUT" $HOSTILE --tag checks-hostile --time-cap 2 2>&1 | grep -v '^|' | cut -c1-700
if [ "$MODE" = probe ]; then
  timeout 150 python3 benchmarks/h200_suite.py --out "$OUT" --candidates solutions --checks both --tag checks-probe \
    --time-cap 1 --exercise vector_add --exercise matmul --exercise softmax 2>&1 | grep -v '^|' | cut -c1-500
  exit 0
fi
timeout 330 python3 benchmarks/h200_suite.py --out "$OUT" --candidates solutions --checks both --tag checks-solutions \
  --time-cap "$CAP" 2>&1 | grep -v '^|' | cut -c1-500
for s in composite_matmul:matmul side_stream_vector_add:vector_add timer_patch_vector_add:vector_add; do
  timeout 60 python3 -m infralab.cli bench "${s#*:}" --target "fixtures/submissions_gpu/${s%%:*}" --time-cap 1 \
    --record "/tmp/h200-extra/bench-${s%%:*}.json" 2>&1 | tail -4 | cut -c1-400
done
python3 - "$OUT/h200-checks-bench.json" /tmp/h200-extra/bench-*.json <<'PY'
import json, sys
json.dump([json.load(open(p)) for p in sys.argv[2:]], open(sys.argv[1], "w"), indent=1)
PY
for d in fixtures/submissions_gpu/*/; do
  timeout 90 python3 -m pytest $PLUGIN graders/part03_kernels/test_perf.py -m gpu --target "$d" -q -p no:cacheprovider \
    -k "$(ls $d/part03_kernels | sed 's/\.py//; s/rmsnorm/rmsnorm/' | head -1)" 2>&1 | grep -E "passed|failed|Error|assert" | tail -3 | cut -c1-400
done
