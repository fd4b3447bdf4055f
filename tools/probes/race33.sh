# One GPU call: racecheck on lesson 33's sanitizer launch (cluster_kernel, 129×520×200 on 2 clusters), twice, each
# run's whole output kept (the check keeps one line of it), packed into $OUT/race33.tgz.
OUT=${OUT:-gpu-out}; mkdir -p "$OUT/race33"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
for run in 1 2; do
  t0=$(date +%s)
  timeout 150 compute-sanitizer --tool racecheck --target-processes all --report-api-errors no \
    python -m gluon_course.measure.isolated gluon_course/grading/tma_gemm.py:small_launch \
    solutions/33-past-the-library/solution.py 129 520 200 2 > "$OUT/race33/run$run.txt" 2>&1
  echo "run $run rc=$? $(( $(date +%s) - t0 )) s: $(grep -c 'Race reported' "$OUT/race33/run$run.txt") reports"
  grep -E "Race reported|and \w+ access|RACECHECK SUMMARY" "$OUT/race33/run$run.txt" | sort | uniq -c | head -12
done
(cd "$OUT" && tar -czf race33.tgz race33 && rm -rf race33)
