# One GPU call (about 3 minutes), after `source .device/activate.sh`:
#   OUT=$OUT bash tools/probes/probe_fp8_counters.sh
# What Nsight Compute's L2 counters make of a TMA multicast (lessons 33 and 34 saw the count of L2 sectors read for
# the SMs rise with it, where one copy for two CTAs should lower it). Three kernels that differ in one thing each, at
# fp8 8192³: no cluster; a 2-CTA cluster whose first CTA multicasts W's tile into both; the same cluster with each CTA
# copying W's tile itself (the cluster's barriers kept).
# 1. probe_fp8_cluster.py --counters: the three checked on odd shapes, then timed (counters.json);
# 2. ncu on one launch of each, two metric sets (the second has names this H200's ncu may lack: its failure is its own).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,clocks.sm,utilization.gpu,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 200 python tools/probes/probe_fp8_cluster.py --counters "$OUT/counters.json" > "$OUT/counters.log" 2>&1
echo "probe rc=$?" | tee -a "$OUT/steps.txt"
grep -v "leaked\|nanobind\|skipped\|refleaks\|reference counting" "$OUT/counters.log" | tail -8
SET1=gpu__time_duration.sum,lts__t_sectors.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,sm__cycles_active.avg
SET2=lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,l1tex__m_xbar2l1tex_read_bytes.sum,lts__t_bytes.sum
if command -v ncu > /dev/null; then
  i=0
  for who in "coop (lesson 34's tile)" "cluster 2, W multicast" "cluster 2, no multicast"; do
    i=$((i + 1))
    for set in 1 2; do
      metrics=$SET1; [ $set = 2 ] && metrics=$SET2
      timeout 90 ncu --clock-control none --cache-control all --nvtx --nvtx-include "probe/" --metrics "$metrics" \
          --csv --print-units base python tools/probes/probe_fp8_cluster.py one $who 8192 8192 8192 \
          > "$OUT/ncu-$i-$set.csv" 2> "$OUT/ncu-$i-$set.err"
      echo "ncu $i-$set ($who) rc=$?" | tee -a "$OUT/steps.txt"
    done
  done
fi
python -m gluon_course.measure.ncu --table "$OUT"     # a column per launch, a row per metric
(cd "$OUT" && tar -czf logs.tgz *.csv *.err *.log *.txt 2>/dev/null && rm -f *.csv *.err *.log *.txt)
