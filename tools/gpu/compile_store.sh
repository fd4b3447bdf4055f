# On a CPU machine with the full triton==3.9.0 (AMD's code generator included), before a GPU call that runs notebooks
# with gfx950/gfx942 cells (lessons 01-05 and 30): execute those notebooks into throwaway copies with
# GLUON_COURSE_COMPILE_CACHE set, so that every AMD compile they make is stored under .device/compile-cache, which the
# GPU machine (whose Triton has no AMD code generator) reads. The committed notebooks are not touched.
#
#   bash tools/gpu/compile_store.sh 01 02 03 04 05 30      (then carry .device as usual)
set -u
export GLUON_COURSE_COMPILE_CACHE=${GLUON_COURSE_COMPILE_CACHE:-$PWD/.device/compile-cache}
# the compiles stored before (packed at the end of the last run) are kept: a run for one lesson adds to them
if [[ $GLUON_COURSE_COMPILE_CACHE == $PWD/.device/compile-cache && ! -d .device/compile-cache && -f .device/compile-cache.tar.xz ]]; then
  tar -xJf .device/compile-cache.tar.xz -C .device
fi
scratch=$(mktemp -d)
for n in "$@"; do
  nb=$(ls lessons/$n-*/lesson.ipynb)
  timeout 900 .venv/bin/jupyter nbconvert --to notebook --execute "$nb" --output-dir "$scratch" \
      --ExecutePreprocessor.timeout=600 > /dev/null 2>&1 || echo "$nb: execution failed (see nbconvert)"
done
rm -rf "$scratch"
echo "$(ls "$GLUON_COURSE_COMPILE_CACHE" | wc -l) compiles stored in $GLUON_COURSE_COMPILE_CACHE"
# packed for the call (a call carries at most 64 MiB; the JSON packs about 15 to 1), the folder removed so that it is
# not carried as well; tools/gpu/compile_cache_env.sh unpacks it on the GPU machine
if [[ $GLUON_COURSE_COMPILE_CACHE == $PWD/.device/compile-cache ]]; then
  tar -cJf .device/compile-cache.tar.xz -C .device compile-cache && rm -rf .device/compile-cache
fi
