# Lesson 34 (fp8 on Hopper) on one H200, about 4 minutes: (a) correctness and the accuracy figure, (b) tile candidates
# timed in interleaved pairs against torch._scaled_mm and lesson 19's bf16 v9, (c) the recording, only if (a) passed.
#
#   source .device/activate.sh && export PYTHONPATH=$PWD:$PYTHONPATH GLUON_COURSE_COMMIT=<sha> && OUT=$OUT bash tools/gpu/session-fp8.sh
#
# Logs and JSON land in $OUT; the recorded notebook and results/ are packed into $OUT/recorded.tgz. Nothing else may
# use the GPU meanwhile. SKIP_RECORD=1 leaves (c) out.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
export GLUON_COURSE_COMMIT=${GLUON_COURSE_COMMIT:-$(git rev-parse --short=10 HEAD 2>/dev/null)}
nvidia-smi --query-compute-apps=pid,name --format=csv,noheader > "$OUT/apps.txt" 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
         local rc=$?; echo "$name rc=$rc $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.txt"; return $rc; }
step a-correct 60 python tools/gpu/fp8_session.py correct "$OUT/a-correct.json"; a_rc=$?
step b-time 100 python tools/gpu/fp8_session.py time "$OUT/b-time.json"
if [ "$a_rc" = 0 ] && [ "${SKIP_RECORD:-0}" != 1 ]; then
    step c-record 75 python -m gluon_course record 34
    tar -czf "$OUT/recorded.tgz" lessons/34-gemm-fp8/lesson.ipynb results/*.json
else
    echo "c-record skipped (a rc=$a_rc, SKIP_RECORD=${SKIP_RECORD:-0})" | tee -a "$OUT/steps.txt"
fi
# The short table: what (a) found, then each shape's candidates (× torch._scaled_mm with fast accumulation).
python - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
try:
    a = json.load(open(os.path.join(out, "a-correct.json")))
    print("torch", a["torch"], "| e4m3 cast of [447, 500, 1e6, inf] on cuda:", a["e4m3_cast_cuda"])
    for k in ("correct_fp8_shapes", "launcher_refuses"):
        print(f"{k}: {str(a[k])[:160]}")
    print("error_8192:", a["error_8192"]["text"])
    for k, v in a.items():
        if k.startswith("scaled_mm_"):
            print(f"{k}: {str(v)[:120]}")
except (OSError, KeyError, ValueError) as e:
    print("(a) left no result:", e)
try:
    b = json.load(open(os.path.join(out, "b-time.json")))
    for shape, row in b.items():
        cells = [f"{n} {r['over_scaled_mm_fast']:.3f}× ({r['tflops']:.0f} vs {r['scaled_mm_fast_tflops']:.0f} TFLOPS"
                 + (f", {r['over_bf16_v9']:.2f}× v9" if "over_bf16_v9" in r else "") + ")"
                 if "tflops" in r else f"{n} {str(r)[:80]}" for n, r in row.items() if n != "scaled_mm_promoted"]
        print(f"{shape:<18}", " | ".join(cells))
        if "scaled_mm_promoted" in row:
            print(f"{'':<18} promoted (use_fast_accum=False): {row['scaled_mm_promoted']}")
except (OSError, ValueError) as e:
    print("(b) left no result:", e)
PY
cat "$OUT/steps.txt"
