#!/usr/bin/env bash
# The full H200 run of part03 (one device call, ~6-9 minutes): calibration, every challenge on the
# reference solutions, the GPU-marked correctness tests on solutions and stubs, and the correctness
# gate on the stubs and every mutant. Writes at most 8 files under $OUT (the device's limit).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/h200-out}
mkdir -p "$OUT" /tmp/h200-extra
# the pytest plugin: by its entry point where infralab is installed, by name where it is not (the device)
PLUGIN=$(python3 -c "from importlib.metadata import entry_points as e
print('' if any(x.value == 'infralab.plugin' for x in e(group='pytest11')) else '-p infralab.plugin')")
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit,pstate --format=csv
python3 -m infralab.cli profile calibrate --update hardware_profiles/h200.yml && cp hardware_profiles/h200.yml "$OUT/h200.yml"
python3 benchmarks/h200_suite.py --out "$OUT" --candidates solutions --tag final --time-cap 4 | grep -v '^|'
python3 -m infralab.cli bench rmsnorm --target solutions --record "$OUT/bench-rmsnorm.json"
# GPU-marked correctness tests, and the perf test of one exercise through pytest (its entry lands in the record)
timeout 150 python3 -m pytest $PLUGIN graders/part03_kernels -m gpu -k "not test_perf or vector_add" --target solutions \
  -q -p no:cacheprovider --record "$OUT/pytest-gpu-solutions.json" 2>&1 | tail -5
timeout 100 python3 -m pytest $PLUGIN graders/part03_kernels -m gpu -k "not test_perf" --target exercises \
  -q -p no:cacheprovider 2>&1 | tail -3
python3 benchmarks/h200_suite.py --out /tmp/h200-extra --candidates exercises --tag stubs --time-cap 1 | grep -v '^|'
cp /tmp/h200-extra/h200-stubs.md "$OUT/"
timeout 60 python3 -m pytest $PLUGIN graders/part03_kernels/test_perf.py -m gpu -k softmax -q -p no:cacheprovider \
  --target mutant:part03_kernels.softmax:no_max_subtraction 2>&1 | tail -3
python3 benchmarks/h200_suite.py --out /tmp/h200-extra --candidates mutants --tag mutants --time-cap 1 | grep -v '^|'
cp /tmp/h200-extra/h200-mutants.md "$OUT/"
