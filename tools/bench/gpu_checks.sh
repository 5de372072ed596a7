#!/usr/bin/env bash
# Every GPU check in one call, within a time budget: what to run on a GPU machine that is available
# for a short while (starting one costs minutes, so one call should do everything). Phases, in the
# order of what is most wanted, each under `timeout` for what is left of the budget:
#   tests     skiff_gpu_tests, every case (kernels vs CPU, CUDA model, device sampler, row cache)
#   gpus      tests/e2e/cuda_gpus.sh: --gpus 0 (the multi-GPU path with one GPU) against the plain
#             --device cuda run, --accumulate 2 on the GPU, and --gpus 0,1 where there are two GPUs
#   predict   tests/e2e/cuda_predict.sh: skiff predict --device cuda against train --export and
#             against the CPU (the one e2e test that needs a GPU; it skips in CI)
#   e2e       one round of tools/bench/gpu_e2e.sh at the GPU bar's setting, TF32, 3 epochs:
#             --sampler device, --sampler host, --sampler device --memory 141MiB, the row cache
#             (--device-memory 256MiB, in memory and at --memory 512MiB), and the PyG peer
#   memcheck  compute-sanitizer memcheck over every test case but the benchmark and the deliberate
#             out-of-memory one (whose failed cudaMalloc memcheck reports as an API error)
#   racecheck compute-sanitizer racecheck, the device sampler's cases first, then every other case,
#             the three slowest last, within RACECHECK_S (default 180) of the budget; the log lists
#             each case that finished (doctest --duration), so a run cut short says how far it got
#             (RACECHECK_CASES="filter|filter": only those cases)
#   (sanitize: both)
#   perf      skiff_gpu_tests --perf: aggregation vs cuSPARSE (forward and backward), then the
#             gather and scatter launch-tuning sweeps (estimated 2-3 minutes on an H200 in all)
# Each phase's output goes to OUT_DIR/PHASE.log, and a summary line per phase to stdout and
# OUT_DIR/summary.txt. A phase that fails or runs out of time is reported and the next one runs.
#
#   tools/bench/gpu_checks.sh OUT_DIR
#
# With a build packed by tools/bench/gpu_pack.sh (here), on the GPU machine:
#   tar -xJf .pack/gpu.tar.xz -C /tmp &&
#     SKIFF="/tmp/gpu/run skiff" GPU_TESTS="/tmp/gpu/run skiff_gpu_tests" tools/bench/gpu_checks.sh OUT
# It writes at most 9 files to OUT_DIR (the summary, one log per phase, the e2e summary).
#
# Environment: SKIFF (the command that runs skiff; default build/skiff, e.g. "pack/run skiff"),
# GPU_TESTS (skiff_gpu_tests; default build/tests/skiff_gpu_tests, or "pack/run skiff_gpu_tests"),
# BUDGET_S (seconds for all phases; default 540), PHASES (default "tests gpus memcheck racecheck
# predict e2e perf": the sanitizers before the end-to-end runs, whose bars were measured on an H200),
# DATA (where gpu_e2e.sh keeps its dataset; default /tmp/skiff-gpu-e2e), PERF_CASES (doctest
# filters, comma-separated, e.g. "perf: CSR aggregation*,perf: scatter*": only those benchmarks).
# gpu_e2e.sh's own variables (SAMPLERS, MEMORY, MEMORY_SAMPLERS, CACHE, CACHE_MEMORY) pass through.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out=${1:?usage: gpu_checks.sh OUT_DIR}
mkdir -p "$out"
gpu_tests=${GPU_TESTS:-$root/build/tests/skiff_gpu_tests}
budget=${BUDGET_S:-540}
start=$SECONDS

left() { echo $((budget - (SECONDS - start))); }

# run PHASE COMMAND...: runs the command under the time left, logs it, prints the summary line.
run() {
  local phase=$1
  shift
  local t=$(left)
  if ((t < 20)); then
    echo "$phase: skipped (budget spent)" | tee -a "$out/summary.txt"
    return
  fi
  local t0=$SECONDS
  timeout --kill-after=10 "$t" "$@" >"$out/$phase.log" 2>&1
  local rc=$?
  local verdict="ok"
  ((rc == 124 || rc == 137)) && verdict="OUT OF TIME after ${t}s"
  ((rc == 77)) && verdict="no usable CUDA device (status 77: GPU cases skipped)"
  ((rc != 0 && rc != 77 && rc != 124 && rc != 137)) && verdict="FAILED (status $rc)"
  echo "$phase: $verdict in $((SECONDS - t0))s; log $out/$phase.log" | tee -a "$out/summary.txt"
}

