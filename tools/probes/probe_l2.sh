# One GPU call (about 2 minutes), after `source .device/activate.sh`: Nsight Compute on one cold-cache launch each at
# SHAPE (default 512 6144 4096) of lesson 32's linear with its table's configuration, with each configuration named
# in CONFIGS (as probe_decode.py's ours@...), and of F.linear: the kernel's duration, L2 sectors read for the SMs,
# L2 throughput, DRAM bytes, grid and cluster size. Writes $OUT/l2-*.csv and prints a table.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
SHAPE=${SHAPE:-512 6144 4096}
CONFIGS=${CONFIGS:-"ours@BLOCK_M=64,BLOCK_N=128,BLOCK_K=64,STAGES=8,num_warps=4"}
METRICS=gpu__time_duration.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_op_read.sum,dram__bytes_read.sum
METRICS=$METRICS,lts__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__cluster_size
i=0
for who in ours $CONFIGS flinear; do
  i=$((i + 1))
  timeout 120 ncu --clock-control none --cache-control all --nvtx --nvtx-include "probe/" --metrics "$METRICS" \
      --csv --print-units base python tools/probes/probe_decode.py one "$who" $SHAPE > "$OUT/l2-$i.csv" 2> "$OUT/l2-$i.err"
  echo "ncu $i $who rc=$?" | tee -a "$OUT/steps.txt"
done
python - "$OUT" <<'PY'
import csv, glob, io, os, sys
out = sys.argv[1]
short = {"gpu__time_duration.sum": "ns", "lts__t_sectors_srcunit_tex_op_read.sum": "L2 sectors (SMs)",
         "lts__t_sectors_op_read.sum": "L2 sectors", "dram__bytes_read.sum": "DRAM bytes",
         "lts__throughput.avg.pct_of_peak_sustained_elapsed": "L2 %peak", "launch__grid_size": "grid",
         "launch__cluster_size": "cluster"}
for path in sorted(glob.glob(os.path.join(out, "l2-*.csv"))):
    text = open(path).read()
    rows = list(csv.reader(io.StringIO("\n".join(l for l in text.splitlines() if l.startswith('"')))))
    if not rows:
        print(os.path.basename(path), "no rows"); continue
    head, per = rows[0], {}
    for r in rows[1:]:
        d = dict(zip(head, r)); k = (d.get("ID"), d.get("Kernel Name", "")[:60])
        name = short.get(d.get("Metric Name"), d.get("Metric Name"))
        per.setdefault(k, {})[name] = d.get("Metric Value", "").replace(",", "")
    for (_, name), m in per.items():
        print(os.path.basename(path), name, m)
PY
