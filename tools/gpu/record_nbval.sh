# One GPU call, from a clean tree, after `source .device/activate.sh`: lesson N recorded, then its recorded notebook
# under nbval, live, when the recording left at least 170 s of the call's CALL_LIMIT (default 590).
#
#   export PYTHONPATH=$PWD:$PYTHONPATH GLUON_COURSE_COMMIT=<sha> && OUT=$OUT RECORD_LIMIT=340 bash tools/gpu/record_nbval.sh 32
#
# Recording times seen on the H200 (2026-12-02): lesson 32 193 s warm, 228 s cold; lesson 33 288 s on a warm machine
# and more than 340 s on a cold one (give it RECORD_LIMIT=560 and no nbval in the same call). Lesson 32's nbval takes
# 110–120 s after a recording or on a warm machine, and more than 200 s on a cold one (NBVAL_LIMIT=300 there).
set -u
N=$1
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
export GLUON_COURSE_COMMIT=${GLUON_COURSE_COMMIT:-$(git rev-parse --short=10 HEAD 2>/dev/null)}
begin=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,power.draw,utilization.gpu,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
nvidia-smi --query-compute-apps=pid,name --format=csv,noheader >> "$OUT/gpu.txt" 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
         local rc=$?; echo "$name rc=$rc $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.txt"; }
step record "${RECORD_LIMIT:-340}" python -m gluon_course record "$N"
pkill -9 -f gluon_course.measure.isolated
tar -czf "$OUT/recorded.tgz" lessons/"$N"-*/lesson.ipynb results/nvidia-h200.json
left=$(( ${CALL_LIMIT:-590} - ($(date +%s) - begin) ))
if [ "$left" -ge 170 ]; then
  OUT=$OUT NBVAL_LIMIT=$(( left - 20 < 230 ? left - 20 : 230 )) bash tools/gpu/nbval_each.sh "$N" | tee "$OUT/nbval-summary.txt"
else
  echo "nbval not run: $left s left" | tee "$OUT/nbval-summary.txt"
fi
echo "---- summary"
cat "$OUT/steps.txt" "$OUT/nbval-summary.txt"
# At most 8 files come back from the machine: the logs travel as one archive.
(cd "$OUT" && tar -czf logs.tgz *.log *.txt 2>/dev/null && rm -f *.log *.txt)
python - "$N" <<'PY'
import sys
from gluon_course.grading import records
for k, e in sorted(records.load()["figures"].items()):
    if k.split("/")[0] == sys.argv[1]:
        verdict = e.get("verdict") or ("passed" if e.get("passed") else "FAILED " + str(e.get("detail"))[:120])
        print(k[:34].ljust(34), (e.get("date") or "").ljust(11), verdict[:40].ljust(40), str(e.get("text", ""))[:110])
PY
