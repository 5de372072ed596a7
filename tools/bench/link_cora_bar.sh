#!/usr/bin/env bash
# The Cora link-prediction bar (BENCHMARKS.md, "Link prediction"): the GAE protocol of Kipf &
# Welling 2016 -- an 85 / 5 / 10 split of Cora's undirected edges, as many non-edges for validation
# and test, a 2-layer GCN encoder 32-16 over the node features, the inner-product decoder -- over
# 10 seeds (split and training alike); prints each seed's test AUC and AP at the best validation
# epoch and their mean and standard deviation.
#
#   tools/bench/link_cora_bar.sh [SKIFF] [WORK_DIR] [extra skiff train options...]
#   (e.g. --link-loss gae: GAE's own loss instead of the sampled default)
#
# Environment: CORA (default ../shared/datasets/cora.npz beside the checkout), JOBS (seeds run at
# once, default 1; each with --threads THREADS, default 2: on a machine with many cores, JOBS=10
# THREADS=1 runs the ten seeds side by side; the results do not depend on either), and the
# protocol's training settings EPOCHS (200), LR (0.01), NEGATIVES (1024) to vary them.
set -euo pipefail
cd "$(dirname "$0")/../.."
read -ra SKIFF <<<"${1:-build/skiff}"
WORK=${2:-/tmp/skiff-link-cora}
shift $(( $# < 2 ? $# : 2 ))
CORA=${CORA:-../shared/datasets/cora.npz}
JOBS=${JOBS:-1}
THREADS=${THREADS:-2}
mkdir -p "$WORK"
results="$WORK/results.txt"
: >"$results"

one_seed() {
  local seed=$1
  shift
  local ds="$WORK/cora-$seed"
  "${SKIFF[@]}" convert "$CORA" "$ds" --undirected --split-edges 0.85,0.05,0.1 --split-seed "$seed" \
    --overwrite >/dev/null
  "${SKIFF[@]}" train "$ds" --task link --model gcn --layers 2 --hidden 32 --out-dim 16 \
    --fanouts -1,-1 --eval-fanouts -1,-1 --dropout 0 --weight-decay 0 \
    --batch-size 100000 --negatives "${NEGATIVES:-1024}" --epochs "${EPOCHS:-200}" \
    --lr "${LR:-0.01}" --eval-negatives 0 --seed "$seed" \
    --threads "$THREADS" "$@" >"$WORK/seed-$seed.log" 2>/dev/null
}

for seed in 0 1 2 3 4 5 6 7 8 9; do
  one_seed "$seed" "$@" &
  while (($(jobs -rp | wc -l) >= JOBS)); do wait -n; done
done
wait
for seed in 0 1 2 3 4 5 6 7 8 9; do
  line=$(grep '^test' "$WORK/seed-$seed.log")
  auc=$(sed -E 's/.*AUC ([0-9.]+)%.*/\1/' <<<"$line")
  ap=$(sed -E 's/.*AP ([0-9.]+)%.*/\1/' <<<"$line")
  echo "seed $seed: test AUC $auc  AP $ap" | tee -a "$results"
done
python3 - "$results" <<'PY'
import re, statistics, sys
rows = [tuple(map(float, re.findall(r"(?:AUC|AP) ([0-9.]+)", l))) for l in open(sys.argv[1])]
auc = [r[0] for r in rows]; ap = [r[1] for r in rows]
print(f"mean of {len(rows)} seeds: test AUC {statistics.mean(auc):.2f} +- {statistics.stdev(auc):.2f}"
      f"  AP {statistics.mean(ap):.2f} +- {statistics.stdev(ap):.2f}")
PY
