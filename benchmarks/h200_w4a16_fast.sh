#!/usr/bin/env bash
# One device call for #16's fast W4A16 reference: the sweep of benchmarks/tune_w4a16.py (previous
# reference, every fast-path variant, cuBLAS; about 3 minutes), then the GPU-marked hidden tests
# (bf16 at batch 1/16/128, N = K = 4096) on the reference. Every output under $OUT.
#   bash benchmarks/h200_w4a16_fast.sh
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
{
stamp "w4a16 sweep: previous reference, fast-path variants, cuBLAS"
timeout 330 python3 benchmarks/tune_w4a16.py --out "$OUT/h200-w4a16-sweep.json" > "$LOGS/w4a16-sweep.txt" 2>&1
echo "rc=$?" >> "$LOGS/w4a16-sweep.txt"
stamp "w4a16 hidden tests on the GPU (bf16 at serving sizes)"
timeout 200 python3 -m pytest $PLUGIN graders/part05_quantization/test_w4a16.py --gpu --target solutions -k gpu \
  -q -p no:cacheprovider --durations 5 > "$LOGS/w4a16-gpu-tests.txt" 2>&1; echo "rc=$?" >> "$LOGS/w4a16-gpu-tests.txt"
stamp done
} 2>&1 | tee "$LOGS/steps.txt"
cp "$LOGS/w4a16-sweep.txt" "$OUT/w4a16-sweep.txt"
tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$LOGS"
exit 0
