#!/usr/bin/env bash
# `mpirun -np W skiff train --distributed`: a W-rank run computes what one process computes with
# --accumulate W, and with --accumulate A what one process computes with W * A (the same
# batches, gradients summed in batch order, one step): the same metrics every epoch (accuracies
# exactly, losses to 1e-9: the ranks add their loss totals in another order) and bitwise the
# same model (predictions and embeddings of the last epoch's checkpoint); for node
# classification and for link prediction. Out of core (--memory), one process's --accumulate and
# the ranks compute what they compute in memory.
# Ranks started with different options refuse to train, naming the option; --resume needs the
# job size the checkpoint was written by.
#   bash dist_train.sh SKIFF_EXE DATASETS_DIR WORK_DIR
set -euo pipefail
SKIFF=$1
WORK=$3
command -v mpirun > /dev/null || { echo "SKIP: mpirun not found (Debian: openmpi-bin)"; exit 77; }
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"
MPI=(timeout 600 mpirun --oversubscribe --allow-run-as-root)
"$SKIFF" generate --preset small --out small > /dev/null 2>&1
RUN=(train small --hidden 16 --fanouts 5,5 --eval-fanouts 5,5 --batch-size 512 --epochs 3 --seed 5
     --threads 1)

if ! "${MPI[@]}" -np 1 "$SKIFF" train small --epochs 0 --distributed > probe.log 2>&1; then
  if grep -q "has no MPI" probe.log; then echo "SKIP: skiff was built without MPI"; exit 77; fi
  echo "FAIL: a one-rank job did not run"; cat probe.log; exit 1
fi

# The metrics of two runs agree epoch by epoch; their last models predict bitwise alike.
same_run() {
  python3 - "$1.jsonl" "$2.jsonl" <<'PY' || return 1
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
assert len(a) == len(b) == 3, (len(a), len(b))
for x, y in zip(a, b):
    for k in ("train_acc", "valid_acc", "test_acc"):
        assert x[k] == y[k], (x["epoch"], k, x[k], y[k])
    for k in ("loss", "valid_loss"):
        assert abs(x[k] - y[k]) <= 1e-9 * abs(x[k]), (x["epoch"], k, x[k], y[k])
PY
  "$SKIFF" predict small --checkpoint "$1.ckpt.last" --out "$1.pred" --threads 1 > /dev/null 2>&1
  "$SKIFF" predict small --checkpoint "$2.ckpt.last" --out "$2.pred" --threads 1 > /dev/null 2>&1
  cmp "$1.pred/embeddings.npy" "$2.pred/embeddings.npy"
  cmp "$1.pred/predictions.npy" "$2.pred/predictions.npy"
}

for W in 2 4; do
  "$SKIFF" "${RUN[@]}" --accumulate $W --checkpoint acc$W.ckpt --metrics acc$W.jsonl \
    > acc$W.log 2>&1 || { echo "FAIL: --accumulate $W"; cat acc$W.log; exit 1; }
  "${MPI[@]}" -np $W "$SKIFF" "${RUN[@]}" --distributed --checkpoint dist$W.ckpt \
    --metrics dist$W.jsonl > dist$W.log 2>&1 || { echo "FAIL: $W ranks"; cat dist$W.log; exit 1; }
  same_run acc$W dist$W || { echo "FAIL: $W ranks differ from --accumulate $W"; exit 1; }
  # Rank 0 alone prints the epochs.
  [ "$(grep -c '^.*epoch 2: loss' dist$W.log)" -eq 1 ] || { echo "FAIL: epoch lines"; cat dist$W.log; exit 1; }
  echo "$W ranks = --accumulate $W: OK"
done

# Two ranks accumulating two batches each: one process's --accumulate 4 (acc4, above).
"${MPI[@]}" -np 2 "$SKIFF" "${RUN[@]}" --distributed --accumulate 2 --checkpoint dist2x2.ckpt \
  --metrics dist2x2.jsonl > dist2x2.log 2>&1 || { echo "FAIL: 2 ranks x 2"; cat dist2x2.log; exit 1; }
