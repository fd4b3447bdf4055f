# One GPU call (about 4 minutes), after `source .device/activate.sh`:
#   OUT=$OUT bash tools/probes/probe_wide_tile.sh
# probe_wide_tile.py on bf16 (odd shapes with both layouts of B, then the 7-shape sweep beside v9, v10.3 and cuBLAS)
# and on fp8 (odd shapes, then lesson 34's sweep beside lesson 34 and torch._scaled_mm).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
QUIET="leaked\|nanobind\|skipped\|refleaks\|reference counting"
nvidia-smi --query-gpu=name,clocks.sm,utilization.gpu,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 240 python tools/probes/probe_wide_tile.py fp8 "$OUT/wide-fp8.json" > "$OUT/wide-fp8.log" 2>&1
echo "fp8 rc=$?" | tee -a "$OUT/steps.txt"
timeout 270 python tools/probes/probe_wide_tile.py bf16 "$OUT/wide-bf16.json" > "$OUT/wide-bf16.log" 2>&1
echo "bf16 rc=$?" | tee -a "$OUT/steps.txt"
grep -v "$QUIET" "$OUT/wide-bf16.log" | grep -v "^[0-9]*x" | tail -9 | cut -c1-200
grep -v "$QUIET" "$OUT/wide-fp8.log" | tail -12
(cd "$OUT" && tar -czf logs.tgz *.log *.txt 2>/dev/null && rm -f *.log *.txt)
