# One GPU call: tune lesson 19's tiles, then grade lessons 18 and 19 (their solutions) on the GPU, timing each step.
set -u
export PYTHONPATH=$PWD:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,utilization.gpu,memory.used --format=csv,noheader
nvidia-smi --query-compute-apps=pid,name --format=csv,noheader
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; echo "$name rc=$? $(( $(date +%s) - t0 )) s"; }
step tune-b 240 python tools/gpu/tune.py "$OUT/tune-b.json" tools/gpu/plans/2026-12-01-b.json
step check18 150 python -m gluon_course check 18 --solution
step check19 170 python -m gluon_course check 19 --solution
grep -h "^  \|passed" "$OUT/check18.log" "$OUT/check19.log" | grep -v "✓ sm_90\|✓ your\|✓ in the host" | cut -c1-230
sed -n '/^summary/,$p' "$OUT/tune-b.log"
