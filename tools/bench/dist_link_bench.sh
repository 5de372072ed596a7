#!/usr/bin/env bash
# One epoch of link prediction three ways, alternating for ROUNDS rounds: one process with
# --threads 2, one process with --threads 1 --accumulate 2, and two ranks of --threads 1 with
# --distributed (which computes the --accumulate 2 run exactly). Prints each run's training-pass
# and evaluation seconds and its loss and validation MRR (BENCHMARKS.md, "Link prediction, two
# ranks on one 2-core machine").
#   tools/bench/dist_link_bench.sh SKIFF DATASET WORK_DIR [ROUNDS]
set -euo pipefail
S=$1
DS=$2
WORK=$3
ROUNDS=${4:-3}
mkdir -p "$WORK"
A=(train "$DS" --task link --epochs 1 --seed 5 --eval-edges 5000 --eval-negatives 1000)
for r in $(seq "$ROUNDS"); do
  "$S" "${A[@]}" --threads 2 --metrics "$WORK/one2.$r.jsonl" > "$WORK/one2.$r.log" 2>&1
  "$S" "${A[@]}" --threads 1 --accumulate 2 --metrics "$WORK/acc2.$r.jsonl" \
    > "$WORK/acc2.$r.log" 2>&1
  mpirun --oversubscribe --allow-run-as-root -np 2 "$S" "${A[@]}" --threads 1 --distributed \
    --metrics "$WORK/dist2.$r.jsonl" > "$WORK/dist2.$r.log" 2>&1
done
python3 - "$WORK" "$ROUNDS" <<'PY'
import json, sys
work, rounds = sys.argv[1], int(sys.argv[2])
for name in ("one2", "acc2", "dist2"):
    rows = [json.loads(open(f"{work}/{name}.{r}.jsonl").readline()) for r in range(1, rounds + 1)]
    print(name, " / ".join(f"{x['epoch_seconds']:.1f}" for x in rows), "s training;",
          " / ".join(f"{x['eval_seconds']:.1f}" for x in rows), "s evaluation;",
          f"loss {rows[0]['loss']:.6f}, valid MRR {rows[0]['valid_mrr']:.4f}")
PY
