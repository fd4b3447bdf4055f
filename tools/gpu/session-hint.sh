# One GPU call for issue 25's next step, after `source .device/activate.sh`:
#
#   export PYTHONPATH=$PWD:$PYTHONPATH GLUON_COURSE_COMMIT=<sha> && OUT=$OUT bash tools/gpu/session-hint.sh
#
# (a) probe_cache_policy.py: W_FIRST 0 against 1 on the output layer's shapes and on M = 1024 and 2048, where the
#     dispatch rule gives no hint and no run has timed one (≤ 100 s);
# (b) the re-tune of every model shape beside its own configuration with W_FIRST 0 and 1 (--space hint), written to
#     $OUT/table.json, no new shape after about the call's 480th second. The 2026-12-03 recording ran the rule (the
#     hint at M ≤ 512): it lost at the output layer (1 × 128256 × 4096 at 0.958×) and gained elsewhere.
# Then copy $OUT/table.json over results/tuning/nvidia-h200-linear.json, commit, and record lesson 32 again
# (tools/gpu/record_nbval.sh 32).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
TABLE=results/tuning/nvidia-h200-linear.json
SHAPES=${SHAPES:-1x128256x4096,16x128256x4096,2048x128256x4096,2048x4096x4096,2048x6144x4096,2048x14336x4096,2048x4096x14336,8192x4096x4096,8192x6144x4096,8192x14336x4096,8192x4096x14336,512x14336x4096,512x4096x14336,512x4096x4096,512x6144x4096,1x4096x4096,16x4096x4096,64x4096x4096,128x4096x4096,1x6144x4096,16x6144x4096,64x6144x4096,128x6144x4096,1x14336x4096,16x14336x4096,64x14336x4096,128x14336x4096,1x4096x14336,16x4096x14336,64x4096x14336,128x4096x14336}
begin=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,power.draw,utilization.gpu,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
nvidia-smi --query-compute-apps=pid,name --format=csv,noheader >> "$OUT/gpu.txt" 2>&1
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
         local rc=$?; echo "$name rc=$rc $(( $(date +%s) - t0 )) s" | tee -a "$OUT/steps.txt"; }
step probe 100 python tools/gpu/probe_cache_policy.py "$OUT/w-first.json"
left=$(( 520 - ($(date +%s) - begin) ))
step retune $(( left + 60 )) python tools/gpu/tune_linear.py "$OUT/table.json" --merge "$TABLE" --only "$SHAPES" \
    --space hint --budget $(( left - 40 ))
echo "---- summary"
cat "$OUT/steps.txt"
grep -v "leaked\|nanobind\|skipped remainder\|refleaks" "$OUT/probe.log" | tail -20
grep -h "entry\|wrote\|left" "$OUT/retune.log" | cut -c1-260
