# One GPU call: compute-sanitizer racecheck on each minimal warp-specialized kernel of gluon_course/nvidia/ws_dispatch.py
# and on lesson 18's solution (the launch its sanitizer_clean check runs), one after another, each in its own process
# under timeout; 120 s in all at most. Which minimal kernel, if any, gets racecheck's report between the default
# warps' STS of the dispatch's state word (before the exit BAR.SYNC 1) and the workers' LDS.U8 of it (after theirs)?
#
#   OUT=gpu-out bash tools/probes/race-repro.sh
#
# Logs: $OUT/race-<name>.log (racecheck in hazard-and-analysis mode: each hazard with its threads and PCs). The table
# at the end gives each run's exit status (0 clean, 86 hazards, 124 killed at its limit), racecheck's summary and the
# PCs of the accesses it named; the dispatch's own PCs (CPU compile, the same Triton) are what
# `python -m gluon_course.nvidia.ws_dispatch` prints.
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
SANITIZER=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
BUDGET=${RACE_BUDGET_S:-120}
START=$SECONDS

run() {   # name limit_s target args...
    local name=$1 limit=$2; shift 2
    local left=$((BUDGET - (SECONDS - START)))
    [ "$limit" -gt "$left" ] && limit=$left
    if [ "$limit" -le 0 ]; then echo "not run: the ${BUDGET} s budget was spent" > "$OUT/race-$name.log"; return; fi
    local t0=$SECONDS
    timeout -k 5 "$limit" "$SANITIZER" --tool racecheck --racecheck-report all --error-exitcode 86 \
        --target-processes all --report-api-errors no \
        python -m gluon_course.measure.isolated "$@" > "$OUT/race-$name.log" 2>&1
    echo "exit=$? seconds=$((SECONDS - t0)) limit=$limit" >> "$OUT/race-$name.log"
}

# Minimal kernels: 10 launches of 8 programs each (the ring kernel: 3 tiles a program). ~15 s each is the import,
# the compile and the launches; lesson 18: one 129×520×200 launch on 2 programs, as its check runs it.
for name in plain regs mbarriers ring two_workers; do
    run "$name" 14 gluon_course/nvidia/ws_dispatch.py:launch "$name" 10 8
done
run lesson18 45 gluon_course/grading/tma_gemm.py:small_launch solutions/18-gemm-v8-warp-specialized/solution.py \
    129 520 200 2

echo
printf '%-12s %-28s %-44s %s\n' run status "racecheck summary" "PCs named (count)"
for name in plain regs mbarriers ring two_workers lesson18; do
    log=$OUT/race-$name.log
    status=$(grep -oE "^exit=[0-9]+ seconds=[0-9]+" "$log" | tail -1)
    summary=$(grep -oE "RACECHECK SUMMARY: .*" "$log" | tail -1)
    pcs=$(grep -oE "(Read|Write)[^=]{0,60} at [^ ]+" "$log" | sed -E 's/ Thread \([0-9, ]+\)//; s/ access//' |
          sort | uniq -c | sort -rn | head -4 | awk '{c=$1; $1=""; printf "%s(%s) ", $0, c}')
    printf '%-12s %-28s %-44s %s\n' "$name" "${status:-not run}" "${summary:-none}" "${pcs:--}"
done
