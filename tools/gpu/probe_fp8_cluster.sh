# One GPU call (about 2 minutes), after `source .device/activate.sh`:
#   OUT=$OUT bash tools/gpu/probe_fp8_cluster.sh
# 1. probe_fp8_cluster.py: the variants checked on odd shapes, then timed beside lesson 34 and torch._scaled_mm;
# 2. Nsight Compute on one launch each of lesson 34's kernel and the 2-CTA cluster at 8192³: duration, L2 throughput
#    (% of peak), L2 sectors read for the SMs, DRAM bytes (ncu-*.csv in logs.tgz).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,clocks.sm,utilization.gpu,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 300 python tools/gpu/probe_fp8_cluster.py "$OUT/cluster.json" > "$OUT/cluster.log" 2>&1
echo "probe rc=$?" | tee -a "$OUT/steps.txt"
grep -v "leaked\|nanobind\|skipped\|refleaks\|reference counting" "$OUT/cluster.log" | tail -14
METRICS=gpu__time_duration.sum,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum,sm__cycles_active.avg
if command -v ncu > /dev/null; then
  i=0
  for who in "lesson 34" "cluster 2, W multicast"; do
    i=$((i + 1))
    timeout 90 ncu --clock-control none --cache-control all --nvtx --nvtx-include "probe/" --metrics "$METRICS" \
        --csv --print-units base python tools/gpu/probe_fp8_cluster.py one $who 8192 8192 8192 \
        > "$OUT/ncu-$i.csv" 2> "$OUT/ncu-$i.err"
    echo "ncu $i ($who) rc=$?" | tee -a "$OUT/steps.txt"
  done
fi
python - "$OUT" <<'PY'
import csv, glob, io, os, sys
out = sys.argv[1]
names = {l.split(" ", 2)[1]: l.split("(", 1)[1].rsplit(")", 1)[0] for l in open(os.path.join(out, "steps.txt"))
         if l.startswith("ncu ")}
print(f"{'launch':28} {'us':>8} {'L2 % peak':>9} {'L2 rd MiB (SMs)':>15} {'DRAM rd MiB':>11}")
for path in sorted(glob.glob(os.path.join(out, "ncu-*.csv"))):
    rows = list(csv.reader(io.StringIO("\n".join(l for l in open(path).read().splitlines() if l.startswith('"')))))
    tag = names.get(os.path.basename(path)[4:-4], "?")
    if not rows:
        print(tag.ljust(28), "no rows"); continue
    m = {}
    for r in rows[1:]:
        d = dict(zip(rows[0], r)); m[d["Metric Name"]] = float(d["Metric Value"].replace(",", ""))
    print(tag[:28].ljust(28), f"{m['gpu__time_duration.sum'] / 1e3:8.1f}",
          f"{m['lts__t_sectors.avg.pct_of_peak_sustained_elapsed']:9.1f}",
          f"{m['lts__t_sectors_srcunit_tex_op_read.sum'] * 32 / 2**20:15.1f}", f"{m['dram__bytes_read.sum'] / 2**20:11.1f}")
PY
(cd "$OUT" && tar -czf logs.tgz *.csv *.err *.log *.txt 2>/dev/null && rm -f *.csv *.err *.log *.txt)
