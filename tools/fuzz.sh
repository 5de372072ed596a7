#!/usr/bin/env bash
# Builds the libFuzzer targets (Clang, ASan + UBSan; fuzz/README.md) in build-fuzz/ and runs each.
#
#   tools/fuzz.sh [SECONDS_PER_TARGET]   run each target for that long (default 60), new seed
#   tools/fuzz.sh --ci                   a fixed seed and a fixed number of runs per target, so the
#                                        result is the same on every run (what CI does)
#
# Inputs that crash a target are left in fuzz/findings/<target>/ and the script exits 1; once the
# bug is fixed, move the input to fuzz/regressions/<target>/, where the test suite replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=time
seconds=60
if [ "${1:-}" = "--ci" ]; then mode=ci; elif [ -n "${1:-}" ]; then seconds=$1; fi
targets=(npy npz edge_list metis ogb manifest config)

if ! command -v clang++ > /dev/null; then
  echo "tools/fuzz.sh: clang++ is missing (Debian: clang, libclang-rt-14-dev)" >&2
  exit 1
fi
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DSKIFF_FUZZ=ON -DSKIFF_CUDA=OFF \
  -DSKIFF_MPI=OFF -DBUILD_TESTING=OFF > build-fuzz.log 2>&1 || { cat build-fuzz.log; exit 1; }
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]/#/fuzz_}" >> build-fuzz.log 2>&1 ||
  { tail -50 build-fuzz.log; exit 1; }

status=0
for target in "${targets[@]}"; do
  findings=fuzz/findings/$target
  work=$(mktemp -d)
  mkdir -p "$findings"
  if [ "$mode" = ci ]; then
    # The text readers open a 4 MiB read buffer per input (~100 inputs/s under ASan), the binary
    # ones run thousands per second: about 20 s each either way.
    case $target in
      edge_list | metis | ogb) runs=2000 ;;
      *) runs=100000 ;;
    esac
    budget=(-seed=1 -runs=$runs)
  else
    budget=(-max_total_time="$seconds")
  fi
  # New inputs go to a scratch corpus; the repository's corpus is only read.
  if ! build-fuzz/fuzz/fuzz_"$target" "${budget[@]}" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$findings/" "$work" "fuzz/corpus/$target" > "$work.log" 2>&1; then
    echo "fuzz_$target: FAILED (inputs in $findings/)"
    tail -40 "$work.log"
    status=1
  else
    echo "fuzz_$target: $(grep -E '^Done|^#[0-9]+.*DONE' "$work.log" | tail -1)"
  fi
  rm -rf "$work" "$work.log"
  rmdir "$findings" 2> /dev/null || true
done
exit $status
