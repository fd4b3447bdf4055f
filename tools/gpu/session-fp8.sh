# Lesson 34 (fp8 on Hopper) on one H200, at most about 160 s: (a) correctness, case by case (≤ 60 s), and the accuracy
# figure; (b) CONFIG and one alternative tile timed in interleaved pairs against torch._scaled_mm, CONFIG over lesson
# 19's bf16 v9 at 8192³ (≤ 90 s). The recording, `python -m gluon_course record 34`, is tools/gpu/record-fp8.sh, a
# separate run: estimated at 130-150 s (see there), it does not fit beside (a) and (b) in 240 s with any margin, and a
# recording stopped by its limit writes no notebook at all.
#
#   source .device/activate.sh && export PYTHONPATH=$PWD:$PYTHONPATH GLUON_COURSE_COMMIT=<sha> && OUT=$OUT bash tools/gpu/session-fp8.sh
#
# Logs and JSON land in $OUT (a-correct.json is written after every case of (a), so a stopped step leaves what it
# found). Nothing else may use the GPU meanwhile: apps.txt lists what nvidia-smi saw at the start.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
export GLUON_COURSE_COMMIT=${GLUON_COURSE_COMMIT:-$(git rev-parse --short=10 HEAD 2>/dev/null)}
nvidia-smi --query-compute-apps=pid,name --format=csv,noheader > "$OUT/apps.txt" 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
         local rc=$?; echo "$name rc=$rc $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.txt"; return $rc; }
step a-correct 60 python tools/gpu/fp8_session.py correct "$OUT/a-correct.json"
step b-time 90 python tools/gpu/fp8_session.py time "$OUT/b-time.json"
# The short table: what (a) found, then each shape's candidates (× torch._scaled_mm with fast accumulation).
python - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
try:
    a = json.load(open(os.path.join(out, "a-correct.json")))
    print("torch", a.get("torch"), "| e4m3 cast of [447, 500, 1e6, inf] on cuda:", a.get("e4m3_cast_cuda"))
    print("(a) passed:", a.get("passed", "not finished"), "|", a.get("correct_fp8_shapes", "kernel cases not finished"))
    for k, v in a.items():
        if k.startswith(("scaled_mm ", "kernel ", "launcher_refuses")) and v != "passed":
            print(f"  {k}: {str(v)[:140]}")
    e = a.get("error_8192")
    print("error_8192:", e["text"] if isinstance(e, dict) else e)
except (OSError, ValueError) as e:
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
