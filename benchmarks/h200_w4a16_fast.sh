#!/usr/bin/env bash
# One device call for #16's fast W4A16 reference (about 4 minutes), every output under $OUT:
#   bash benchmarks/h200_w4a16_fast.sh
# 1. benchmarks/tune_w4a16.py: cuBLAS, the previous reference and every fast-path variant at batch
#    1/16/128 (N = K = 8192, group 128), each checked, then timed; its last line names the settings.
# 2. the GPU-marked hidden tests (bf16 at batch 1/16/128, N = K = 4096) on the reference's defaults.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/h200-out}
mkdir -p "$OUT"
PLUGIN=$(python3 -c 'from infralab.runner import plugin_args; print(*plugin_args())')
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > "$OUT/w4a16-sweep.txt" 2>&1
timeout 330 python3 benchmarks/tune_w4a16.py --out "$OUT/h200-w4a16-sweep.json" >> "$OUT/w4a16-sweep.txt" 2>&1
echo "sweep rc=$?" >> "$OUT/w4a16-sweep.txt"
timeout 200 python3 -m pytest $PLUGIN graders/part05_quantization/test_w4a16.py --gpu --target solutions -k gpu \
  -q -p no:cacheprovider --durations 5 > "$OUT/w4a16-gpu-tests.txt" 2>&1
echo "tests rc=$?" >> "$OUT/w4a16-gpu-tests.txt"
tail -8 "$OUT/w4a16-sweep.txt"
exit 0
