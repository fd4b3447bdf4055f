# Lesson 33 (v10) on one H200. Steps (STEPS, default "warmup correct timing", at most 570 s together):
#   warmup   ≤ 300 s  compile every (kernel, B layout, integer specialization) the checks use; seconds per case in
#                     compile.json (Triton's cache keeps them for the next steps)
#   correct  ≤  90 s  steps 1 and 2 with both layouts of B, step 2 on 3 clusters, step 3 grouped and snake: each
#                     case in its own try, correct.json rewritten after each
#   timing   ≤ 180 s  the sweep, v9 / v10.1 / v10.2 / v10.3 grouped / v10.3 snake / cuBLAS, clock and power sampled
#   ncu      ≤ 3 × 180 s, with NCU=1 (or STEPS=ncu): L2 read sectors of one launch each of v9, step 1 (ping-pong,
#            step 2's tiles without the cluster) and step 2 at 8192³ (NCU_VERSIONS="v9 pingpong cluster" by default)
#   record   with RECORD=1, only if correct passed: `record 33` (several minutes more)
# Run from a clean tree: OUT=... bash tools/gpu/session-v10.sh     then   OUT=... STEPS=ncu bash tools/gpu/session-v10.sh
set -u
export PYTHONPATH=$PWD:${PYTHONPATH:-}
STEPS=${STEPS:-warmup correct timing}
[ "${NCU:-0}" = 1 ] && STEPS="$STEPS ncu"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
step() { local name=$1 limit=$2; shift 2; local t0=$(date +%s); timeout "$limit" "$@" > "$OUT/$name.log" 2>&1; local rc=$?
         echo "$name rc=$rc $(( $(date +%s) - t0 )) s"; return $rc; }
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
ok=1
has warmup && step compile 300 python tools/gpu/v10_timing.py warmup "$OUT/compile.json"
if has correct; then step correct 90 python tools/gpu/v10_timing.py correct "$OUT/correct.json"; ok=$?; fi
has timing && step timing 180 python tools/gpu/v10_timing.py time "$OUT/timing.json" --sweep
if has ncu; then
    if command -v ncu > /dev/null; then
        ncu --version | tail -1 > "$OUT/ncu-version.txt"
        # Ask this Nsight Compute which of the L2 read counters it has (names changed across versions): L2 sectors
        # read by requests from the SMs (srcunit_tex), all L2 sectors read, DRAM bytes read.
        ncu --query-metrics --chip gh100 > "$OUT/ncu-metrics.txt" 2>&1
        metrics=""
        for m in lts__t_sectors_srcunit_tex_op_read lts__t_sectors_op_read dram__bytes_read; do
            grep -q "^$m " "$OUT/ncu-metrics.txt" && metrics="$metrics${metrics:+,}$m.sum"
        done
        echo "ncu metrics: ${metrics:-none found}"
        for v in ${NCU_VERSIONS:-v9 pingpong cluster}; do
            step "ncu-$v" 180 ncu --metrics "${metrics:-lts__t_sectors_srcunit_tex_op_read.sum}" --csv --page raw \
                --kernel-name "regex:^(matmul_kernel|pingpong_kernel|cluster_kernel)$" --launch-skip 1 --launch-count 1 \
                python tools/gpu/v10_timing.py once "$v"
            grep -E "lts__|dram__" "$OUT/ncu-$v.log" | cut -c1-300
        done
    else
        echo "ncu: not on PATH, step skipped"
    fi
fi
if [ "$ok" -eq 0 ] && [ "${RECORD:-0}" = 1 ]; then step record 590 python -m gluon_course record 33; fi
[ -f "$OUT/compile.log" ] && cut -c1-200 "$OUT/compile.log"
[ -f "$OUT/correct.log" ] && cut -c1-200 "$OUT/correct.log"
[ -f "$OUT/timing.log" ] && sed -n '/^summary/,$p' "$OUT/timing.log"
exit 0
