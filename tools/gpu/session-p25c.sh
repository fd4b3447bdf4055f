# One GPU call for what the 2026-12-02 session left unrun (issue 25), after `source .device/activate.sh`, and on a
# CPU machine first `bash tools/gpu/compile_store.sh 30` (lesson 30's AMD cells read those compiles):
#
#   export PYTHONPATH=$PWD:$PYTHONPATH GLUON_COURSE_COMMIT=<sha> && OUT=$OUT bash tools/gpu/session-p25c.sh
#
# (a) where do_bench's figure exceeds the kernel's own time on the mid-M shapes (probe_bench_gap.py, ≤ 150 s);
# (b) lesson 30's notebook under nbval, live (≤ 330 s on a cold machine).
set -u
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,clocks.sm,power.draw,utilization.gpu,memory.used --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 150 python tools/gpu/probe_bench_gap.py "$OUT/bench-gap.json" > "$OUT/bench-gap.log" 2>&1
echo "bench-gap rc=$?" | tee -a "$OUT/steps.txt"
OUT=$OUT NBVAL_LIMIT=330 bash tools/gpu/nbval_each.sh 30 | tee -a "$OUT/steps.txt"
echo "---- summary"
cat "$OUT/steps.txt"
grep -v nanobind "$OUT/bench-gap.log" | tail -14
