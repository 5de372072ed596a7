#!/usr/bin/env bash
# Link prediction end to end: `skiff train --task link`.
#   bash train_link.sh SKIFF_EXE DATASETS_DIR WORK_DIR
# Checks: Cora split 85/5/10 learns (GCN + inner product: test AUC and AP well above chance, the
# metrics lines carry AUC/AP and MRR/Hits@K); a generated, GREM-partitioned dataset trains out of
# core within a budget far below its size and draws exactly the in-memory run's batches (the
# same losses and metrics epoch by epoch); a dataset without an edge split and options link
# prediction does not take yet are refused with a message.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SKIFF=$1
DATASETS=$2
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"

if [ -f "$DATASETS/cora.npz" ]; then
  "$SKIFF" convert "$DATASETS/cora.npz" cora --undirected --split-edges 0.85,0.05,0.1 \
    --split-seed 1 > /dev/null
  "$SKIFF" train cora --task link --model gcn --hidden 32 --out-dim 16 --fanouts -1,-1 \
    --eval-fanouts -1,-1 --dropout 0 --weight-decay 0 --batch-size 100000 --negatives 512 \
    --epochs 40 --eval-negatives 100 --seed 1 --threads 2 --metrics cora.jsonl > cora.log 2>&1 || {
      echo "FAIL: cora"; cat cora.log; exit 1; }
  python3 - cora.jsonl <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 40, len(rows)
last = rows[-1]
for key in ("loss", "valid_auc", "valid_ap", "valid_mrr", "valid_hits@10", "test_auc", "test_ap",
            "test_mrr", "test_hits@100", "edges_per_second"):
    assert key in last, (key, last)
assert rows[-1]["loss"] < rows[0]["loss"], (rows[0]["loss"], rows[-1]["loss"])
assert last["test_auc"] > 0.8 and last["test_ap"] > 0.8, last
assert last["test_mrr"] > rows[0]["test_mrr"], (rows[0]["test_mrr"], last["test_mrr"])
print(f"cora: test AUC {last['test_auc']:.4f} AP {last['test_ap']:.4f} MRR {last['test_mrr']:.4f}")
PY
  grep -q "^test (.*AUC" cora.log || { echo "FAIL: no test summary"; cat cora.log; exit 1; }
  # No edge split: refused, saying how to make one.
  "$SKIFF" convert "$DATASETS/cora.npz" plain --undirected > /dev/null
  if "$SKIFF" train plain --task link --epochs 1 > plain.log 2>&1; then
    echo "FAIL: a dataset without an edge split trained"; exit 1
  fi
  grep -q -- "--split-edges" plain.log || { echo "FAIL: no advice"; cat plain.log; exit 1; }
fi

"$SKIFF" generate --nodes 20000 --avg-degree 8 --classes 4 --feature-dim 32 --split 0.5,0.2,0.3 \
  --split-edges 0.2,0.02,0.02 --seed 3 --out raw > /dev/null 2>&1
"$SKIFF" partition raw -k 12 --algo grem -o ds > /dev/null 2>&1
"$SKIFF" info ds --verify > info.log 2>&1 || { echo "FAIL: verify"; cat info.log; exit 1; }

COMMON=(--task link --model sage --hidden 32 --out-dim 16 --fanouts 5,5 --eval-fanouts 5,5
        --batch-size 256 --negatives 32 --eval-negatives 50 --eval-edges 500 --epochs 2 --seed 7
        --threads 2)
for opt in --checkpoint --export; do
  if "$SKIFF" train ds "${COMMON[@]}" "$opt" out > refused.log 2>&1; then
    echo "FAIL: $opt accepted with --task link"; exit 1
  fi
  grep -q "not supported with --task link" refused.log || { cat refused.log; exit 1; }
done
if "$SKIFF" train ds "${COMMON[@]}" --memory 64KiB > small.log 2>&1; then
  echo "FAIL: a 64KiB budget was accepted"; exit 1
fi
minimum=$(grep -o "needs at least [0-9.]* [KMG]iB" small.log | head -1)
[ -n "$minimum" ] || { echo "FAIL: no minimum named"; cat small.log; exit 1; }
budget=$(python3 - "$minimum" <<'PY'
import sys
v, unit = sys.argv[1].split()[-2:]
print(int(float(v) * {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]) + (256 << 10))
PY
)
"$SKIFF" train ds "${COMMON[@]}" --metrics mem.jsonl > mem.log 2>&1 || {
  echo "FAIL: in memory"; cat mem.log; exit 1; }
# The memory promise: peak RSS <= budget + the fixed overhead (96 MiB), to process exit.
python3 "$HERE/peak_rss_within.py" "$budget" $((96 << 20)) ooc.log -- \
  "$SKIFF" train ds "${COMMON[@]}" --memory "$budget" --metrics ooc.jsonl
python3 - mem.jsonl ooc.jsonl <<'PY'
import json, sys
mem = [json.loads(l) for l in open(sys.argv[1])]
ooc = [json.loads(l) for l in open(sys.argv[2])]
assert len(mem) == len(ooc) == 2
for m, o in zip(mem, ooc):
    for key in ("loss", "valid_auc", "valid_ap", "valid_mrr", "test_auc", "test_mrr"):
        assert m[key] == o[key], (key, m[key], o[key])
    assert o["pipeline"]["fine_bytes_read"] > 0, o["pipeline"]  # not everything was resident
print(f"out of core = in memory: loss {ooc[-1]['loss']}, valid AUC {ooc[-1]['valid_auc']}")
PY
grep -q "peak RSS .* (budget" ooc.log || { echo "FAIL: no peak line"; cat ooc.log; exit 1; }
echo "OK"
