# Sourced by the benchmarks/h200_session*.sh device scripts (from the repository root): the environment,
# $OUT and $LOGS, T0 (the call's start), `stamp`, environment.txt, and the steps the sessions share.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$(pwd)
OUT=${OUT:-/tmp/h200-out}
LOGS=$OUT/logs
mkdir -p "$LOGS"
T0=$(date +%s)
stamp() { echo "== $(date +%T) $*"; }
{
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit,pstate --format=csv
python3 -c "import numpy, torch, triton, sys; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'torch', torch.__version__, 'triton', triton.__version__)"
} > "$LOGS/environment.txt" 2>&1

# The hostile vector_add samples through grade --gpu (their large shape hit the wire limit before outputs
# were sampled). $1: seconds after T0 by which the last grade starts; $2: the time cap; $3: each grade's limit.
hostile_vector_add() {
  rm -rf /tmp/h200-hostile-va && mkdir -p /tmp/h200-hostile-va
  for s in counting side_stream timer_patch wrong_when_timed memo busy_thread enqueue_side_stream raw_launch_side_stream; do
    cp -r fixtures/submissions_gpu/${s}_vector_add /tmp/h200-hostile-va/
  done
  OUT=$OUT TIMECAP=$2 LIMIT=$3 DEADLINE=$((T0 + $1)) SAMPLES=/tmp/h200-hostile-va \
    bash benchmarks/h200_grade_gpu.sh hostile > "$LOGS/hostile-va.txt" 2>&1
}

# Pack the logs (the device returns at most 8 files): every .md and .txt under $OUT goes into logs.tgz with
# them, so a call returns its JSON records, its .tgz archives and logs.tgz (on 2026-12-06 a call wrote ten files
# and lost logs.tgz).
pack_logs() {
  stamp done >> "$LOGS/steps.txt"
  mv "$OUT"/*.md "$OUT"/*.txt "$LOGS/" 2>/dev/null
  tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$LOGS"
  local n; n=$(find "$OUT" -maxdepth 1 -type f | wc -l)
  [ "$n" -le 8 ] || echo "pack_logs: $n files under $OUT, the device returns 8" >&2
}