echo "== gpu_checks $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown), budget ${budget}s" |
  tee "$out/summary.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 |
  tee -a "$out/summary.txt"

memcheck() {
  run memcheck compute-sanitizer --tool memcheck --error-exitcode 3 $gpu_tests --duration=true \
    --test-case-exclude="perf:*,DeviceArena larger than the device*"
}

# racecheck: the sampler's cases, then the rest but the slow ones under it, then the slow ones one
# run each, cheapest first (the tuning test over its small blocks, the Adam steps case, the tuning
# test over its power-law block: each of the last two over 60 s under racecheck on an H200), those
# runs under a cap of their own (RACECHECK_S); all logged to racecheck.log. RACECHECK_CASES (doctest
# test-case filters separated by '|') replaces the list: one run per filter, in that order.
racecheck_slow=("Spmm gather*small blocks" "cuda model: a few Adam*" "Spmm gather*power-law*")
racecheck() {
  local all="$out/racecheck.all.log"
  local filters=()
  if [[ -n ${RACECHECK_CASES:-} ]]; then
    IFS='|' read -r -a filters <<<"$RACECHECK_CASES"
  else
    racecheck_one "device sampler*"
    racecheck_keep "$all"
    local slow
    slow=$(IFS=,; echo "${racecheck_slow[*]}")
    run racecheck compute-sanitizer --tool racecheck --error-exitcode 3 $gpu_tests --duration=true \
      --test-case-exclude="perf:*,device sampler*,DeviceArena larger than the device*,$slow"
    racecheck_keep "$all"
    filters=("${racecheck_slow[@]}")
  fi
  local saved=$budget
  budget=$((SECONDS - start + $(min "$(left)" "${RACECHECK_S:-180}")))
  for filter in "${filters[@]}"; do
    racecheck_one "$filter"
    racecheck_keep "$all"
  done
  budget=$saved
  mv "$all" "$out/racecheck.log"
}

# One racecheck run over the test cases that match the doctest filter $1.
racecheck_one() {
  run racecheck compute-sanitizer --tool racecheck --error-exitcode 3 $gpu_tests --duration=true \
    --test-case="$1"
}

# Appends racecheck.log (absent when a run was skipped for want of budget) to the file $1.
racecheck_keep() {
  touch "$out/racecheck.log"
  cat "$out/racecheck.log" >>"$1"
  rm -f "$out/racecheck.log"
}

min() { echo $(($1 < $2 ? $1 : $2)); }

for phase in ${PHASES:-tests gpus memcheck racecheck predict e2e perf}; do
  case $phase in
    tests) run tests $gpu_tests ;;
    gpus) run gpus bash "$root/tests/e2e/cuda_gpus.sh" "${SKIFF:-$root/build/skiff}" none \
      "${DATA:-/tmp/skiff-gpu-e2e}-gpus" ;;
    predict) run predict bash "$root/tests/e2e/cuda_predict.sh" "${SKIFF:-$root/build/skiff}" none \
      "${DATA:-/tmp/skiff-gpu-e2e}-predict" ;;
    e2e)
      run e2e env EPOCHS=3 MATMUL=tf32 bash "$root/tools/bench/gpu_e2e.sh" "${DATA:-/tmp/skiff-gpu-e2e}" 1
      grep -E '^== |samples/s|pyg_peer|training pass|bound by|peak RSS|resident at exit|device row cache|FAILED' \
        "$out/e2e.log" | grep -v '^\s*$' >"$out/e2e.summary.txt" || true
      ;;
    memcheck) memcheck ;;
    racecheck) racecheck ;;
    sanitize)
      memcheck
      racecheck
      ;;
    perf)
      if [[ -n ${PERF_CASES:-} ]]; then
        run perf $gpu_tests --no-skip=true --test-case="$PERF_CASES"
      else
        run perf $gpu_tests --perf
      fi
      ;;
    *) echo "unknown phase '$phase' (expected tests, gpus, memcheck, racecheck, sanitize, predict, e2e or perf)" | tee -a "$out/summary.txt" ;;
  esac
done
echo "== done in $((SECONDS - start))s" | tee -a "$out/summary.txt"
