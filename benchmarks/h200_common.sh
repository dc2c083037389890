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

# The hostile samples' folders, one a line: the routes issue #12 names first, busy_thread last (its copying thread
# lives on in a process that loads it; the suite's run of 2026-12-06 ended in an abort, most likely that thread).
hostile_samples() {
  local first="compile_hidden compile_rmsnorm composite conv counting noop side_stream timer_patch"
  for f in $first; do ls -d fixtures/submissions_gpu/${f}*/; done
  ls -d fixtures/submissions_gpu/*/ | grep -v -E "/($(echo $first | tr ' ' '|'))|busy_thread"
  ls -d fixtures/submissions_gpu/busy_thread*/
}

# pytest -m gpu of one hostile sample on its exercise (--perf-time-cap 1), its result lines: at most $2 seconds,
# not started after T0 + $3 - 15 nor running past T0 + $3. Exported, with T0 and PLUGIN, for xargs -P.
pytest_sample() {
  local d=$1 ex lim=$(( T0 + $3 - $(date +%s) ))
  ex=$(cd "$d" && ls part03_kernels/*.py | head -1 | xargs basename | sed 's/\.py$//')
  [ "$lim" -lt 15 ] && { echo "== $d: not run (deadline)"; return; }
  echo "== $(date +%T) $d ($ex)"
  timeout "$(( lim < $2 ? lim : $2 ))" python3 -m pytest $PLUGIN graders/part03_kernels/test_perf.py -m gpu -k "$ex" \
    --target "$d" --perf-time-cap 1 -q -p no:cacheprovider -rf 2>&1 | grep -E "^E   |passed|failed|FAILED|Error" | cut -c1-400
  echo "== $(date +%T) $d: rc ${PIPESTATUS[0]}"
}
PLUGIN=$(python3 -c 'from infralab.runner import plugin_args; print(*plugin_args())' 2>/dev/null)
export -f pytest_sample
export T0 PLUGIN

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
