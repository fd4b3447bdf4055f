# One GPU call: the GPU-caught planted mistakes of the given lessons (tests/test_lessons.py::test_plant_is_rejected),
# one pytest per lesson side by side. A planted hang spends its check's whole child-process limit, so the limit is
# shortened here (GLUON_COURSE_CHILD_LIMIT_S, default 45 s; lesson 19's check doubles it); the solutions' own
# correctness runs finish well inside that on an H200.
#
#   OUT=gpu-out bash tools/gpu/plants.sh 15 16 17 18 19
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD:${PYTHONPATH:-}
export GLUON_COURSE_CHILD_LIMIT_S=${GLUON_COURSE_CHILD_LIMIT_S:-45}
for n in "$@"; do
    timeout "${PLANTS_LIMIT:-280}" python -m pytest -q -p no:cacheprovider -rA tests/test_lessons.py \
        -k "test_plant_is_rejected and $n-" > "$OUT/plants-$n.log" 2>&1 &
done
wait
# A killed pytest leaves its checks' children behind; the bracket keeps this pattern from matching this very line.
pkill -9 -f "measure[.]isolated"
grep -hE "^(PASSED|FAILED|SKIPPED|ERROR)" "$OUT"/plants-*.log | cut -c1-170
grep -hE " (passed|failed)" "$OUT"/plants-*.log
