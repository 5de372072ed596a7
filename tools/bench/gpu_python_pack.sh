#!/usr/bin/env bash
# Packs the Python package and the skiff executable for the GPU machine (tools/bench/gpu_python.sh):
# the wheel's files (built for that machine's Python, 3.12: python3.12 -m pip wheel ...) under
# site/, skiff and libskiff_cuda.so, and every shared library they need that the machine lacks,
# into .pack/pypack, compressed to .pack/py.tar.xz.
#
#   tools/bench/gpu_python_pack.sh WHEEL [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
wheel=$1
build=${2:-$root/build}
packer=${PACKER:-$root/../shared/tools/device-pack}
out=$root/.pack/pypack
rm -rf "$out" "$root/.pack/py.tar.xz"
mkdir -p "$out/site"
python3 -m zipfile -e "$wheel" "$out/site"
ext=$(ls "$out"/site/skiff/_skiff.*.so)
chmod +x "$ext"
"$packer" "$out" "$build/skiff" "$ext" >/dev/null
rm -f "$out/bin/$(basename "$ext")"  # the extension stays in the package; its libraries are in lib/
cp -f "$build/libskiff_cuda.so" "$out/bin/"
strip --strip-unneeded "$out/bin/"* "$out/lib/"* "$ext" 2>/dev/null || true
"$out/run" skiff --version >/dev/null
tar -C "$root/.pack" -cJf "$root/.pack/py.tar.xz" pypack
echo "gpu_python_pack: $(du -sh "$root/.pack/py.tar.xz" | cut -f1) in .pack/py.tar.xz"
