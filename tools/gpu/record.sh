# One GPU session that records lessons: the notebooks are re-executed live in place, results/<gpu>.json is written,
# and both are packed into $OUT/recorded.tgz (with the log) for a machine that has to hand them back.
#
#   GPU_ENV=path/to/activate.sh OUT=gpu-out GLUON_COURSE_COMMIT=<sha> bash tools/gpu/record.sh 10 11 12 13 14
#
# GPU_ENV (optional): a script that puts the pinned Triton on the path. GLUON_COURSE_COMMIT stamps the figures
# when the working tree has no .git. RECORD_LIMIT: seconds before the recording is stopped (default 540).
[ -n "$GPU_ENV" ] && source "$GPU_ENV"
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:$PYTHONPATH
source tools/gpu/compile_cache_env.sh         # the AMD compiles stored on a CPU machine
export GLUON_COURSE_COMMIT=${GLUON_COURSE_COMMIT:-$(git rev-parse --short=10 HEAD 2>/dev/null)}
nvidia-smi --query-compute-apps=pid,name --format=csv > "$OUT/apps.txt" 2>&1   # anything else on the GPU skews timings
start=$(date +%s)
timeout "${RECORD_LIMIT:-540}" python -m gluon_course record "$@" > "$OUT/record.log" 2>&1
echo "record rc=$? in $(( $(date +%s) - start )) s" | tee -a "$OUT/record.log"
pkill -9 -f gluon_course.measure.isolated; pkill -9 -f compute-sanitizer
tar -czf "$OUT/recorded.tgz" lessons/*/lesson.ipynb results/*.json
python - "$@" <<'PY'
import json, sys
from gluon_course.grading import records
for k, e in sorted(records.load()["figures"].items()):
    if k.split("/")[0] in sys.argv[1:]:
        verdict = e.get("verdict") or ("passed" if e.get("passed") else "FAILED " + str(e.get("detail"))[:150])
        print(k[:40].ljust(40), verdict, str(e.get("text", ""))[:60])
PY