same_run acc4 dist2x2 || { echo "FAIL: 2 ranks --accumulate 2 differ from --accumulate 4"; exit 1; }
echo "2 ranks --accumulate 2 = --accumulate 4: OK"

# One process's steps of four batches out of core (--memory: every row streamed from disk through
# the pipeline): the in-memory run's (acc4, above).
"$SKIFF" "${RUN[@]}" --accumulate 4 --memory 8MiB --checkpoint ooc4.ckpt --metrics ooc4.jsonl \
  > ooc4.log 2>&1 || { echo "FAIL: --accumulate 4 --memory 8MiB"; cat ooc4.log; exit 1; }
grep -q "^skiff: info: out of core" ooc4.log || { echo "FAIL: not out of core"; cat ooc4.log; exit 1; }
same_run acc4 ooc4 || { echo "FAIL: --accumulate 4 out of core differs from in memory"; exit 1; }
echo "--accumulate 4 out of core = in memory: OK"

# Ranks out of core (--memory: each rank's own pipeline within the budget, fed its share of the
# plan): the in-memory --accumulate 2 run (acc2, above).
"${MPI[@]}" -np 2 "$SKIFF" "${RUN[@]}" --distributed --memory 8MiB --checkpoint dooc2.ckpt \
  --metrics dooc2.jsonl > dooc2.log 2>&1 || { echo "FAIL: 2 ranks, --memory"; cat dooc2.log; exit 1; }
grep -q "^skiff: info: out of core" dooc2.log || { echo "FAIL: not out of core"; cat dooc2.log; exit 1; }
same_run acc2 dooc2 || { echo "FAIL: 2 ranks out of core differ from --accumulate 2"; exit 1; }
# Every rank keeps its budget's promise: its peak RSS <= budget + the fixed overhead.
python3 - dooc2.log <<'PY' || { echo "FAIL: a rank's peak RSS"; grep "peak RSS" dooc2.log; exit 1; }
import re, sys
line = next(l for l in open(sys.argv[1]) if "peak RSS per rank:" in l)
unit = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
peaks = [float(v) * unit[u] for v, u in re.findall(r"rank \d+ ([0-9.]+) (B|KiB|MiB|GiB)", line)]
budget, overhead = (float(v) * unit[u] for v, u in re.findall(r"(?:budget|overhead) ([0-9.]+) (B|KiB|MiB|GiB)", line))
assert len(peaks) == 2 and max(peaks) <= budget + overhead, line
print("  " + line.split("info: ")[-1].strip())
PY
echo "2 ranks out of core = --accumulate 2 in memory: OK"
if "${MPI[@]}" -np 2 "$SKIFF" "${RUN[@]}" --distributed --memory 8MiB --sampling in-buffer \
    > inbuf.log 2>&1; then
  echo "FAIL: ranks trained with --sampling in-buffer"; exit 1
fi
grep -q "use --sampling exact" inbuf.log || { echo "FAIL: in-buffer refusal"; cat inbuf.log; exit 1; }

# Link prediction: W ranks (x A) against one process's --accumulate W*A -- the same metrics
# (losses to 1e-9) and bitwise the same encoder (the last checkpoint's embeddings).
"$SKIFF" generate --nodes 5000 --avg-degree 8 --classes 4 --feature-dim 16 --split 0.5,0.2,0.3 \
  --split-edges 0.3,0.05,0.05 --seed 3 --out links > /dev/null 2>&1
LINK=(train links --task link --hidden 16 --fanouts 5,5 --eval-fanouts 5,5 --batch-size 256
      --epochs 3 --seed 5 --threads 1 --eval-negatives 50)
