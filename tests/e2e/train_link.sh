#!/usr/bin/env bash
# Link prediction end to end: `skiff train --task link`.
#   bash train_link.sh SKIFF_EXE DATASETS_DIR WORK_DIR
# Checks: the default settings train; Cora split 85/5/10 learns (GCN + inner product: test AUC and AP well above chance, the
# metrics lines carry AUC/AP and MRR/Hits@K); a generated, GREM-partitioned dataset trains out of
# core within a budget far below its size and draws exactly the in-memory run's batches (the
# same losses and metrics epoch by epoch); a dataset without an edge split is refused with a
# message; checkpoints resume the run exactly, and `train --export` and `skiff predict` (embeddings,
# --pairs scores, --top-k candidates, in memory and within --memory) agree with each other and
# with the exported embeddings under the dot decoder; `--link-loss gae` trains out of core as in
# memory within its own smallest budget, and is refused with the mlp decoder.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SKIFF=$1
DATASETS=$2
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"

# .npy and edge-split readers for the checks below (no NumPy needed).
cat > npy.py <<'PY'
import ast, json
from array import array

def load(path):
    data = open(path, "rb").read()
    n = int.from_bytes(data[8:10], "little")
    header = ast.literal_eval(data[10:10 + n].decode())
    values = array({"<f4": "f", "<i8": "q"}[header["descr"]])
    values.frombytes(data[10 + n:])
    return values, header["shape"]

def train_neighbors(ds):
    """Each node's destinations over training edges (both ways when the dataset is undirected)."""
    manifest = json.load(open(ds + "/manifest.json"))
    size = manifest["files"]["link_train.edges"]["data_bytes"]
    pairs = array("q")
    pairs.frombytes(open(ds + "/link_train.edges", "rb").read()[:size])
    known = {}
    for i in range(0, len(pairs), 2):
        known.setdefault(pairs[i], set()).add(pairs[i + 1])
        if manifest.get("undirected"):
            known.setdefault(pairs[i + 1], set()).add(pairs[i])
    return known
PY

