# One GPU call (about 2 minutes), after `source .device/activate.sh`:
#   OUT=$OUT bash tools/probes/probe_streamk_ncu.sh
# Lesson 32's open question: why its stream-K was slower than the table's entries where the re-tune of 2026-12-02
# timed it. Nsight Compute on one cold launch each at 512x6144x4096 of lesson 32's linear with the re-tune's fastest
# stream-K configuration (128 x 128 tiles, 8 warps, 4 slots, STREAM_K = 1), the same tile unsplit, STREAM_K = 2, and
# the table's entry (W_FIRST=0 on the three: stream-K takes no L2 hint): the kernel's own time and what it read from and wrote to HBM. Lesson 34's fp8 probe found its
# fix-up's fp32 partials going out to HBM and back (results/trials/nvidia-h200-2026-12-03-fp8-streamk.json).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,clocks.sm,utilization.gpu,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,launch__grid_size
TILE=BLOCK_M=128,BLOCK_N=128,STAGES=4,num_warps=8,W_FIRST=0
i=0
# Stream-K's launches go through probe_streamk.py (its kernel left lesson 32 for it), the others through lesson 32's
# linear (probe_decode.py).
for who in "ours@$TILE" "streamk@$TILE,STREAM_K=1" "streamk@$TILE,STREAM_K=2" ours; do
  i=$((i + 1))
  case $who in
    streamk@*) launch=(tools/probes/probe_streamk.py one "${who#streamk@}" 512 6144 4096) ;;
    *) launch=(tools/probes/probe_decode.py one "$who" 512 6144 4096) ;;
  esac
  timeout 90 ncu --clock-control none --cache-control all --nvtx --nvtx-include "probe/" --metrics "$METRICS" \
      --csv --print-units base python "${launch[@]}" > "$OUT/ncu-$i.csv" 2> "$OUT/ncu-$i.err"
  echo "ncu $i ($who) rc=$?" | tee -a "$OUT/steps.txt"
done
python -m gluon_course.measure.ncu --table "$OUT"     # a column per launch, a row per metric
(cd "$OUT" && tar -czf logs.tgz *.csv *.err *.txt 2>/dev/null && rm -f *.csv *.err *.txt)
