#!/usr/bin/env bash
# One node-classification epoch four ways, alternating for ROUNDS rounds, on a partitioned
# dataset: one process with --threads 2 --accumulate 2, in memory and within --memory MEM, and two
# ranks of --threads 1 with --distributed (which compute that --accumulate 2 run exactly), in
# memory and each within --memory MEM. Prints each run's training-pass and evaluation seconds, its
# loss and validation accuracy, and the peak RSS rank 0 printed (BENCHMARKS.md, "Node ranks out of
# core").
#   tools/bench/dist_node_bench.sh SKIFF DATASET MEM WORK_DIR [ROUNDS]
set -euo pipefail
S=$1
DS=$2
MEM=$3
WORK=$4
ROUNDS=${5:-3}
mkdir -p "$WORK"
A=(train "$DS" --epochs 1 --seed 5)
MPI=(mpirun --oversubscribe --allow-run-as-root -np 2)
for r in $(seq "$ROUNDS"); do
  "$S" "${A[@]}" --threads 2 --accumulate 2 --metrics "$WORK/acc.$r.jsonl" > "$WORK/acc.$r.log" 2>&1
  "$S" "${A[@]}" --threads 2 --accumulate 2 --memory "$MEM" --metrics "$WORK/acc_ooc.$r.jsonl" \
    > "$WORK/acc_ooc.$r.log" 2>&1
  "${MPI[@]}" "$S" "${A[@]}" --threads 1 --distributed --metrics "$WORK/dist.$r.jsonl" \
    > "$WORK/dist.$r.log" 2>&1
  "${MPI[@]}" "$S" "${A[@]}" --threads 1 --distributed --memory "$MEM" \
    --metrics "$WORK/dist_ooc.$r.jsonl" > "$WORK/dist_ooc.$r.log" 2>&1
done
python3 - "$WORK" "$ROUNDS" <<'PY'
import json, re, sys
work, rounds = sys.argv[1], int(sys.argv[2])
for name in ("acc", "acc_ooc", "dist", "dist_ooc"):
    rows = [json.loads(open(f"{work}/{name}.{r}.jsonl").readline()) for r in range(1, rounds + 1)]
    peaks = [re.search(r"peak RSS ([0-9.]+ [KMG]iB)", open(f"{work}/{name}.{r}.log").read())
             for r in range(1, rounds + 1)]
    train = [x["epoch_seconds"] - x["eval_seconds"] for x in rows]
    print(f"{name:9}", " / ".join(f"{t:.1f}" for t in train), "s training;",
          " / ".join(f"{x['eval_seconds']:.1f}" for x in rows), "s evaluation;",
          f"loss {rows[0]['loss']:.6f}, valid {rows[0]['valid_acc']:.4f};",
          "peak", " / ".join(p.group(1) if p else "?" for p in peaks))
PY
