#!/usr/bin/env bash
# Two owned-partition ranks (--ownership partitions, --threads 1 each), one epoch, in memory and
# within each of the given --memory budgets, alternating for ROUNDS rounds, on a partitioned
# dataset. Prints each run's training-pass and evaluation seconds, its validation accuracy, what
# rank 0 kept resident and read at fine grain, and every rank's peak RSS (BENCHMARKS.md, "Owned
# partitions within --memory").
#   tools/bench/dist_owned_memory_bench.sh SKIFF DATASET WORK_DIR ROUNDS BUDGET...
set -euo pipefail
S=$1
DS=$2
WORK=$3
ROUNDS=$4
shift 4
mkdir -p "$WORK"
A=(train "$DS" --epochs 1 --seed 5 --threads 1 --eval-batch-size 1024 --distributed
  --ownership partitions)
MPI=(mpirun --oversubscribe --allow-run-as-root -np 2)
for r in $(seq "$ROUNDS"); do
  for mem in none "$@"; do
    opt=()
    [ "$mem" != none ] && opt=(--memory "$mem")
    "${MPI[@]}" "$S" "${A[@]}" "${opt[@]}" --metrics "$WORK/$mem.$r.jsonl" > "$WORK/$mem.$r.log" 2>&1
  done
done
python3 - "$WORK" "$ROUNDS" none "$@" <<'PY'
import json, re, sys
work, rounds, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for mem in runs:
    for r in range(1, rounds + 1):
        m = json.loads(open(f"{work}/{mem}.{r}.jsonl").readline())
        log = open(f"{work}/{mem}.{r}.log", errors="replace").read()
        kept = re.search(r"of the dataset: (.*)", log)
        read = re.search(r"within --memory: (\d+ lists and \d+ feature rows read at fine grain \([^)]*\))", log)
        peaks = re.search(r"peak RSS per rank: ([^(\n]*)", log)
        print(f"{mem:>8} round {r}: training pass {m['epoch_seconds'] - m['eval_seconds']:.2f} s, "
              f"evaluation {m['eval_seconds']:.2f} s, valid {100 * m['valid_acc']:.2f}%; "
              f"{kept.group(1) if kept else 'in memory'}; {read.group(1) if read else '-'}; "
              f"peak {peaks.group(1).strip() if peaks else '?'}")
PY
