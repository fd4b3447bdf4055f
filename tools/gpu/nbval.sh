# One GPU call: the README's notebook test, live. nbval re-executes the notebooks on this GPU and compares every cell
# with the committed outputs (tests/nbval_sanitize.cfg masks the measured numbers, not the words or the verdicts).
#
#   OUT=gpu-out bash tools/gpu/nbval.sh lessons/0*/lesson.ipynb
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
# A Triton without AMD's code generator (the GPU machine's) reads the gfx950/gfx942 compiles stored here by a full
# Triton (run the same notebooks on a CPU machine with this variable set first; see gluon_course.machine.compile).
export GLUON_COURSE_COMPILE_CACHE=${GLUON_COURSE_COMPILE_CACHE:-$PWD/.device/compile-cache}
nvidia-smi --query-compute-apps=pid,name --format=csv,noheader > "$OUT/apps-nbval.txt" 2>&1
start=$(date +%s)
timeout "${NBVAL_LIMIT:-560}" python -m pytest --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
    -p no:cacheprovider -q "$@" > "$OUT/nbval.log" 2>&1
echo "nbval rc=$? in $(( $(date +%s) - start )) s"
grep -E "passed|failed" "$OUT/nbval.log" | tail -3
grep -E "^FAILED" "$OUT/nbval.log" | head -20
