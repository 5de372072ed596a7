#!/usr/bin/env bash
# Hyper-parameter search on Cora, selected by validation accuracy only.
#
# For each option set (one per line on stdin, appended to `skiff train DATASET --config BASE`), runs
# SEEDS random splits (20 per class train / 30 per class valid, the same splits as accuracy.sh) and
# prints the mean best-epoch validation accuracy and the mean test accuracy at that epoch. Choose the
# line with the best *validation* mean; the test column is reported, never used to choose.
# Runs two trainings at a time with one thread each.
# Usage: tools/bench/cora_grid.sh MODEL [SKIFF_EXE] [SEEDS] [WORK_DIR] < option-lines
#   e.g. printf '%s\n' '--hidden 64' '--hidden 128 --dropout 0.6' | tools/bench/cora_grid.sh gcn
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
model="$1"
skiff="${2:-$root/build/skiff}"
seeds="${3:-10}"
work="${4:-$(mktemp -d)}"
source "$root/tools/bench/cora_splits.sh"
cora_splits "$skiff" "$work" "$seeds"
run_one() { # options seed -> "valid test"
  "$skiff" train "$work/cora-$2" --config "$root/data/cora-$model.toml" $1 --seed "$2" \
    --threads 1 2> /dev/null |
    sed -n 's/.*best valid accuracy \([0-9.]*\)%.*test accuracy \([0-9.]*\)%.*/\1 \2/p'
}
while IFS= read -r opts; do
  out="$work/result.$$"
  : > "$out"
  for ((s = 0; s < seeds; s += 2)); do
    run_one "$opts" "$s" >> "$out" &
    if ((s + 1 < seeds)); then run_one "$opts" $((s + 1)) >> "$out"; fi
    wait
  done
  awk -v o="$opts" '{v += $1; t += $2} END {printf "valid %.2f  test %.2f  (%d seeds)  %s\n", v / NR, t / NR, NR, o}' "$out"
done
