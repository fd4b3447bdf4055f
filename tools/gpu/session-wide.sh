# One GPU call for issue 25's mid-M shapes, after `source .device/activate.sh`:
#
#   export PYTHONPATH=$PWD:$PYTHONPATH GLUON_COURSE_COMMIT=<sha> && OUT=$OUT bash tools/gpu/session-wide.sh
#
# (a) lesson 32's GPU correctness checks with the wide tile's paths (correct_paths, deterministic; ≤ 200 s);
# (b) the re-tune of the shapes the 2026-12-02 recording left below F.linear, and the large ones a 128 × 192 tile
#     may suit, beside dispatch.wide_candidates (--space wide); written to $OUT/table.json, no new shape after about
#     the call's 480th second.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
TABLE=results/tuning/nvidia-h200-linear.json
SHAPES=${SHAPES:-512x6144x4096,128x6144x4096,64x4096x4096,128x14336x4096,512x14336x4096,128x4096x4096,2048x6144x4096,512x4096x14336,64x6144x4096,8192x4096x14336,2048x4096x4096,8192x6144x4096}
begin=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,power.draw,utilization.gpu,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
nvidia-smi --query-compute-apps=pid,name --format=csv,noheader >> "$OUT/gpu.txt" 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
         local rc=$?; echo "$name rc=$rc $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.txt"; }
step checks 200 python tools/gpu/run_checks.py 32 correct_paths deterministic
left=$(( 520 - ($(date +%s) - begin) ))
step retune $(( left + 60 )) python tools/gpu/tune_linear.py "$OUT/table.json" --merge "$TABLE" --only "$SHAPES" \
    --space wide --budget $(( left - 40 ))
echo "---- summary"
cat "$OUT/steps.txt"
grep -h "32/" "$OUT/checks.log" | cut -c1-300
grep -h "entry\|wrote\|left" "$OUT/retune.log" | cut -c1-260
