#!/usr/bin/env bash
# `mpirun -np W skiff train --distributed --ownership partitions`: each rank holds the rows of its
# range of the dataset's partitions and fetches the rest from their owners.
#   - Over a whole epoch, every rank's part of every batch -- its sampled blocks and the feature
#     rows it gathered -- is the one one process samples and gathers for the same seeds over the
#     whole graph (`skiff ownership --digest`), checksum for checksum, for W = 2 and 4, with GCN's
#     recorded degrees too.
#   - Three epochs of a W-rank job (dropout 0) match the one-process run of the same plan
#     (--ownership partitions alone): accuracies within 0.2 points (measured: equal), losses within
#     1e-5 relative (measured: 1e-8; the ranks' gradient sums are ordered differently); with
#     --accumulate 2 too.
#   - Within --memory (12 and 13 MiB per rank: none or some of a rank's partitions resident, the
#     rest read at fine grain), the parts are the same checksum for checksum, three epochs train
#     the same model bitwise (the same metrics), and every rank's peak RSS is within its budget
#     plus the fixed overhead.
#   - --export: each rank predicts the nodes it owns and rank 0 writes every node's row, byte for
#     byte what one process predicts from the run's checkpoint: layer by layer in memory (`skiff
#     predict`, W = 2 and 4), in batches within 12 MiB (`skiff predict --inference batches`).
#   - Rank 0's checkpoint resumes under the same job size; an unpartitioned dataset and ranks with
#     different --ownership are refused, naming the problem.
#   bash dist_owned.sh SKIFF_EXE DATASETS_DIR WORK_DIR
set -euo pipefail
SKIFF=$1
WORK=$3
command -v mpirun > /dev/null || { echo "SKIP: mpirun not found (Debian: openmpi-bin)"; exit 77; }
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"
MPI=(timeout 600 mpirun --oversubscribe --allow-run-as-root)
"$SKIFF" generate --preset small --out small > /dev/null 2>&1
"$SKIFF" partition small -k 8 -o smallp > /dev/null 2>&1
if ! "${MPI[@]}" -np 1 "$SKIFF" train small --epochs 0 --distributed > probe.log 2>&1; then
  if grep -q "has no MPI" probe.log; then echo "SKIP: skiff was built without MPI"; exit 77; fi
  echo "FAIL: a one-rank job did not run"; cat probe.log; exit 1
fi
COMMON=(--hidden 16 --fanouts 5,5 --eval-fanouts 5,5 --batch-size 512 --seed 5 --threads 1)

# The parts of one epoch's batches, job against one process.
for W in 2 4; do
  for model in sage gcn; do
    degrees=()
    [ $model = gcn ] && degrees=(--record-degrees)
    rm -f dig.*
    "${MPI[@]}" -np $W "$SKIFF" train smallp "${COMMON[@]}" --model $model --epochs 1 \
      --distributed --ownership partitions --batch-digest dig > digest$W.log 2>&1 ||
      { echo "FAIL: $W ranks ($model)"; cat digest$W.log; exit 1; }
    "$SKIFF" ownership smallp --ranks $W --ownership partitions --fanouts 5,5 --batch-size 512 \
      --seed 5 --epoch 0 "${degrees[@]}" --digest want$W.txt > /dev/null
    cat dig.* | sort > got.txt
    sort want$W.txt > want.txt
    [ -s want.txt ] && [ "$(wc -l < want.txt)" -gt "$W" ] || { echo "FAIL: no parts"; exit 1; }
    cmp got.txt want.txt || { echo "FAIL: $W ranks ($model) sampled other batches"; diff got.txt want.txt | head; exit 1; }
    echo "$W ranks ($model): $(wc -l < want.txt) batch parts as one process samples them: OK"
  done
done

