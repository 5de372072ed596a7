#!/usr/bin/env bash
# Configures and builds Skiff in ./build (Release with debug info). Extra arguments go to cmake,
# e.g. tools/build.sh -DSKIFF_CUDA=OFF. SKIFF_TARGETS (e.g. "skiff") builds only those targets and
# what they need; unset, everything (the executable, tests, fuzz replays, GPU tests).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
mkdir -p build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >build/configure.log 2>&1 || {
  cat build/configure.log; exit 1; }
grep -E "Skiff CUDA kernels" build/configure.log || true
targets=()
for t in ${SKIFF_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build build -j "$(nproc)" "${targets[@]}"
