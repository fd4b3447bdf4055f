# GPU call: record lessons given as arguments (notebooks re-executed live in place, results/nvidia-h200.json written).
source .device/activate.sh
export PYTHONPATH=$PWD:$PYTHONPATH GLUON_COURSE_COMPILE_CACHE=$PWD/.device/compile-cache GLUON_COURSE_COMMIT=${GLUON_COURSE_COMMIT:-$(git rev-parse --short=10 HEAD 2>/dev/null)}
nvidia-smi --query-compute-apps=pid,name --format=csv > $OUT/apps.txt 2>&1
start=$(date +%s)
timeout ${RECORD_LIMIT:-540} python -m gluon_course record "$@" > $OUT/record.log 2>&1
echo "record rc=$? in $(( $(date +%s) - start )) s" | tee -a $OUT/record.log
pkill -9 -f gluon_course.measure.isolated; pkill -9 -f compute-sanitizer
tar -czf $OUT/recorded.tgz lessons/*/lesson.ipynb results/nvidia-h200.json
grep -v "^nanobind\|^ - \|^See\|WARNING" $OUT/record.log | tail -15
python - "$@" <<'PY'
import json, sys
d = json.load(open("results/nvidia-h200.json"))["figures"]
for k, e in sorted(d.items()):
    if k.split("/")[0] in sys.argv[1:]:
        print(k[:40].ljust(40), e.get("verdict", "passed" if e.get("passed") else "FAILED " + str(e.get("detail"))[:150]), str(e.get("text", ""))[:60])
PY
