#!/usr/bin/env bash
# Cora accuracy: random splits of 20 per class train / 30 per class valid / the rest test, one split
# per seed; mean (and min/max) test accuracy at the epoch of best validation accuracy for GCN, GAT
# and GraphSAGE, configured by data/cora-{gcn,gat,sage}.toml.
# Usage: tools/bench/accuracy.sh [SKIFF_EXE] [SEEDS] [WORK_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
skiff="${1:-$root/build/skiff}"
seeds="${2:-10}"
work="${3:-$(mktemp -d)}"
source "$root/tools/bench/cora_splits.sh"
cora_splits "$skiff" "$work" "$seeds"
for model in gcn gat sage; do
  : > "$work/$model.txt"
done
for ((s = 0; s < seeds; s++)); do
  for model in gcn gat sage; do
    acc=$("$skiff" train "$work/cora-$s" --config "$root/data/cora-$model.toml" --seed "$s" \
      --threads 2 2> /dev/null | sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p')
    echo "$acc" >> "$work/$model.txt"
    echo "seed $s $model test $acc%"
  done
done
for model in gcn gat sage; do
  awk -v m="$model" '{s += $1; if (NR == 1 || $1 < lo) lo = $1; if ($1 > hi) hi = $1}
    END {printf "%-5s mean test accuracy %.2f%% (min %.2f, max %.2f, %d seeds)\n", m, s / NR, lo, hi, NR}' \
    "$work/$model.txt"
done
