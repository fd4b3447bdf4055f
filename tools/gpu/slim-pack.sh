#!/usr/bin/env bash
# The tree a GPU call carries (tracked files + the packed folder) must stay under 64 MiB. This builds a lean copy of
# .device/ in .device-lean/ (git-ignored): the Triton archive without nvdisasm (5 MB: where the wheel's nvdisasm is
# missing, the toolkit disassembles with Triton's cuobjdump -sass, which stays, as it did before it read nvdisasm's
# listings; cuobjdump -sass then runs the nvdisasm on PATH or NVDISASM_PATH, and SASS listings by line need one:
# the CUDA toolkit's, see below), without the CUDA
# headers but cuda.h (the launcher's C code includes only that one), and with the notebook packages' wheels inside
# the archive, re-zipped uncompressed so that xz compresses their sources (4.6 MB of wheels become about 3 MB). Its
# activate.sh unpacks the archive and pip-installs the wheels it holds. On the GPU machine point Triton at the CUDA
# toolkit's own nvdisasm before sourcing it:
#   export TRITON_NVDISASM_PATH=$(command -v nvdisasm || ls /usr/local/cuda*/bin/nvdisasm | head -1)
# Run from the project root after packing .device/ (about 3 minutes on 2 cores: xz -9e).
set -euo pipefail
tarball=$(ls .device/triton-*.tar.xz)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root/wheels" "$work/x" .device-lean
tar -xJf "$tarball" -C "$work/root"
rm -f "$work"/root/triton/backends/nvidia/bin/nvdisasm
find "$work"/root/triton/backends/nvidia/include -mindepth 1 -not -name cuda.h -delete
for w in .device/wheels/*.whl; do
  rm -rf "$work/x" && mkdir "$work/x"
  (cd "$work/x" && unzip -q "$OLDPWD/$w" && zip -q -0 -r -X "$work/root/wheels/$(basename "$w")" .)
done
(cd "$work/root" && tar -cf - triton triton-*.dist-info wheels | xz -9e -T2 > "$work/new.tar.xz")
mv "$work/new.tar.xz" ".device-lean/$(basename "$tarball")"
# .device/activate.sh, its wheels now taken from inside the unpacked archive (and removed from it once installed)
sed -E 's#--target ([^ ]+) "\$_d"/wheels/\*\.whl#--target \1 \1/wheels/*.whl \&\& rm -rf \1/wheels#' \
  .device/activate.sh > .device-lean/activate.sh
grep -q '/wheels/\*\.whl && rm -rf' .device-lean/activate.sh || { echo "activate.sh not as expected" >&2; exit 1; }
echo "$(du -sb .device-lean | cut -f1) bytes in .device-lean/, $(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1) tracked"
