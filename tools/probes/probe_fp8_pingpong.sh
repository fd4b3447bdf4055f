# One GPU call (about 4 minutes), after `source .device/activate.sh`:
#   OUT=$OUT bash tools/probes/probe_fp8_pingpong.sh
# 1. probe_fp8_pingpong.py: lesson 33's ping-pong kernels on e4m3, checked on odd shapes, then timed beside lesson 34
#    and torch._scaled_mm over 8192³ and the fp8 sweep;
# 2. probe_coop.py --sweep --wide: lesson 33's kernels on 64 × 256 bf16 tiles beside v9, v10.3 and cuBLAS;
# 3. the kernels cuBLASLt launches at those shapes (torch.profiler).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
QUIET="leaked\|nanobind\|skipped\|refleaks\|reference counting"
nvidia-smi --query-gpu=name,clocks.sm,utilization.gpu,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 240 python tools/probes/probe_fp8_pingpong.py "$OUT/fp8-pingpong.json" > "$OUT/fp8-pingpong.log" 2>&1
echo "fp8 probe rc=$?" | tee -a "$OUT/steps.txt"
timeout 100 python tools/probes/probe_fp8_pingpong.py library "$OUT/library-kernels.json" > "$OUT/library.log" 2>&1
echo "library rc=$?" | tee -a "$OUT/steps.txt"
timeout 200 python tools/probes/probe_coop.py "$OUT/bf16-wide.json" --sweep --wide > "$OUT/bf16-wide.log" 2>&1
echo "bf16 probe rc=$?" | tee -a "$OUT/steps.txt"
grep -v "$QUIET" "$OUT/library.log" | cut -c1-160
grep -v "$QUIET" "$OUT/bf16-wide.log" | tail -8 | cut -c1-200
grep -v "$QUIET" "$OUT/fp8-pingpong.log" | tail -14
(cd "$OUT" && tar -czf logs.tgz *.log *.txt 2>/dev/null && rm -f *.log *.txt)
