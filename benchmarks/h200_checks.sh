#!/usr/bin/env bash
# Issue #12 on the H200 in one device call (about 9 minutes): the profiler's kernel names, every hostile
# sample of fixtures/submissions_gpu through the suite (the code path of `infralab bench`), three of them
# through the `infralab bench` CLI and one through `pytest -m gpu`, and every reference solution with the
# timed-call checks on and off (what they cost; baselines in the same run). At most 8 files under $OUT.
# NAMES=0 skips the kernel-names probe (70 s; committed in benchmarks/results/h200-kernel-names.json).
# HOSTILE_LIMIT (default 150): seconds for the hostile samples through the suite.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/h200-out}
CAP=${CAP:-2}
mkdir -p "$OUT" /tmp/h200-extra
PLUGIN=$(python3 -c "from importlib.metadata import entry_points as e
print('' if any(x.value == 'infralab.plugin' for x in e(group='pytest11')) else '-p infralab.plugin')")
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit,pstate --format=csv
[ "${NAMES:-1}" = 1 ] && timeout 70 python3 benchmarks/probe_kernel_names.py "$OUT/h200-kernel-names.json" 2>&1 | cut -c1-400
HOSTILE=$(ls -d fixtures/submissions_gpu/*/ | sed 's/^/--submission /')
timeout "${HOSTILE_LIMIT:-150}" python3 benchmarks/h200_suite.py --out "$OUT" $HOSTILE --tag checks-hostile --time-cap 1 2>&1 \
  | grep -v '^|' | cut -c1-600
for s in composite_matmul:matmul side_stream_vector_add:vector_add timer_patch_vector_add:vector_add; do
  timeout 40 python3 -m infralab.cli bench "${s#*:}" --target "fixtures/submissions_gpu/${s%%:*}" --time-cap 1 \
    --challenge large --challenge square --record "/tmp/h200-extra/bench-${s%%:*}.json" 2>&1 | tail -3 | cut -c1-400
done
python3 - "$OUT/h200-checks-bench.json" /tmp/h200-extra/bench-*.json <<'PY'
import json, sys
json.dump([json.load(open(p)) for p in sys.argv[2:]], open(sys.argv[1], "w"), indent=1)
PY
timeout 50 python3 -m pytest $PLUGIN graders/part03_kernels/test_perf.py -m gpu -k "vector_add-large" -q \
  -p no:cacheprovider --target fixtures/submissions_gpu/counting_vector_add 2>&1 | grep -E "passed|failed|Error" \
  | tail -3 | cut -c1-400
timeout 250 python3 benchmarks/h200_suite.py --out "$OUT" --candidates solutions --checks both --tag checks-solutions \
  --time-cap "$CAP" 2>&1 | grep -v '^|' | cut -c1-400
