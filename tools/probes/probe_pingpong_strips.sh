# One GPU call (about 5 minutes), after `source .device/activate.sh`:
#   OUT=$OUT bash tools/probes/probe_pingpong_strips.sh
# probe_pingpong_strips.py on fp8 (beside lesson 34 and torch._scaled_mm) and on bf16 (beside v9, v10.3 and cuBLAS),
# then probe_wide_tile.py's "2 C buffers" variant again, its buffers now picked by a running count of subtiles.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
QUIET="leaked\|nanobind\|skipped\|refleaks\|reference counting"
nvidia-smi --query-gpu=name,clocks.sm,utilization.gpu,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 150 python tools/probes/probe_pingpong_strips.py fp8 "$OUT/strips-fp8.json" > "$OUT/strips-fp8.log" 2>&1
echo "strips fp8 rc=$?" | tee -a "$OUT/steps.txt"
timeout 200 python tools/probes/probe_pingpong_strips.py bf16 "$OUT/strips-bf16.json" > "$OUT/strips-bf16.log" 2>&1
echo "strips bf16 rc=$?" | tee -a "$OUT/steps.txt"
timeout 90 python tools/probes/probe_wide_tile.py fp8 "$OUT/wide2-fp8.json" 2 C buffers > "$OUT/wide2-fp8.log" 2>&1
echo "wide fp8 rc=$?" | tee -a "$OUT/steps.txt"
timeout 120 python tools/probes/probe_wide_tile.py bf16 "$OUT/wide2-bf16.json" 2 C buffers > "$OUT/wide2-bf16.log" 2>&1
echo "wide bf16 rc=$?" | tee -a "$OUT/steps.txt"
for f in strips-bf16 wide2-bf16; do grep -v "$QUIET" "$OUT/$f.log" | grep "geomean\|correct" | cut -c1-150; done
for f in strips-fp8 wide2-fp8; do grep -v "$QUIET" "$OUT/$f.log" | tail -5 | cut -c1-200; done
(cd "$OUT" && tar -czf logs.tgz *.log *.txt 2>/dev/null && rm -f *.log *.txt)
