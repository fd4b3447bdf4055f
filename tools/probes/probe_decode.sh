# One GPU call (about 3 minutes), after `source .device/activate.sh`, from a clean tree:
#   OUT=$OUT bash tools/probes/probe_decode.sh
# 1. which kernels cuBLAS runs for lesson 32's 31 model shapes (cublas-kernels.json);
# 2. Nsight Compute on one cold-L2 launch each of ours, F.linear and torch.sum(W) at 1x4096x4096 and 16x4096x4096:
#    the kernel's own duration, DRAM bytes read, grid (ncu.csv). See probe_decode.py for what each answers.
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,clocks.sm,utilization.gpu,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 120 python tools/probes/probe_decode.py names "$OUT/cublas-kernels.json" > "$OUT/names.log" 2>&1
echo "names rc=$?" | tee -a "$OUT/steps.txt"
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__registers_per_thread,sm__cycles_active.avg
if command -v ncu > /dev/null; then
  for shape in "1 4096 4096" "16 4096 4096"; do
    for who in ours flinear sum; do
      tag="$who-${shape// /x}"
      # --cache-control all flushes every cache before the launch; --clock-control none leaves the clocks alone.
      timeout 90 ncu --clock-control none --cache-control all --nvtx --nvtx-include "probe/" --metrics "$METRICS" \
          --csv --print-units base python tools/probes/probe_decode.py one $who $shape > "$OUT/ncu-$tag.csv" 2> "$OUT/ncu-$tag.err"
      echo "ncu $tag rc=$?" | tee -a "$OUT/steps.txt"
    done
  done
else
  echo "ncu not on PATH" | tee -a "$OUT/steps.txt"
fi
python - "$OUT" <<'PY'
import csv, glob, io, os, sys
out = sys.argv[1]
print(f"{'launch':22} {'kernel':48} {'µs':>7} {'DRAM MiB':>9} {'grid':>6}")
for path in sorted(glob.glob(os.path.join(out, "ncu-*.csv"))):
    text = open(path).read()
    rows = list(csv.reader(io.StringIO("\n".join(l for l in text.splitlines() if l.startswith('"')))))
    if not rows:
        print(os.path.basename(path)[4:-4].ljust(22), "no rows"); continue
    head, per = rows[0], {}
    for r in rows[1:]:
        d = dict(zip(head, r)); k = (d.get("ID"), d.get("Kernel Name", "")[:48])
        per.setdefault(k, {})[d.get("Metric Name")] = d.get("Metric Value", "").replace(",", "")
    for (_, name), m in per.items():
        f = lambda key, scale=1.0: f"{float(m[key]) / scale:.1f}" if m.get(key) else "-"  # noqa: E731
        print(os.path.basename(path)[4:-4].ljust(22), name.ljust(48), f("gpu__time_duration.sum", 1e3).rjust(7),
              f("dram__bytes_read.sum", 2**20).rjust(9), str(m.get("launch__grid_size", "-")).rjust(6))
PY
(cd "$OUT" && tar -czf logs.tgz *.csv *.err *.log *.txt 2>/dev/null && rm -f *.csv *.err *.log *.txt)
