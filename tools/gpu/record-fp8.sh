# Lesson 34's recording on one H200, a run of its own, after tools/gpu/session-fp8.sh's (a) passed (its a-correct.json
# says "passed": true); set A_JSON to that file and the recording is skipped unless it does.
#
#   source .device/activate.sh && export PYTHONPATH=$PWD:$PYTHONPATH GLUON_COURSE_COMMIT=<sha> && OUT=$OUT bash tools/gpu/record-fp8.sh
#
# `python -m gluon_course record 34` re-executes the notebook in place, and the notebook's cells do the measuring:
# the machine-code checks (fresh compiles on a bare machine: the solution for sm_90 both ways of scales and sm_100, the
# starter's through check("34"), the two one-product kernels: about 30 s), the correctness checks (a child process:
# 9 shapes × 2 kinds of scales and the refusals, about 20 s), five figures (fp8_8192 and fp8_8192_per_row: 8192³ inputs
# made on the CPU, the fp64 reference, 3 do_bench pairs, about 8 s each; sweep_fp8 over 4 shapes, about 25 s;
# over_bf16_v9 with lesson 19's compile, about 15 s; error_8192, about 8 s), with the notebook's kernel start and
# imports (about 15 s): 130-150 s in all. The limit is twice that, 300 s: a recording stopped by its limit writes
# no notebook. The recorded notebook and results/ are packed into $OUT/recorded.tgz.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
export GLUON_COURSE_COMMIT=${GLUON_COURSE_COMMIT:-$(git rev-parse --short=10 HEAD 2>/dev/null)}
if [ -n "${A_JSON:-}" ] && ! python -c "import json,sys; sys.exit(0 if json.load(open('$A_JSON')).get('passed') is True else 1)"; then
    echo "record skipped: $A_JSON does not say (a) passed; fix what it reports, then run session-fp8.sh again" | tee "$OUT/steps.txt"
    exit 1
fi
nvidia-smi --query-compute-apps=pid,name --format=csv,noheader > "$OUT/apps.txt" 2>&1
t0=$(date +%s)
timeout 300 python -m gluon_course record 34 > "$OUT/c-record.log" 2>&1
echo "c-record rc=$? $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.txt"
tar -czf "$OUT/recorded.tgz" lessons/34-gemm-fp8/lesson.ipynb results/*.json
tail -n 20 "$OUT/c-record.log"
