#!/usr/bin/env bash
# Layer-wise prediction of every node shared among ranks (skiff predict --distributed, docs/
# distributed.md) against one process: trains one epoch once for a checkpoint, then alternates for
# ROUNDS rounds: one process on one core (taskset -c 0, --threads 1: its compute thread and its
# chunk producer share the core), W ranks bound to a core each (mpirun --bind-to core, --threads
# 1: as W one-core machines), and one process on cores 0..W-1 with --threads W. Prints each run's seconds and the largest process's peak RSS (the ranks'
# peaks: /usr/bin/time reports the largest of mpirun's children), and checks the outputs are one
# process's byte for byte (BENCHMARKS.md, "Prediction shared among ranks").
#   tools/bench/dist_predict_bench.sh SKIFF DATASET WORK_DIR ROUNDS [W]
set -euo pipefail
S=$1
DS=$2
WORK=$3
ROUNDS=$4
W=${5:-2}
mkdir -p "$WORK"
if [ ! -e "$WORK/model.ckpt" ]; then
  "$S" train "$DS" --epochs 1 --seed 5 --threads 2 --checkpoint "$WORK/model.ckpt" \
    > "$WORK/train.log" 2>&1
fi
run() {  # run NAME COMMAND...
  local name=$1
  shift
  rm -rf "$WORK/$name.pred"
  /usr/bin/time -f "%e %M" -o "$WORK/$name.time" "$@" --checkpoint "$WORK/model.ckpt" \
    --out "$WORK/$name.pred" > "$WORK/$name.log" 2>&1
  read -r secs kib < "$WORK/$name.time"
  echo "$name: $secs s, peak RSS $((kib / 1024)) MiB"
}
for r in $(seq "$ROUNDS"); do
  echo "round $r"
  run one_core taskset -c 0 "$S" predict "$DS" --threads 1
  run ranks mpirun --allow-run-as-root --bind-to core --map-by core -np "$W" "$S" predict "$DS" \
    --threads 1 --distributed
  run one_process taskset -c "0-$((W - 1))" "$S" predict "$DS" --threads "$W"
  for f in predictions embeddings; do
    cmp "$WORK/ranks.pred/$f.npy" "$WORK/one_process.pred/$f.npy"
    cmp "$WORK/one_core.pred/$f.npy" "$WORK/one_process.pred/$f.npy"
  done
  for name in one_core ranks one_process; do
    echo "  $name: $(tr '\r' '\n' < "$WORK/$name.log" | grep -o 'predict (.*layers).*s$' | tail -1)"
  done
done
