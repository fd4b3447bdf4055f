#!/usr/bin/env bash
# The tree a GPU call carries (tracked files + .device/) must stay under 64 MiB; the course's notebooks grew past what
# .device/'s Triton archive leaves. This takes nvdisasm (4 MB of the archive: only SASS listings need it) out of
# .device/triton-*.tar.xz. On the GPU machine point Triton at the CUDA toolkit's own before sourcing activate.sh:
#   export TRITON_NVDISASM_PATH=$(command -v nvdisasm || ls /usr/local/cuda*/bin/nvdisasm | head -1)
# Run from the project root after packing .device/.
set -euo pipefail
tarball=$(ls .device/triton-*.tar.xz)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
tar -xJf "$tarball" -C "$work"
rm -f "$work"/triton/backends/nvidia/bin/nvdisasm
(cd "$work" && tar -cf - triton triton-*.dist-info | xz -9 -T2 > "$work/new.tar.xz")
mv "$work/new.tar.xz" "$tarball"
echo "$(du -sb .device | cut -f1) bytes in .device/, $(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1) tracked"