# Training: W ranks against one process of the same plan.
RUN=(train smallp "${COMMON[@]}" --epochs 3 --dropout 0 --ownership partitions)
"$SKIFF" "${RUN[@]}" --metrics one.jsonl > one.log 2>&1 || { echo "FAIL: one process"; cat one.log; exit 1; }
close_runs() {  # close_runs ONE.jsonl JOB.jsonl
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
assert len(a) == len(b) == 3, (len(a), len(b))
for x, y in zip(a, b):
    for k in ("train_acc", "valid_acc", "test_acc"):
        assert abs(x[k] - y[k]) <= 0.002, (x["epoch"], k, x[k], y[k])
    for k in ("loss", "valid_loss"):
        assert abs(x[k] - y[k]) <= 1e-5 * abs(x[k]), (x["epoch"], k, x[k], y[k])
print("  last epoch: test accuracy %.4f (one process %.4f), loss %.8f (%.8f)"
      % (b[-1]["test_acc"], a[-1]["test_acc"], b[-1]["loss"], a[-1]["loss"]))
PY
}
for W in 2 4; do
  "${MPI[@]}" -np $W "$SKIFF" "${RUN[@]}" --distributed --metrics own$W.jsonl \
    --checkpoint own$W.ckpt > own$W.log 2>&1 || { echo "FAIL: $W ranks"; cat own$W.log; exit 1; }
  close_runs one.jsonl own$W.jsonl
  grep -q "the ranks fetched the picks of [1-9]" own$W.log || { echo "FAIL: nothing fetched"; cat own$W.log; exit 1; }
  echo "$W ranks train what one process trains: OK"
done
# Steps of two plan batches.
"$SKIFF" "${RUN[@]}" --accumulate 2 --metrics one_acc.jsonl > one_acc.log 2>&1 ||
  { echo "FAIL: one process, --accumulate 2"; cat one_acc.log; exit 1; }
"${MPI[@]}" -np 2 "$SKIFF" "${RUN[@]}" --accumulate 2 --distributed --metrics own_acc.jsonl \
  > own_acc.log 2>&1 || { echo "FAIL: 2 ranks, --accumulate 2"; cat own_acc.log; exit 1; }
close_runs one_acc.jsonl own_acc.jsonl
python3 - one.jsonl one_acc.jsonl <<'PY' || { echo "FAIL: --accumulate 2 changed nothing"; exit 1; }
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
assert a[-1]["loss"] != b[-1]["loss"]
PY
echo "2 ranks with --accumulate 2 train what one process trains: OK"

# Within --memory: each rank reads its range through its own buffer pool -- at 12 MiB none of its
# partitions resident, at 13 MiB some, the rest read at fine grain -- and samples, gathers and
# trains exactly what it does in memory, each rank within its budget + the fixed overhead.
"$SKIFF" ownership smallp --ranks 2 --ownership partitions --fanouts 5,5 --batch-size 512 \
  --seed 5 --epoch 0 --digest want_mem.txt > /dev/null
sort want_mem.txt > want.txt
within_budget() {  # within_budget LOG BUDGET_MIB
  python3 - "$1" "$2" <<'PY'
import re, sys
line = [l for l in open(sys.argv[1]) if "peak RSS per rank" in l][0]
unit = {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}
peaks = [float(v) * unit[u] for v, u in re.findall(r"rank \d+ ([0-9.]+) (KiB|MiB|GiB)", line)]
assert len(peaks) == 2 and max(peaks) <= float(sys.argv[2]) + 96, line
PY
}
for M in 12 13; do
  rm -f dig.*
  "${MPI[@]}" -np 2 "$SKIFF" train smallp "${COMMON[@]}" --epochs 1 --distributed \
    --ownership partitions --batch-digest dig --memory ${M}MiB > mem$M.log 2>&1 ||
    { echo "FAIL: 2 ranks within ${M} MiB"; cat mem$M.log; exit 1; }
  grep -q "read at fine grain" mem$M.log || { echo "FAIL: nothing read at fine grain"; cat mem$M.log; exit 1; }
  cat dig.* | sort | cmp - want.txt ||
    { echo "FAIL: within ${M} MiB the ranks sampled other batches"; exit 1; }
  within_budget mem$M.log $M || { echo "FAIL: a rank past its budget"; cat mem$M.log; exit 1; }
  echo "within ${M} MiB ($(grep -o "dataset: [a-z0-9]* resident" mem$M.log)): the parts of one process: OK"
