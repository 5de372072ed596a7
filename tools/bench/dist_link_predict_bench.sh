#!/usr/bin/env bash
# Link prediction shared among ranks (skiff predict --distributed on a --task link checkpoint,
# docs/distributed.md, "Prediction on several ranks") against one process: trains one epoch once
# for a checkpoint, writes QUERIES random query nodes, then alternates for ROUNDS rounds, for every
# node's embeddings and for the queries' top-10: one process on one core (taskset -c 0,
# --threads 1), W ranks bound to a core each (mpirun --bind-to core, --threads 1: as W one-core
# machines), and one process on cores 0..W-1 with --threads W. Prints each run's seconds and the
# largest process's peak RSS, and checks the outputs are one process's byte for byte (BENCHMARKS.md,
# "Link prediction shared among replicated ranks").
#   tools/bench/dist_link_predict_bench.sh SKIFF DATASET WORK_DIR ROUNDS [W] [QUERIES]
set -euo pipefail
S=$1
DS=$2
WORK=$3
ROUNDS=$4
W=${5:-2}
QUERIES=${6:-200}
mkdir -p "$WORK"
if [ ! -e "$WORK/link.ckpt" ]; then
  "$S" train "$DS" --task link --epochs 1 --seed 5 --threads 2 --eval-edges 1000 \
    --checkpoint "$WORK/link.ckpt" > "$WORK/train.log" 2>&1
fi
python3 - "$WORK/queries.txt" "$QUERIES" "$("$S" info "$DS" | awk '/^nodes/ {print $2}')" <<'PY'
import random, sys
random.seed(7)
with open(sys.argv[1], "w") as f:
    for _ in range(int(sys.argv[2])):
        f.write(f"{random.randrange(int(sys.argv[3]))}\n")
PY
run() {  # run NAME KIND COMMAND...
  local name=$1 kind=$2
  shift 2
  local request=()
  [ "$kind" = top-k ] && request=(--top-k 10 --nodes "$WORK/queries.txt")
  rm -rf "$WORK/$name-$kind.pred"
  /usr/bin/time -f "%e %M" -o "$WORK/$name.time" "$@" --checkpoint "$WORK/link.ckpt" \
    --out "$WORK/$name-$kind.pred" "${request[@]}" > "$WORK/$name-$kind.log" 2>&1
  read -r secs kib < "$WORK/$name.time"
  echo "  $kind, $name: $secs s, peak RSS $((kib / 1024)) MiB"
}
for r in $(seq "$ROUNDS"); do
  echo "round $r"
  for kind in embeddings top-k; do
    run one_core "$kind" taskset -c 0 "$S" predict "$DS" --threads 1
    run ranks "$kind" mpirun --allow-run-as-root --bind-to core --map-by core -np "$W" "$S" \
      predict "$DS" --threads 1 --distributed
    run one_process "$kind" taskset -c "0-$((W - 1))" "$S" predict "$DS" --threads "$W"
    for name in one_core ranks; do
      for f in "$WORK/one_process-$kind.pred"/*; do
        cmp "$f" "$WORK/$name-$kind.pred/$(basename "$f")"
      done
    done
  done
done
