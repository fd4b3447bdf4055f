# One GPU call (about 2 minutes), after `source .device/activate.sh`:
#   OUT=$OUT bash tools/probes/probe_fp8_streamk.sh
# 1. probe_fp8_streamk.py --fixup: stream-K's fixup in parts, timed beside torch._scaled_mm (fixup.json);
# 2. Nsight Compute on one cold-L2 launch each of lesson 34's kernel and stream-K 1 with and without its fixup at
#    2048x4096x4096: the kernel's own duration, DRAM and L2 bytes (ncu-*.csv, in logs.tgz).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,clocks.sm,utilization.gpu,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 240 python tools/probes/probe_fp8_streamk.py --fixup "$OUT/fixup.json" > "$OUT/fixup.log" 2>&1
echo "fixup rc=$?" | tee -a "$OUT/steps.txt"
grep -v "leaked\|nanobind\|skipped\|refleaks\|reference counting" "$OUT/fixup.log" | tail -12
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_atom.sum,sm__cycles_active.avg
if command -v ncu > /dev/null; then
  i=0
  for who in "lesson 34" "stream-K 1" "stream-K 1, partials stored, counted, none read" "stream-K 1, no fixup"; do
    i=$((i + 1))
    # --cache-control all flushes every cache before the launch; --clock-control none leaves the clocks alone.
    timeout 90 ncu --clock-control none --cache-control all --nvtx --nvtx-include "probe/" --metrics "$METRICS" \
        --csv --print-units base python tools/probes/probe_fp8_streamk.py one $who 2048 4096 4096 \
        > "$OUT/ncu-$i.csv" 2> "$OUT/ncu-$i.err"
    echo "ncu $i ($who) rc=$?" | tee -a "$OUT/steps.txt"
  done
else
  echo "ncu not on PATH" | tee -a "$OUT/steps.txt"
fi
python -m gluon_course.measure.ncu --table "$OUT"     # a column per launch, a row per metric
(cd "$OUT" && tar -czf logs.tgz *.csv *.err *.log *.txt 2>/dev/null && rm -f *.csv *.err *.log *.txt)
