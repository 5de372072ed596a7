#!/usr/bin/env bash
# `skiff predict` layer by layer (the default on the CPU in memory) and in batches compute the same
# model: with every neighbour at evaluation (--eval-fanouts -1,-1) they agree on the class of
# every node but a few near-ties; with sampled evaluation fanouts (other samples) they are as
# accurate. `skiff train --export` predicts as `skiff predict` does (byte for byte), from the best
# checkpoint or, without one, the last epoch's model. Within
# --memory, auto predicts in batches; layers is refused there.
#   bash predict_layers.sh SKIFF_EXE DATASETS_DIR WORK_DIR
set -euo pipefail
skiff=$1
work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$skiff" generate --preset small --out ds > /dev/null 2>&1
run() {  # LOG ARGS...: runs skiff, printing its log on failure
  local log=$1
  shift
  "$skiff" "$@" > "$log" 2>&1 || { echo "FAIL: skiff $*"; cat "$log"; exit 1; }
}
run train-all.log train ds --epochs 2 --threads 2 --eval-fanouts -1,-1 --checkpoint all.ckpt \
  --export exported
grep -q "predicting layer by layer" train-all.log || { echo "FAIL: --export not by layer"; exit 1; }
run layers.log predict ds --checkpoint all.ckpt --out layers --threads 2
run batches.log predict ds --checkpoint all.ckpt --out batches --threads 2 --inference batches
cmp exported/predictions.npy layers/predictions.npy
cmp exported/embeddings.npy layers/embeddings.npy
# Without --checkpoint, --export writes the last epoch's model: after one epoch, the checkpointed
# one (the run is deterministic), predicted after the run's partitions were freed.
run train-last.log train ds --epochs 1 --threads 2 --eval-fanouts -1,-1 --export last
run train-one.log train ds --epochs 1 --threads 2 --eval-fanouts -1,-1 --checkpoint one.ckpt
run one.log predict ds --checkpoint one.ckpt --out one --threads 2
cmp last/predictions.npy one/predictions.npy
cmp last/embeddings.npy one/embeddings.npy
run train-sampled.log train ds --epochs 2 --threads 2 --eval-fanouts 3,3 --checkpoint sampled.ckpt
run sampled-layers.log predict ds --checkpoint sampled.ckpt --out sampled-layers --threads 2
run sampled-batches.log predict ds --checkpoint sampled.ckpt --out sampled-batches --threads 2 \
  --inference batches
run ooc.log predict ds --checkpoint sampled.ckpt --out ooc --threads 2 --memory 64MiB
grep -q "predicting layer by layer" ooc.log && { echo "FAIL: layers within --memory"; exit 1; }
cmp sampled-batches/predictions.npy ooc/predictions.npy || echo "(batches cut differently within --memory)"
if "$skiff" predict ds --checkpoint sampled.ckpt --out refused --inference layers --memory 64MiB \
  > refused.log 2>&1 || ! grep -q "cannot run within --memory" refused.log; then
  echo "FAIL: --inference layers --memory"; cat refused.log; exit 1
fi
python3 - <<'PY'
import array, sys
def npy(path, code):
    data = open(path, "rb").read()
    header = 10 + int.from_bytes(data[8:10], "little")  # .npy v1: magic, version, header length
    values = array.array(code)
    values.frombytes(data[header:])
    return values
def agree(a, b):
    return sum(1 for x, y in zip(a, b) if x == y) / len(a)
ok = True
full = agree(npy("layers/predictions.npy", "i"), npy("batches/predictions.npy", "i"))
e1, e2 = npy("layers/embeddings.npy", "f"), npy("batches/embeddings.npy", "f")
worst = max(abs(x - y) / (1 + abs(y)) for x, y in zip(e1, e2))
print(f"every neighbour: classes agree on {100 * full:.2f}%, embeddings within {worst:.2e}")
ok = ok and full >= 0.998 and worst < 1e-4
labels = array.array("i")
labels.frombytes(open("ds/labels.bin", "rb").read())
labels = labels[:len(npy("layers/predictions.npy", "i"))]  # the file is padded
def accuracy(path):
    pairs = [(p, l) for p, l in zip(npy(path, "i"), labels) if l >= 0]
    return sum(1 for p, l in pairs if p == l) / len(pairs)
by_layer, by_batch = accuracy("sampled-layers/predictions.npy"), accuracy("sampled-batches/predictions.npy")
print(f"sampled (3,3): accuracy {100 * by_layer:.2f}% by layer, {100 * by_batch:.2f}% in batches")
ok = ok and by_layer >= by_batch - 0.02
sys.exit(0 if ok else 1)
PY
echo OK
