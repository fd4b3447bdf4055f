# One GPU call: the README's notebook test, live. nbval re-executes the notebooks on this GPU and compares every cell
# with the committed outputs (tests/nbval_sanitize.cfg masks the measured numbers, not the words or the verdicts).
#
#   OUT=gpu-out bash tools/gpu/nbval.sh lessons/0*/lesson.ipynb
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
source tools/gpu/compile_cache_env.sh         # the AMD compiles stored on a CPU machine
nvidia-smi --query-compute-apps=pid,name --format=csv,noheader > "$OUT/apps-nbval.txt" 2>&1
start=$(date +%s)
timeout "${NBVAL_LIMIT:-560}" python -m pytest --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
    -p no:cacheprovider -q "$@" > "$OUT/nbval.log" 2>&1
echo "nbval rc=$? in $(( $(date +%s) - start )) s"
grep -E "passed|failed" "$OUT/nbval.log" | tail -3
grep -E "^FAILED" "$OUT/nbval.log" | head -20
