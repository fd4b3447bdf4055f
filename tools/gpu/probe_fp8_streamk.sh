# One GPU call (about 2 minutes), after `source .device/activate.sh`:
#   OUT=$OUT bash tools/gpu/probe_fp8_streamk.sh
# 1. probe_fp8_streamk.py --fixup: stream-K's fixup in parts, timed beside torch._scaled_mm (fixup.json);
# 2. Nsight Compute on one cold-L2 launch each of lesson 34's kernel and stream-K 1 with and without its fixup at
#    2048x4096x4096: the kernel's own duration, DRAM and L2 bytes (ncu-*.csv, in logs.tgz).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,clocks.sm,utilization.gpu,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 240 python tools/gpu/probe_fp8_streamk.py --fixup "$OUT/fixup.json" > "$OUT/fixup.log" 2>&1
echo "fixup rc=$?" | tee -a "$OUT/steps.txt"
grep -v "leaked\|nanobind\|skipped\|refleaks\|reference counting" "$OUT/fixup.log" | tail -12
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_atom.sum,sm__cycles_active.avg
if command -v ncu > /dev/null; then
  i=0
  for who in "lesson 34" "stream-K 1" "stream-K 1, partials stored, counted, none read" "stream-K 1, no fixup"; do
    i=$((i + 1))
    # --cache-control all flushes every cache before the launch; --clock-control none leaves the clocks alone.
    timeout 90 ncu --clock-control none --cache-control all --nvtx --nvtx-include "probe/" --metrics "$METRICS" \
        --csv --print-units base python tools/gpu/probe_fp8_streamk.py one $who 2048 4096 4096 \
        > "$OUT/ncu-$i.csv" 2> "$OUT/ncu-$i.err"
    echo "ncu $i ($who) rc=$?" | tee -a "$OUT/steps.txt"
  done
else
  echo "ncu not on PATH" | tee -a "$OUT/steps.txt"
fi
python - "$OUT" <<'PY'
import csv, glob, io, os, sys
out = sys.argv[1]
names = {l.split(" ", 2)[1]: l.split("(", 1)[1].rsplit(")", 1)[0] for l in open(os.path.join(out, "steps.txt"))
         if l.startswith("ncu ")}
print(f"{'launch':50} {'us':>7} {'DRAM rd MiB':>11} {'DRAM wr MiB':>11} {'L2 rd MiB':>9} {'L2 wr MiB':>9} {'atom':>6}")
for path in sorted(glob.glob(os.path.join(out, "ncu-*.csv"))):
    text = open(path).read()
    rows = list(csv.reader(io.StringIO("\n".join(l for l in text.splitlines() if l.startswith('"')))))
    tag = names.get(os.path.basename(path)[4:-4], "?")
    if not rows:
        print(tag.ljust(50), "no rows"); continue
    head, per = rows[0], {}
    for r in rows[1:]:
        d = dict(zip(head, r)); k = (d.get("ID"), d.get("Kernel Name", "")[:40])
        per.setdefault(k, {})[d.get("Metric Name")] = d.get("Metric Value", "").replace(",", "")
    for (_, name), m in per.items():
        f = lambda key, scale=1.0: f"{float(m[key]) / scale:.1f}" if m.get(key) else "-"  # noqa: E731
        print(tag[:50].ljust(50), f("gpu__time_duration.sum", 1e3).rjust(7), f("dram__bytes_read.sum", 2**20).rjust(11),
              f("dram__bytes_write.sum", 2**20).rjust(11), f("lts__t_sectors_op_read.sum", 2**15).rjust(9),
              f("lts__t_sectors_op_write.sum", 2**15).rjust(9), f("lts__t_sectors_op_atom.sum").rjust(6))
PY
(cd "$OUT" && tar -czf logs.tgz *.csv *.err *.log *.txt 2>/dev/null && rm -f *.csv *.err *.log *.txt)
