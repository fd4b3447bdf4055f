# One GPU call (about 2 minutes), after `source .device/activate.sh`:
#   OUT=$OUT bash tools/probes/probe_fp8_cluster.sh
# 1. probe_fp8_cluster.py: the variants checked on odd shapes, then timed beside lesson 34 and torch._scaled_mm;
# 2. Nsight Compute on one launch each of lesson 34's kernel and the 2-CTA cluster at 8192³: duration, L2 throughput
#    (% of peak), L2 sectors read for the SMs, DRAM bytes (ncu-*.csv in logs.tgz).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,clocks.sm,utilization.gpu,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 300 python tools/probes/probe_fp8_cluster.py "$OUT/cluster.json" > "$OUT/cluster.log" 2>&1
echo "probe rc=$?" | tee -a "$OUT/steps.txt"
grep -v "leaked\|nanobind\|skipped\|refleaks\|reference counting" "$OUT/cluster.log" | tail -14
METRICS=gpu__time_duration.sum,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum,sm__cycles_active.avg
if command -v ncu > /dev/null; then
  i=0
  for who in "lesson 34" "cluster 2, W multicast"; do
    i=$((i + 1))
    timeout 90 ncu --clock-control none --cache-control all --nvtx --nvtx-include "probe/" --metrics "$METRICS" \
        --csv --print-units base python tools/probes/probe_fp8_cluster.py one $who 8192 8192 8192 \
        > "$OUT/ncu-$i.csv" 2> "$OUT/ncu-$i.err"
    echo "ncu $i ($who) rc=$?" | tee -a "$OUT/steps.txt"
  done
fi
python -m gluon_course.measure.ncu --table "$OUT"     # a column per launch, a row per metric
(cd "$OUT" && tar -czf logs.tgz *.csv *.err *.log *.txt 2>/dev/null && rm -f *.csv *.err *.log *.txt)
