# One GPU call for issue 23, from a clean tree, after `source .device/activate.sh`:
#
#   export PYTHONPATH=$PWD:$PYTHONPATH GLUON_COURSE_COMMIT=<sha> && OUT=$OUT bash tools/gpu/session-p25c.sh
#
# (a) lesson 33 recorded (≤ 340 s);
# (b) the recorded notebook under nbval, live, when (a) left at least 170 s of the call's 590 (≤ 230 s).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
export GLUON_COURSE_COMMIT=${GLUON_COURSE_COMMIT:-$(git rev-parse --short=10 HEAD 2>/dev/null)}
begin=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,power.draw,utilization.gpu,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
nvidia-smi --query-compute-apps=pid,name --format=csv,noheader >> "$OUT/gpu.txt" 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
         local rc=$?; echo "$name rc=$rc $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.txt"; }
step record 340 python -m gluon_course record 33
pkill -9 -f gluon_course.measure.isolated
tar -czf "$OUT/recorded.tgz" lessons/33-*/lesson.ipynb results/nvidia-h200.json
left=$(( 590 - ($(date +%s) - begin) ))
if [ "$left" -ge 170 ]; then
  OUT=$OUT NBVAL_LIMIT=$(( left - 20 < 230 ? left - 20 : 230 )) bash tools/gpu/nbval_each.sh 33 | tee "$OUT/nbval-summary.txt"
else
  echo "nbval not run: $left s left" | tee "$OUT/nbval-summary.txt"
fi
echo "---- summary"
cat "$OUT/steps.txt" "$OUT/nbval-summary.txt"
# At most 8 files come back from the machine: the logs travel as one archive.
(cd "$OUT" && tar -czf logs.tgz *.log *.txt 2>/dev/null && rm -f *.log *.txt)
python - <<'PY'
from gluon_course.grading import records
for k, e in sorted(records.load()["figures"].items()):
    if k.split("/")[0] == "33":
        verdict = e.get("verdict") or ("passed" if e.get("passed") else "FAILED " + str(e.get("detail"))[:120])
        print(k[:34].ljust(34), (e.get("date") or "").ljust(11), verdict[:40].ljust(40), str(e.get("text", ""))[:110])
PY
