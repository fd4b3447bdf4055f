#!/usr/bin/env bash
# The tree a GPU call carries (tracked files + the packed folder) must stay under 64 MiB. This builds a lean copy of
# .device/ in .device-lean/ (git-ignored): the Triton archive without nvdisasm (5 MB: only
# SASS listings by line need it; Triton's cuobjdump, which the toolkit disassembles with, stays), without the CUDA
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
cat > .device-lean/activate.sh <<'SH'
# sourced on the GPU machine: unpack once per machine, then put the pinned Triton and the wheels first on the path
_d=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_m=/tmp/course-site/.done-$(cksum < "$_d/triton-3.9.0.tar.xz" | cut -d" " -f1)
if [[ ! -f $_m ]]; then
  rm -rf /tmp/course-site && mkdir -p /tmp/course-site
  tar -xJf "$_d/triton-3.9.0.tar.xz" -C /tmp/course-site
  ls /tmp/course-site/wheels/*.whl >/dev/null 2>&1 && python3 -m pip install -q --no-index --no-deps --no-compile \
    --no-cache-dir --target /tmp/course-site /tmp/course-site/wheels/*.whl
  rm -rf /tmp/course-site/wheels
  touch "$_m"
fi
export PYTHONPATH=/tmp/course-site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
python3 -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__, torch.cuda.get_device_name())"
SH
echo "$(du -sb .device-lean | cut -f1) bytes in .device-lean/, $(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1) tracked"
