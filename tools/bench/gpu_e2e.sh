#!/usr/bin/env bash
# End-to-end GPU training: `skiff train --device cuda` against the PyG peer (tools/bench/pyg_peer.py:
# everything in GPU memory), alternating, on the `1m` preset, at the setting of the GPU bar in
# BENCHMARKS.md: GraphSAGE, 3 layers, fanouts 15,10,5, hidden 256, batch 1024, Adam lr 0.003,
# dropout 0.5, no weight decay; training split 10% (100k nodes), valid and test 1% each; the
# dataset partitioned into 64 (GREM). Prints every run's output; the lines to read are Skiff's
# "epoch N: ... (X samples/s)" and the peer's "pyg_peer samples_per_s=...".
#
#   tools/bench/gpu_e2e.sh [DATA_DIR] [ROUNDS]       (defaults: /tmp/skiff-gpu-e2e, 2)
#
# Environment: SKIFF (the command that runs skiff; default build/skiff, e.g. "pack/run skiff" for a
# packed build), EPOCHS (default 4), MATMUL (skiff --cuda-matmul and the peer's --tf32: tf32 or
# fp32; default both, one after the other), SAMPLERS (skiff --sampler values run in each round,
# default "device host"), MEMORY (also run skiff out of core, --sampler device --memory MEMORY;
# default 141MiB, 25% of the dataset, the out-of-core bar's setting; empty: skip), MEMORY_SAMPLERS
# (the --sampler values run out of core, default device), CACHE (also run
# skiff with --device-memory CACHE, less than the features' 512 MB, so that they stay on the host
# and the device caches rows (docs/cuda.md, "A row cache"), in memory and at --memory
# CACHE_MEMORY; defaults 256MiB and 512MiB -- with the rows on the host a batch of this setting
# holds ~500k of the 1M rows, so the plan's minimum is ~383 MiB; empty: skip), PYTHON (default
# python3).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
skiff=${SKIFF:-$root/build/skiff}
data=${1:-/tmp/skiff-gpu-e2e}
rounds=${2:-2}
epochs=${EPOCHS:-4}
python=${PYTHON:-python3}
threads=$(nproc)
ds="$data/g1m"

if [[ ! -f "$ds/manifest.json" ]]; then
  mkdir -p "$data"
  echo "== generating $ds"
  $skiff generate --preset 1m --split 0.1,0.01,0.01 --out "$ds"
  $skiff partition "$ds" -k 64 --threads "$threads"
fi

model=(--layers 3 --fanouts 15,10,5 --hidden 256 --batch-size 1024 --lr 0.003 --dropout 0.5
  --weight-decay 0 --epochs "$epochs")
for matmul in ${MATMUL:-tf32 fp32}; do
  peer_tf32=()
  [[ $matmul == tf32 ]] && peer_tf32=(--tf32)
  for ((r = 1; r <= rounds; ++r)); do
    for sampler in ${SAMPLERS:-device host}; do
      echo "== round $r, $matmul: skiff --device cuda --sampler $sampler"
      $skiff train "$ds" --model sage "${model[@]}" --device cuda --cuda-matmul "$matmul" \
        --sampler "$sampler" --threads "$threads" 2>&1 | grep -v '^\s*$' ||
        echo "== that run FAILED (the rounds go on)"
    done
    if [[ -n ${MEMORY-141MiB} ]]; then
      for sampler in ${MEMORY_SAMPLERS:-device}; do
        echo "== round $r, $matmul: skiff --device cuda --sampler $sampler --memory ${MEMORY-141MiB}"
        # -v: the resident set at exit by kind follows the peak line's figures.
        $skiff -v train "$ds" --model sage "${model[@]}" --device cuda --cuda-matmul "$matmul" \
          --sampler "$sampler" --memory "${MEMORY-141MiB}" --threads "$threads" 2>&1 |
          awk '!/^[[:space:]]*$/ && (!/ debug: / || / debug: resident at exit/)' ||
          echo "== that run FAILED (the rounds go on)"
      done
    fi
    if [[ -n ${CACHE-256MiB} ]]; then
      for memory in "" ${CACHE_MEMORY-512MiB}; do
        echo "== round $r, $matmul: skiff --device cuda --device-memory ${CACHE-256MiB}" \
          "${memory:+--memory $memory}"
        $skiff train "$ds" --model sage "${model[@]}" --device cuda --cuda-matmul "$matmul" \
          --device-memory "${CACHE-256MiB}" ${memory:+--memory "$memory"} --threads "$threads" \
          2>&1 | grep -v '^\s*$' || echo "== that run FAILED (the rounds go on)"
      done
    fi
    echo "== round $r, $matmul: pyg peer"
    $python "$root/tools/bench/pyg_peer.py" "$ds" "${model[@]}" "${peer_tf32[@]}" 2>&1 |
      grep -E '^pyg_peer|"epoch"' || true
  done
done
