#!/usr/bin/env bash
# `train --export` of two owned-partition ranks (--ownership partitions, --threads 1 each) against
# one process predicting every node from the same run's checkpoint with both cores (--threads 2):
# layer by layer (the in-memory default, what the ranks compute in memory) and in batches (skiff
# predict --inference batches, what the ranks compute within --memory). Alternates for ROUNDS
# rounds; each owned run trains one epoch first, and its export time is the one it prints. With
# BUDGET, owned ranks within --memory BUDGET too.
# Prints seconds and peak RSS (BENCHMARKS.md, "Owned partitions: --export").
#   tools/bench/dist_owned_export_bench.sh SKIFF DATASET WORK_DIR ROUNDS [BUDGET]
set -euo pipefail
S=$1
DS=$2
WORK=$3
ROUNDS=$4
BUDGET=${5:-}
mkdir -p "$WORK"
A=(train "$DS" --epochs 1 --seed 5 --threads 1 --eval-batch-size 1024 --distributed
  --ownership partitions)
MPI=(mpirun --oversubscribe --allow-run-as-root -np 2)
owned() {  # owned NAME [OPTIONS...]
  local name=$1
  shift
  rm -rf "$WORK/$name.exp"
  "${MPI[@]}" "$S" "${A[@]}" "$@" --checkpoint "$WORK/$name.ckpt" --export "$WORK/$name.exp" \
    > "$WORK/$name.log" 2>&1
  echo "$name: $(grep -o "every node, [a-z ]* on 2 rank(s), in [0-9.]* s" "$WORK/$name.log");" \
    "$(grep -o "peak RSS per rank: [^(]*" "$WORK/$name.log")"
}
predict() {  # predict NAME MODE
  rm -rf "$WORK/$1.pred"
  /usr/bin/time -f "%e %M" -o "$WORK/$1.time" "$S" predict "$DS" --checkpoint "$WORK/owned.ckpt" \
    --out "$WORK/$1.pred" --threads 2 --inference "$2" > "$WORK/$1.log" 2>&1
  read -r secs kib < "$WORK/$1.time"
  echo "$1: $secs s, peak RSS $((kib / 1024)) MiB"
}
for r in $(seq "$ROUNDS"); do
  echo "round $r"
  owned owned
  [ -n "$BUDGET" ] && owned budget --memory "$BUDGET"
  predict batches batches
  predict layers layers
done
