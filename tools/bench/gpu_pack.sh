#!/usr/bin/env bash
# Packs a CUDA build for a GPU machine that has the NVIDIA driver and CUDA libraries but none of
# Debian's -dev libraries: skiff, skiff_gpu_tests and libskiff_cuda.so (which skiff loads with
# dlopen from beside itself, so ldd-based packers miss it), with the shared libraries they need,
# into OUT_DIR, and compresses it to OUT_DIR.tar.xz when it is too large to carry as it is.
#
#   tools/bench/gpu_pack.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, .pack/gpu)
#
# Then, on the GPU machine (OUT_DIR carried, or OUT_DIR.tar.xz unpacked with tar -xJf):
#   SKIFF="OUT_DIR/run skiff" GPU_TESTS="OUT_DIR/run skiff_gpu_tests" \
#     tools/bench/gpu_checks.sh RESULTS_DIR
#
# Needs PACKER (default ../shared/tools/device-pack beside the checkout): copies executables and
# their non-system, non-CUDA shared libraries and writes OUT_DIR/run. Before packing, this checks
# that the build has the CUDA plugin and that the packed skiff runs here.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build=${1:-$root/build}
out=${2:-$root/.pack/gpu}
packer=${PACKER:-$root/../shared/tools/device-pack}
limit_mib=48 # copied to the GPU machine beside the working tree, 64 MiB in all: leave room for it

for f in "$build/skiff" "$build/tests/skiff_gpu_tests" "$build/libskiff_cuda.so"; do
  [[ -f $f ]] || {
    echo "gpu_pack: $f is missing: configure with -DSKIFF_CUDA=ON and build skiff and" \
      "skiff_gpu_tests" >&2
    exit 1
  }
done
[[ -x $packer ]] || {
  echo "gpu_pack: no packer at $packer (set PACKER)" >&2
  exit 1
}
archs=$(sed -n 's/^SKIFF_CUDA_ARCHITECTURES:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
if [[ -n $archs && ! ";$archs;" =~ \;90[a-z]?\; ]]; then
  echo "gpu_pack: warning: $build was configured with SKIFF_CUDA_ARCHITECTURES=$archs, without 90" \
    "(H100/H200)" >&2
fi

rm -rf "$out" "$out.tar.xz"
"$packer" "$out" "$build/skiff" "$build/tests/skiff_gpu_tests" >/dev/null
cp -f "$build/libskiff_cuda.so" "$out/bin/"
strip --strip-unneeded "$out/bin/"* "$out/lib/libskiff_cuda.so" 2>/dev/null || true

# The packed executables must start here too (without a GPU: the tests skip with status 77).
"$out/run" skiff --version >/dev/null
set +e
"$out/run" skiff_gpu_tests >/dev/null 2>&1
rc=$?
set -e
((rc == 0 || rc == 77)) || {
  echo "gpu_pack: the packed skiff_gpu_tests exited with $rc here" >&2
  exit 1
}

size=$(du -sm "$out" | cut -f1)
if ((size > limit_mib)); then
  tar -C "$(dirname "$out")" -cJf "$out.tar.xz" "$(basename "$out")"
  echo "gpu_pack: $out is ${size} MiB; carry $out.tar.xz ($(du -sh "$out.tar.xz" | cut -f1))" \
    "and unpack it there: tar -xJf $(realpath --relative-to="$root" "$out.tar.xz") -C /tmp"
else
  echo "gpu_pack: $out (${size} MiB) is ready to carry"
fi
