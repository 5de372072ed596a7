#!/usr/bin/env bash
# The Python package's CPU bar (#45, BENCHMARKS.md "Skiff from Python"): on the 2M-node dataset of
# the out-of-core bar, a PyG SAGEConv model (2 layers, hidden 256, fanouts 15 and 10 -- PyG's
# num_neighbors 10,15 --, batch 1024, Adam, 2 threads), one epoch each, alternating:
#   skiff.NodeLoader in memory | PyG NeighborLoader (torch-sparse) | skiff.NodeLoader at 25%
# all in one virtual environment (one torch).
#   tools/bench/python_bar.sh DATASET VENV ROUNDS OUT_DIR
set -uo pipefail  # a failed run is logged and the alternation goes on
ds=$1 venv=$2 rounds=${3:-2} out=${4:-/tmp/python_bar}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
py="$venv/bin/python"
for r in $(seq 1 "$rounds"); do
  "$py" "$here/python_loader_bench.py" "$ds" --epochs 1 --threads 2 >"$out/skiff_mem_$r.log" 2>&1
  grep '^{"epoch\|^{"baseline' "$out/skiff_mem_$r.log" | cut -c1-200
  "$py" "$here/pyg_loader_peer.py" "$ds" --num-neighbors 10,15 --epochs 1 --threads 2 \
    >"$out/pyg_$r.log" 2>&1
  grep '^{"epoch\|pyg_loader_peer' "$out/pyg_$r.log" | cut -c1-200
  "$py" "$here/python_loader_bench.py" "$ds" --epochs 1 --threads 2 --memory 25% \
    --model-memory 64MiB >"$out/skiff_ooc25_$r.log" 2>&1
  grep '^{"epoch\|^{"baseline' "$out/skiff_ooc25_$r.log" | cut -c1-200
done
