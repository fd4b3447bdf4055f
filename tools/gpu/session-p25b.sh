# One GPU call for issues 21 and 25, from a clean tree, after `source .device/activate.sh` (and, on a CPU machine
# first, `bash tools/gpu/compile_store.sh 30` for lesson 30's AMD cells):
#
#   export PYTHONPATH=$PWD:$PYTHONPATH GLUON_COURSE_COMMIT=<sha> && OUT=$OUT bash tools/gpu/session-p25b.sh
#
# (a) lesson 30's notebook under nbval, live (≤ 240 s);
# (b) the re-tune of the five model shapes whose best entry stream-K may beat (dispatch.streamk_candidates), merged
#     into results/tuning/nvidia-h200-linear.json; no new shape after 150 s (≤ 190 s);
# (c) lesson 32 recorded again from the new table, only when (a) and (b) left 240 s of the call's 600 (≤ 230 s).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
export GLUON_COURSE_COMMIT=${GLUON_COURSE_COMMIT:-$(git rev-parse --short=10 HEAD 2>/dev/null)}
TABLE=results/tuning/nvidia-h200-linear.json
SHAPES=512x6144x4096,128x4096x4096,128x6144x4096,64x4096x4096,512x14336x4096
begin=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,power.draw,utilization.gpu,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
nvidia-smi --query-compute-apps=pid,name --format=csv,noheader >> "$OUT/gpu.txt" 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
         local rc=$?; echo "$name rc=$rc $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.txt"; }
OUT=$OUT NBVAL_LIMIT=240 bash tools/gpu/nbval_each.sh 30 | tee "$OUT/nbval-summary.txt"
step retune 190 python tools/gpu/tune_linear.py "$TABLE" --merge "$TABLE" --only "$SHAPES" --budget 150
if [ $(( $(date +%s) - begin )) -lt 360 ]; then
  step record 230 python -m gluon_course record 32
else
  echo "record not run: $(( $(date +%s) - begin )) s spent" | tee -a "$OUT/steps.txt"
fi
pkill -9 -f gluon_course.measure.isolated
tar -czf "$OUT/recorded.tgz" lessons/30-*/lesson.ipynb lessons/32-*/lesson.ipynb results/nvidia-h200.json "$TABLE"
echo "---- summary"
cat "$OUT/nbval-summary.txt" "$OUT/steps.txt"
grep -h "entry\|wrote\|left" "$OUT/retune.log" | cut -c1-200
python - <<'PY'
from gluon_course.grading import records
for k, e in sorted(records.load()["figures"].items()):
    if k.split("/")[0] == "32":
        verdict = e.get("verdict") or ("passed" if e.get("passed") else "FAILED " + str(e.get("detail"))[:120])
        print(k[:34].ljust(34), (e.get("date") or "").ljust(11), verdict[:40].ljust(40), str(e.get("text", ""))[:90])
PY