same_link_run() {
  python3 - "$1.jsonl" "$2.jsonl" <<'PY' || return 1
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
assert len(a) == len(b) == 3, (len(a), len(b))
for x, y in zip(a, b):
    for k in x:
        if k == "loss":
            assert abs(x[k] - y[k]) <= 1e-9 * abs(x[k]), (x["epoch"], k, x[k], y[k])
        elif k.startswith(("valid_", "test_")) and not k.endswith("seconds"):
            assert x[k] == y[k], (x["epoch"], k, x[k], y[k])
PY
  for run in "$1" "$2"; do
    "$SKIFF" predict links --task link --checkpoint "$run.ckpt.last" --out "$run.emb" --threads 1 \
      > /dev/null 2>&1 || { echo "FAIL: predict $run"; exit 1; }
  done
  cmp "$1.emb/embeddings.npy" "$2.emb/embeddings.npy"
}
for WA in "2 1" "4 1" "2 2"; do
  read -r W A <<< "$WA"
  "$SKIFF" "${LINK[@]}" --accumulate $((W * A)) --checkpoint lacc$W$A.ckpt --metrics lacc$W$A.jsonl \
    > lacc$W$A.log 2>&1 || { echo "FAIL: link --accumulate $((W * A))"; cat lacc$W$A.log; exit 1; }
  "${MPI[@]}" -np $W "$SKIFF" "${LINK[@]}" --distributed --accumulate $A --checkpoint ldist$W$A.ckpt \
    --metrics ldist$W$A.jsonl > ldist$W$A.log 2>&1 || { echo "FAIL: link, $W ranks"; cat ldist$W$A.log; exit 1; }
  same_link_run lacc$W$A ldist$W$A ||
    { echo "FAIL: link, $W ranks x $A differ from --accumulate $((W * A))"; exit 1; }
  echo "link: $W ranks x --accumulate $A = --accumulate $((W * A)): OK"
done

# Link ranks out of core (--memory: each rank's own pipeline within the budget) compute the
# in-memory run (lacc21, above).
"${MPI[@]}" -np 2 "$SKIFF" "${LINK[@]}" --distributed --memory 8MiB --checkpoint looc.ckpt \
  --metrics looc.jsonl > looc.log 2>&1 || { echo "FAIL: link, 2 ranks, --memory"; cat looc.log; exit 1; }
grep -q "^skiff: info: out of core" looc.log || { echo "FAIL: not out of core"; cat looc.log; exit 1; }
same_link_run lacc21 looc || { echo "FAIL: link, 2 ranks out of core differ from in memory"; exit 1; }
echo "link: 2 ranks out of core = --accumulate 2 in memory: OK"

# One rank with --distributed is the plain run.
"$SKIFF" "${RUN[@]}" --metrics plain.jsonl --checkpoint plain.ckpt > plain.log 2>&1
"${MPI[@]}" -np 1 "$SKIFF" "${RUN[@]}" --distributed --metrics one.jsonl --checkpoint one.ckpt \
  > one.log 2>&1
same_run plain one || { echo "FAIL: one rank differs from the plain run"; exit 1; }
echo "one rank = the plain run: OK"

# Ranks with different options refuse to start, naming the option.
if "${MPI[@]}" -np 1 "$SKIFF" "${RUN[@]}" --distributed --lr 0.01 : \
    -np 1 "$SKIFF" "${RUN[@]}" --distributed --lr 0.02 > differ.log 2>&1; then
  echo "FAIL: ranks with different --lr trained"; exit 1
fi
grep -q -- "--lr is 0.02 on rank 1 but 0.01 on rank 0" differ.log ||
  { echo "FAIL: the difference is not named"; cat differ.log; exit 1; }
[ ! -e differ.ckpt ] || { echo "FAIL: a checkpoint was written"; exit 1; }
echo "different options refused: OK"

# --resume with the job size the checkpoint was written by, and not with another.
"${MPI[@]}" -np 2 "$SKIFF" train small --resume dist2.ckpt --epochs 4 --distributed --threads 1 \
  > resume.log 2>&1 || { echo "FAIL: resume"; cat resume.log; exit 1; }
grep -q "resuming after epoch 2" resume.log || { echo "FAIL: resume"; cat resume.log; exit 1; }
if "$SKIFF" train small --resume dist2.ckpt --epochs 5 --threads 1 > resume1.log 2>&1; then
  echo "FAIL: a 2-rank checkpoint resumed in one process"; exit 1
fi
grep -q "written by a job of 2 rank(s), this job has 1" resume1.log ||
  { echo "FAIL: the sizes are not named"; cat resume1.log; exit 1; }
echo "train --distributed: OK"
