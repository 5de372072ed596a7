#!/usr/bin/env bash
# The GPU checks of link prediction in one call (a GPU machine is lent for minutes):
#   tests    skiff_gpu_tests: every case (the link-score kernels against the CPU among them)
#   memcheck compute-sanitizer memcheck over the link-score cases
#   e2e      tests/e2e/cuda_link.sh: --task link --device cuda against the CPU, export = predict,
#            out of core = in memory
#   speed    one epoch of --task link on a generated graph (NODES, default 500000; the 2M-node
#            bar graph's generator settings otherwise), in memory, for each of SPEED_RUNS (default
#            "cuda cuda-host cpu": the features in device memory, the rows uploaded from the host
#            (--device-memory 1MiB), the CPU with every core): edges/s and each stage's busy seconds
#   cora     tools/bench/link_cora_bar.sh with --device cuda, ten seeds side by side
#            (JOBS=10 THREADS=1); CORA_DEVICES (default "cuda"; "cuda cpu" adds the CPU), extra
#            options in CORA_OPTS
# Each phase runs under `timeout` for what is left of BUDGET_S (default 480); logs and a summary
# go to OUT_DIR.
#
#   tools/bench/gpu_link.sh OUT_DIR
#
# With a build packed by tools/bench/gpu_pack.sh, on the GPU machine:
#   tar -xJf .pack/gpu.tar.xz -C /tmp && SKIFF="/tmp/gpu/run skiff" \
#     GPU_TESTS="/tmp/gpu/run skiff_gpu_tests" CORA=.pack/data/cora.npz tools/bench/gpu_link.sh OUT
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
skiff=${SKIFF:-$root/build/skiff}
read -ra skiff_cmd <<<"$skiff"
gpu_tests=${GPU_TESTS:-$root/build/tests/skiff_gpu_tests}
budget=${BUDGET_S:-480}
work=${WORK:-/tmp/skiff-gpu-link}

run() {
  local phase=$1
  shift
  local t=$((budget - (SECONDS - start)))
  if ((t < 20)); then
    echo "$phase: skipped (budget spent)" | tee -a "$out/summary.txt"
    return
  fi
  local t0=$SECONDS
  timeout --kill-after=10 "$t" "$@" >"$out/$phase.log" 2>&1
  local rc=$?
  local verdict="ok"
  ((rc == 124 || rc == 137)) && verdict="OUT OF TIME after ${t}s"
  ((rc == 77)) && verdict="skipped: no usable CUDA device (77)"
  ((rc != 0 && rc != 77 && rc != 124 && rc != 137)) && verdict="FAILED (status $rc)"
  echo "$phase: $verdict in $((SECONDS - t0))s" | tee -a "$out/summary.txt"
}

speed() {
  local nodes=${NODES:-500000}
  "${skiff_cmd[@]}" generate --nodes "$nodes" --avg-degree 15 --feature-dim 128 --classes 128 \
    --homophily 0.85 --split 0.05,0.01,0.01 --split-edges 0.05,0.01,0.01 --seed 3 \
    --out "$work/speed" --overwrite >/dev/null || return 1
  local common=(--task link --epochs 1 --eval-edges 2000 --eval-fanouts 15,10)
  for run in ${SPEED_RUNS:-cuda cuda-host cpu}; do
    local extra=()
    case $run in
      cuda) extra=(--device cuda --threads 4) ;;
      cuda-host) extra=(--device cuda --threads 4 --device-memory 1MiB) ;; # rows from the host
      cpu) extra=(--device cpu --threads "$(nproc)") ;;
    esac
    echo "== $run: ${extra[*]}"
    "${skiff_cmd[@]}" train "$work/speed" "${common[@]}" "${extra[@]}" \
      --metrics "$work/speed-$run.jsonl" 2>&1 | grep -v '^\s*$' | grep -v "%)" | tail -8
    python3 -c "import json,sys; m=json.loads(open(sys.argv[1]).readline()); print({k: m[k] for k in ('loss','epoch_seconds','edges_per_second','compute_busy_seconds','eval_seconds','test_auc','test_mrr')}); print({s: round(v['busy_seconds'], 2) for s, v in m['pipeline']['stages'].items()})" \
      "$work/speed-$run.jsonl"
  done
}

cora() {
  for device in ${CORA_DEVICES:-cuda}; do
    echo "== --device $device ${CORA_OPTS:-}"
    # shellcheck disable=SC2086
    JOBS=10 THREADS=1 bash "$root/tools/bench/link_cora_bar.sh" "$skiff" "$work/cora-$device" \
      --device "$device" ${CORA_OPTS:-} | tail -1
  done
}

# `gpu_link.sh --phase NAME`: one phase's function (run() times phases out as separate processes).
if [[ ${1:-} == --phase ]]; then
  mkdir -p "$work"
  "$2"
  exit
fi
out=${1:?usage: gpu_link.sh OUT_DIR}
out=$(realpath -m "$out")
mkdir -p "$out" "$work"
start=$SECONDS
echo "== gpu_link $(date -u +%Y-%m-%dT%H:%M:%SZ), budget ${budget}s" | tee "$out/summary.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 |
  tee -a "$out/summary.txt"
for phase in ${PHASES:-tests e2e memcheck speed cora}; do
  case $phase in
    tests) run tests $gpu_tests --duration=true --test-case-exclude="perf:*" ;;
    memcheck) run memcheck compute-sanitizer --tool memcheck --error-exitcode 3 $gpu_tests \
      --test-case="*Pair*,*Cross*,*Bce*,*link-score*" ;;
    e2e) run e2e bash "$root/tests/e2e/cuda_link.sh" "$skiff" none "$work/e2e" ;;
    speed) run speed bash "$0" --phase speed ;;
    cora) run cora bash "$0" --phase cora ;;
    *) echo "unknown phase $phase" | tee -a "$out/summary.txt" ;;
  esac
done
