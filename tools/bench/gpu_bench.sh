#!/usr/bin/env bash
# What a GPU machine runs to produce the CUDA figures: builds the CUDA targets (unless
# SKIFF_BUILD_DIR already holds them), runs the GPU correctness suite, then the aggregation
# benchmark (CSR aggregation vs cuSPARSE SpMM, backward paths). Everything goes to stdout.
#
#   tools/bench/gpu_bench.sh [build-dir]          (default: build)
#
# With SANITIZE=1, compute-sanitizer then runs memcheck over every case but the benchmark and the
# deliberate out-of-memory one (or SANITIZE_CASES, doctest filters) and racecheck over the
# sampler's (its kernels use atomics, no shared memory: quick); the aggregation cases take minutes
# under racecheck (tools/bench/gpu_checks.sh runs them within a time cap).
#
# Exit status: 0 when the suite passes and the benchmark ran; 77 when there is no CUDA device;
# otherwise the failing step's status.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-${SKIFF_BUILD_DIR:-$root/build}}"
tests="$build/tests/skiff_gpu_tests"

echo "== gpu_bench $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv,noheader || true
else
  echo "nvidia-smi: not found"
fi

if [[ ! -x "$tests" ]]; then
  echo "== building skiff_gpu_tests in $build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSKIFF_CUDA=ON
  ninja -C "$build" skiff_gpu_tests
fi

# A binary built elsewhere (carried over) may need CUDA libraries that live outside the loader's
# path on this machine, e.g. in a Python environment's nvidia/*/lib directories: find and add them.
missing="$(ldd "$tests" | awk '/not found/ {print $1}')"
for lib in $missing; do
  dir="$(find /usr /opt /root /home -xdev -name "$lib" -print -quit 2>/dev/null | xargs -r dirname)"
  if [[ -n "$dir" ]]; then
    echo "== adding $dir to LD_LIBRARY_PATH (for $lib)"
    export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
done
if ldd "$tests" | grep 'not found'; then
  echo "== shared libraries missing for $tests (listed above)"
  exit 1
fi

echo "== correctness: $tests"
set +e
"$tests" 2>&1
status=$?
set -e
if [[ $status -eq 77 ]]; then
  echo "== no usable CUDA device (reason above; a driver older than the CUDA runtime also lands here): nothing measured"
  exit 77
elif [[ $status -ne 0 ]]; then
  echo "== GPU tests FAILED (status $status); benchmarks not run: figures from failing kernels mean nothing"
  exit "$status"
fi

if [[ ${SANITIZE:-0} == 1 ]]; then
  cases=${SANITIZE_CASES:-*}
  echo "== compute-sanitizer memcheck: $cases"
  compute-sanitizer --tool memcheck --error-exitcode 3 "$tests" --test-case="$cases" \
    --test-case-exclude="perf:*,DeviceArena larger than the device*" 2>&1 | tail -20
  echo "== compute-sanitizer racecheck: device sampler*"
  compute-sanitizer --tool racecheck --error-exitcode 3 "$tests" --test-case="device sampler*" 2>&1 |
    tail -20
fi

echo "== benchmark: $tests --perf"
"$tests" --perf 2>&1
echo "== done"