if [ -f "$DATASETS/cora.npz" ]; then
  "$SKIFF" convert "$DATASETS/cora.npz" cora --undirected --split-edges 0.85,0.05,0.1 \
    --split-seed 1 > /dev/null
  "$SKIFF" train cora --task link --model gcn --hidden 32 --out-dim 16 --fanouts -1,-1 \
    --eval-fanouts -1,-1 --dropout 0 --weight-decay 0 --batch-size 100000 --negatives 512 \
    --epochs 40 --eval-negatives 100 --seed 1 --threads 2 --metrics cora.jsonl --checkpoint cora.ckpt \
    > cora.log 2>&1 || {
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
  # Known links left out: queries with several training edges see some of them ranked in their
  # top five with --keep-known and never without; the top five are the best of the nodes a query
  # has no training edge to (Cora is unpartitioned: dense IDs are raw IDs).
  python3 - cora > linked.txt <<'PY'
import sys
from npy import train_neighbors
known = train_neighbors(sys.argv[1])
print("\n".join(str(v) for v in sorted(v for v in known if len(known[v]) >= 4)[:10]))
PY
  "$SKIFF" predict cora --checkpoint cora.ckpt --out cora-emb --threads 2 > p.log 2>&1 || {
    cat p.log; exit 1; }
  for keep in "" --keep-known; do
    "$SKIFF" predict cora --checkpoint cora.ckpt --out "linked$keep" --top-k 5 --nodes linked.txt \
      $keep --threads 2 > p.log 2>&1 || { cat p.log; exit 1; }
  done
  python3 - cora cora-emb linked linked--keep-known linked.txt <<'PY'
import sys
from npy import load, train_neighbors
ds, emb_dir, new, kept, queries = sys.argv[1:]
known = train_neighbors(ds)
emb, (n, d) = load(emb_dir + "/embeddings.npy")
dot = lambda a, b: sum(emb[a * d + j] * emb[b * d + j] for j in range(d))
ids, top = load(new + "/top_k_ids.npy")[0], load(new + "/top_k_scores.npy")[0]
kept_ids = load(kept + "/top_k_ids.npy")[0]
seen_known = 0
for r, q in enumerate(int(l) for l in open(queries)):
    got = set(ids[5 * r:5 * r + 5])
    assert not known[q] & got, (q, known[q] & got)
    seen_known += len(known[q] & set(kept_ids[5 * r:5 * r + 5]))
    best = sorted((dot(q, v) for v in range(n) if v != q and v not in known[q]), reverse=True)[:5]
    assert all(abs(a - b) <= 1e-4 * max(1, abs(b)) for a, b in zip(top[5 * r:5 * r + 5], best))
assert seen_known > 0, "no known link ranked in the top five with --keep-known"
print(f"cora: top-k leaves out known links ({seen_known} in the top five with --keep-known)")
PY
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
# The default settings train in memory: evaluation's wide fanouts cut its batches to a training
# batch's memory, which once left no room beside the 1000 candidates.
"$SKIFF" train ds --task link --epochs 1 --eval-edges 200 --threads 2 > defaults.log 2>&1 ||
  { echo "FAIL: the default link settings did not train in memory"; cat defaults.log; exit 1; }

COMMON=(--task link --model sage --hidden 32 --out-dim 16 --fanouts 5,5 --eval-fanouts 5,5
        --batch-size 256 --negatives 32 --eval-negatives 50 --eval-edges 500 --epochs 2 --seed 7
        --threads 2)
ONE_EPOCH=("${COMMON[@]}")
for i in "${!ONE_EPOCH[@]}"; do
  [ "${ONE_EPOCH[$i]}" = --epochs ] && ONE_EPOCH[$((i + 1))]=1
done
# The smallest budget `skiff train DATASET OPTIONS...` accepts (the minimum it names for 64 KiB) plus
# 256 KiB.
smallest_budget() {
  local dataset=$1
  shift
  if "$SKIFF" train "$dataset" "$@" --memory 64KiB > small.log 2>&1; then
    echo "FAIL: a 64KiB budget was accepted" >&2; return 1
  fi
  local minimum
  minimum=$(grep -o "needs at least [0-9.]* [KMG]iB" small.log | head -1)
  [ -n "$minimum" ] || { echo "FAIL: no minimum named" >&2; cat small.log >&2; return 1; }
  python3 - "$minimum" <<'PY'
import sys
v, unit = sys.argv[1].split()[-2:]
print(int(float(v) * {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]) + (256 << 10))
PY
}
budget=$(smallest_budget ds "${COMMON[@]}")
"$SKIFF" train ds "${COMMON[@]}" --metrics mem.jsonl > mem.log 2>&1 || {
  echo "FAIL: in memory"; cat mem.log; exit 1; }
# The memory promise: peak RSS <= budget + the fixed overhead (96 MiB), to process exit.
python3 "$HERE/peak_rss_within.py" "$budget" $((96 << 20)) ooc.log -- \
  "$SKIFF" train ds "${COMMON[@]}" --memory "$budget" --disk-bandwidth 1GiB/s --metrics ooc.jsonl
python3 - mem.jsonl ooc.jsonl <<'PY'
import json, sys
mem = [json.loads(l) for l in open(sys.argv[1])]
ooc = [json.loads(l) for l in open(sys.argv[2])]
assert len(mem) == len(ooc) == 2
for m, o in zip(mem, ooc):
    for key in ("loss", "valid_auc", "valid_ap", "valid_mrr", "test_auc", "test_mrr"):
        assert m[key] == o[key], (key, m[key], o[key])
    assert o["pipeline"]["fine_bytes_read"] > 0, o["pipeline"]  # not everything was resident
    assert o["pipeline"]["disk_bytes_per_second"] == 1 << 30, o["pipeline"]  # --disk-bandwidth
print(f"out of core = in memory: loss {ooc[-1]['loss']}, valid AUC {ooc[-1]['valid_auc']}")
PY
grep -q "peak RSS .* (budget" ooc.log || { echo "FAIL: no peak line"; cat ooc.log; exit 1; }

# --link-loss gae: out of core within its smallest budget (its batches' R x R scores counted) as in
# memory; refused with the mlp decoder.
GAE=("${ONE_EPOCH[@]}" --link-loss gae)
gae_budget=$(smallest_budget ds "${GAE[@]}")
"$SKIFF" train ds "${GAE[@]}" --metrics gae-mem.jsonl > gae-mem.log 2>&1 || {
  echo "FAIL: gae in memory"; cat gae-mem.log; exit 1; }
python3 "$HERE/peak_rss_within.py" "$gae_budget" $((96 << 20)) gae-ooc.log -- \
  "$SKIFF" train ds "${GAE[@]}" --memory "$gae_budget" --metrics gae-ooc.jsonl
python3 - gae-mem.jsonl gae-ooc.jsonl <<'PY'
import json, sys
mem, ooc = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
assert len(mem) == len(ooc) == 1
for key in ("loss", "valid_auc", "valid_ap", "valid_mrr", "test_auc"):
    assert mem[0][key] == ooc[0][key], (key, mem[0][key], ooc[0][key])
assert mem[0]["valid_auc"] > 0.6, mem[0]  # it learns
PY
if "$SKIFF" train ds "${GAE[@]}" --decoder mlp > gae-mlp.log 2>&1; then
  echo "FAIL: --link-loss gae was accepted with --decoder mlp"; exit 1
fi
grep -q "use --decoder dot or distmult" gae-mlp.log || { cat gae-mlp.log; exit 1; }

# The dataset's own ranking candidates (--split-candidates, 100 per held-out edge): ranked in
# memory and within the smallest budget alike (there a chunk of representations at a time).
"$SKIFF" generate --nodes 20000 --avg-degree 8 --classes 4 --feature-dim 32 --split 0.5,0.2,0.3 \
  --split-edges 0.2,0.02,0.02 --split-candidates 100 --seed 3 --out craw > /dev/null 2>&1
"$SKIFF" partition craw -k 12 --algo grem -o cds > /dev/null 2>&1
"$SKIFF" info cds --verify > cinfo.log 2>&1 || { echo "FAIL: verify"; cat cinfo.log; exit 1; }
cand_budget=$(smallest_budget cds "${ONE_EPOCH[@]}")
"$SKIFF" train cds "${ONE_EPOCH[@]}" --metrics cand-mem.jsonl > cand-mem.log 2>&1 || {
  echo "FAIL: candidates in memory"; cat cand-mem.log; exit 1; }
python3 "$HERE/peak_rss_within.py" "$cand_budget" $((96 << 20)) cand-ooc.log -- \
  "$SKIFF" train cds "${ONE_EPOCH[@]}" --memory "$cand_budget" --metrics cand-ooc.jsonl
python3 - cand-mem.jsonl cand-ooc.jsonl <<'PY'
import json, sys
mem, ooc = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
for key in ("loss", "valid_mrr", "valid_hits@10", "test_mrr", "test_hits@50", "test_auc"):
    assert mem[0][key] == ooc[0][key], (key, mem[0][key], ooc[0][key])
assert mem[0]["valid_mrr"] > 1 / 50, mem[0]  # better than chance among 100
print(f"own candidates, in memory = within --memory: valid MRR {ooc[0]['valid_mrr']}")
PY

# Checkpoints: one epoch, then --resume to two, gives the two-epoch run's metrics lines.
"$SKIFF" train ds "${ONE_EPOCH[@]}" --checkpoint r.ckpt --metrics r.jsonl > r1.log 2>&1 || {
  echo "FAIL: checkpointed run"; cat r1.log; exit 1; }
"$SKIFF" train ds --resume r.ckpt --epochs 2 --checkpoint r.ckpt --metrics r.jsonl --threads 2 \
  --export ex > r2.log 2>&1 || { echo "FAIL: resume"; cat r2.log; exit 1; }
python3 - mem.jsonl r.jsonl <<'PY'
import json, sys
mem = [json.loads(l) for l in open(sys.argv[1])]
res = [json.loads(l) for l in open(sys.argv[2])]
assert [r["epoch"] for r in res] == [0, 1], res
for m, r in zip(mem, res):
    for key in ("loss", "valid_auc", "valid_mrr", "test_auc", "test_mrr"):
        assert m[key] == r[key], (key, m[key], r[key])
PY
# Predictions from the best checkpoint: embeddings as the export wrote them, in and out of core.
"$SKIFF" predict ds --checkpoint r.ckpt --out emb --threads 2 > p1.log 2>&1 || { cat p1.log; exit 1; }
"$SKIFF" predict ds --checkpoint r.ckpt --out emb-ooc --memory "$budget" --threads 2 \
  > p2.log 2>&1 || { cat p2.log; exit 1; }
cmp ex/embeddings.npy emb/embeddings.npy
cmp emb/embeddings.npy emb-ooc/embeddings.npy
printf '0 1\n# a comment\n\n17,4000\n19999 0\n5 5\n' > pairs.txt
"$SKIFF" predict ds --checkpoint r.ckpt --task link --out scores --pairs pairs.txt --threads 2 \
  > p3.log 2>&1 || { cat p3.log; exit 1; }
printf '0\n123\n0\n' > queries.txt
"$SKIFF" predict ds --checkpoint r.ckpt --out top --top-k 5 --nodes queries.txt --keep-known \
  --threads 2 > p4.log 2>&1 || { cat p4.log; exit 1; }
"$SKIFF" predict ds --checkpoint r.ckpt --out new --top-k 5 --nodes queries.txt --threads 2 \
  > p5.log 2>&1 || { cat p5.log; exit 1; }
python3 - emb/embeddings.npy scores/scores.npy top new <<'PY'
import sys
from npy import load

emb, (n, d) = load(sys.argv[1])
row = lambda v: emb[v * d:(v + 1) * d]
dot = lambda a, b: sum(x * y for x, y in zip(row(a), row(b)))
close = lambda a, b: abs(a - b) <= 1e-4 * max(1.0, abs(b))
scores, _ = load(sys.argv[2])
pairs = [(0, 1), (17, 4000), (19999, 0), (5, 5)]
assert len(scores) == len(pairs), len(scores)
for (s, t), got in zip(pairs, scores):
    assert close(got, dot(s, t)), (s, t, got, dot(s, t))
for out, keep in ((sys.argv[3], True), (sys.argv[4], False)):
    ids, shape = load(out + "/top_k_ids.npy")
    top, _ = load(out + "/top_k_scores.npy")
    assert shape == (3, 5), shape
    assert list(ids[0:5]) == list(ids[10:15])  # the same query twice
    for r, q in enumerate((0, 123, 0)):
        got = list(ids[5 * r:5 * r + 5])
        assert q not in got and len(set(got)) == 5, (q, got)
        assert all(top[5 * r + j] >= top[5 * r + j + 1] for j in range(4))
        for j, v in enumerate(got):
            assert close(top[5 * r + j], dot(q, v)), (q, v)
        if keep:  # every node but the query is a candidate: the brute-force best five
            best = sorted((dot(q, v) for v in range(n) if v != q), reverse=True)[:5]
            assert all(close(a, b) for a, b in zip(top[5 * r:5 * r + 5], best)), (q, best)
print("predict: pairs and top-k agree with the embeddings")
PY
if "$SKIFF" predict ds --checkpoint r.ckpt --out x --task node > refused.log 2>&1; then
  echo "FAIL: --task node accepted a link checkpoint"; exit 1
fi
grep -q "is a model for --task link" refused.log || { cat refused.log; exit 1; }
echo "OK"
