# Lesson 33 (v10) on one H200, ≤ 240 s: (a) correctness of each v10 step, (b) one timing table with clock and power,
# (c) with RECORD=1 and only if (a) passed, `record 33` (several minutes more: every check and figure, the notebook).
# Run from a clean tree: OUT=... bash tools/gpu/session-v10.sh
set -u
export PYTHONPATH=$PWD:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; local rc=$?
         echo "$name rc=$rc $(( $(date +%s) - t0 )) s"; return $rc; }
step correct 60 python tools/gpu/v10_timing.py correct "$OUT/correct.json"; ok=$?
step timing 120 python tools/gpu/v10_timing.py time "$OUT/timing.json" --sweep
if [ $ok -eq 0 ] && [ "${RECORD:-0}" = 1 ]; then step record 590 python -m gluon_course record 33; fi
cat "$OUT/correct.log" | cut -c1-200
sed -n '/^summary/,$p' "$OUT/timing.log"
