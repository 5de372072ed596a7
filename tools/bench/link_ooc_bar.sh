#!/usr/bin/env bash
# The link-prediction out-of-core bar (BENCHMARKS.md, "Link prediction"): one epoch of
# `skiff train --task link` with the default training settings on a partitioned dataset with an
# edge split, in memory and with --memory = 25% of the dataset's bytes, alternating ROUNDS times;
# each run's epoch and evaluation seconds, loss, validation/test MRR and peak RSS.
#
#   tools/bench/link_ooc_bar.sh SKIFF DATASET WORK_DIR [ROUNDS] [extra skiff train options...]
#
# The dataset of the bar: skiff generate --nodes 2000000 --avg-degree 15 --feature-dim 128
#   --classes 128 --homophily 0.85 --split 0.05,0.01,0.01 --split-edges 0.05,0.01,0.01 --seed 3,
#   then skiff partition -k 64 (GREM).
set -euo pipefail
SKIFF=$1
DS=$2
WORK=$3
ROUNDS=${4:-1}
shift $(( $# < 4 ? $# : 4 ))
mkdir -p "$WORK"
bytes=$(du -sb "$DS" | cut -f1)
budget=$((bytes / 4))
echo "dataset $DS: $bytes bytes; 25% = $budget"
for round in $(seq 1 "$ROUNDS"); do
  for mode in memory ooc; do
    extra=()
    [ "$mode" = ooc ] && extra=(--memory "$budget")
    log="$WORK/$mode-$round.log"
    /usr/bin/time -v "$SKIFF" train "$DS" --task link --epochs 1 --threads 2 \
      --metrics "$WORK/$mode-$round.jsonl" "${extra[@]}" "$@" > "$log" 2>&1
    python3 - "$WORK/$mode-$round.jsonl" "$log" "$mode" <<'PY'
import json, re, sys
row = [json.loads(l) for l in open(sys.argv[1])][-1]
log = open(sys.argv[2]).read()
peak_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", log).group(1))
p = row.get("pipeline", {})
print(f"{sys.argv[3]:6s} epoch {row['epoch_seconds']:.1f}s ({row['edges_per_second']:.0f} edges/s)"
      f"  eval {row['eval_seconds']:.1f}s  loss {row['loss']:.4f}"
      f"  valid MRR {row.get('valid_mrr', 0):.4f}  test MRR {row.get('test_mrr', 0):.4f}"
      f"  test AUC {row.get('test_auc', 0):.4f}  read {p.get('bytes_read', 0) / 2**30:.2f} GiB"
      f"  peak RSS {peak_kib / 1024:.0f} MiB")
PY
  done
done