done
EVAL=(--eval-batch-size 256)  # under what the budget allows: the same evaluation batches
"${MPI[@]}" -np 2 "$SKIFF" "${RUN[@]}" "${EVAL[@]}" --distributed --metrics inmem.jsonl \
  --checkpoint inmem.ckpt --export inmem.exp > inmem.log 2>&1 ||
  { echo "FAIL: 2 ranks in memory"; cat inmem.log; exit 1; }
"${MPI[@]}" -np 2 "$SKIFF" "${RUN[@]}" "${EVAL[@]}" --distributed --metrics ondisk.jsonl \
  --checkpoint ondisk.ckpt --export ondisk.exp --memory 12MiB > ondisk.log 2>&1 ||
  { echo "FAIL: 2 ranks within 12 MiB"; cat ondisk.log; exit 1; }
python3 - inmem.jsonl ondisk.jsonl <<'PY' || { echo "FAIL: within --memory the ranks trained another model"; exit 1; }
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
keys = ("loss", "train_acc", "valid_acc", "valid_loss", "test_acc")
assert len(a) == len(b) == 3 and all(x[k] == y[k] for x, y in zip(a, b) for k in keys), (a, b)
PY
within_budget ondisk.log 12 || { echo "FAIL: a rank past its budget"; cat ondisk.log; exit 1; }
echo "3 epochs within 12 MiB per rank train what the ranks train in memory, bitwise: OK"

# --export: the ranks predict the nodes they own and rank 0 writes them all, in the export's
# order -- what one process predicts from the same checkpoint, byte for byte: layer by layer in
# memory, in batches within --memory.
# Four ranks with the default evaluation fanouts (every neighbour, capped) and batch size.
"${MPI[@]}" -np 4 "$SKIFF" train smallp --hidden 16 --fanouts 5,5 --seed 5 --threads 1 --epochs 2 \
  --distributed --ownership partitions --checkpoint four.ckpt --export four.exp > four.log 2>&1 ||
  { echo "FAIL: 4 ranks with --export"; cat four.log; exit 1; }
for run in inmem:layers ondisk:batches four:layers; do
  name=${run%%:*}
  mode=${run#*:}
  said="layer by layer"
  [ $mode = batches ] && said="in batches"
  grep -q "every node, $said" $name.log ||
    { echo "FAIL: $name did not export $mode"; cat $name.log; exit 1; }
  "$SKIFF" predict smallp --checkpoint $name.ckpt --out $name.pred --threads 1 --inference $mode \
    > /dev/null 2>&1 || { echo "FAIL: predict $name"; exit 1; }
  for f in predictions.npy embeddings.npy; do
    cmp $name.exp/$f $name.pred/$f || { echo "FAIL: $name's export differs from one process's"; exit 1; }
  done
done
echo "--export: every node's prediction and embedding, as one process predicts them: OK"

# Resume under the same job size.
"${MPI[@]}" -np 2 "$SKIFF" train smallp --resume own2.ckpt --epochs 4 --distributed --threads 1 \
  > resume.log 2>&1 || { echo "FAIL: resume"; cat resume.log; exit 1; }
grep -q "resuming after epoch 2" resume.log || { echo "FAIL: resume"; cat resume.log; exit 1; }
echo "resume: OK"

# Refusals.
expect_refusal() {  # expect_refusal TEXT COMMAND...
  local text=$1
  shift
  if "$@" > refused.log 2>&1; then echo "FAIL: accepted: $*"; exit 1; fi
  grep -q -- "$text" refused.log || { echo "FAIL: no '$text'"; cat refused.log; exit 1; }
}
expect_refusal "is not partitioned: run skiff partition" \
  "$SKIFF" train small --ownership partitions --epochs 1 --threads 1
expect_refusal "follows one process's buffer states" \
  "$SKIFF" train smallp --ownership partitions --epochs 1 --threads 1 --memory 13MiB \
  --sampling in-buffer
expect_refusal "--ownership is \"partitions\" on rank 1 but \"replicated\" on rank 0" \
  "${MPI[@]}" -np 1 "$SKIFF" train smallp --epochs 1 --threads 1 --distributed : \
  -np 1 "$SKIFF" train smallp --epochs 1 --threads 1 --distributed --ownership partitions
echo "refusals: OK"
echo "train --distributed --ownership partitions: OK"
