# Sourced by the GPU scripts that execute notebooks (nbval.sh, nbval_each.sh, record.sh): a Triton without AMD's code
# generator (the GPU machine's) reads the gfx950/gfx942 compiles a full Triton stored (tools/gpu/compile_store.sh, on
# a CPU machine first; see gluon_course.machine.compile). compile_store.sh packs them into
# .device/compile-cache.tar.xz for the call; unpacked here, beside it, when the folder is not there yet (the
# .device/activate.sh that pack-for-gpu.sh writes does not unpack it).
export GLUON_COURSE_COMPILE_CACHE=${GLUON_COURSE_COMPILE_CACHE:-$PWD/.device/compile-cache}
if [[ $GLUON_COURSE_COMPILE_CACHE == $PWD/.device/compile-cache && ! -d .device/compile-cache \
      && -f .device/compile-cache.tar.xz ]]; then
  tar -xJf .device/compile-cache.tar.xz -C .device
fi
