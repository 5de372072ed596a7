#!/usr/bin/env bash
# Prediction shared among replicated ranks (docs/distributed.md, "Prediction on several ranks"):
# every rank holds the whole dataset. Layer by layer they take each layer's chunks in turns; in
# batches each predicts its share of the one-process plan's batches.
#   - `mpirun -np W skiff train --distributed --export DIR` writes, byte for byte, what one
#     process's `skiff predict` writes for the run's best checkpoint: layer by layer (W = 2 and 4;
#     the runs' best epoch is not their last, so rank 0 must send the others the best model) and
#     in batches within --memory (W = 2);
#   - `mpirun -np W skiff predict --distributed` writes what one process writes: layer by layer
#     (W = 3), in batches (W = 3) and within --memory (W = 2);
#   - ranks that read different checkpoints refuse and write nothing;
#   - link prediction: `predict --distributed` writes one process's embeddings, pair scores and
#     top-k (W = 2 and 3, and within --memory on 2), and a run's --export on 2 ranks what
#     `skiff predict` writes for its checkpoint.
#   bash dist_predict.sh SKIFF_EXE DATASETS_DIR WORK_DIR
set -euo pipefail
SKIFF=$1
WORK=$3
command -v mpirun > /dev/null || { echo "SKIP: mpirun not found (Debian: openmpi-bin)"; exit 77; }
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"
MPI=(timeout 600 mpirun --oversubscribe --allow-run-as-root)
"$SKIFF" generate --preset small --out small > /dev/null 2>&1
if ! "${MPI[@]}" -np 1 "$SKIFF" train small --epochs 0 --distributed > probe.log 2>&1; then
  if grep -q "has no MPI" probe.log; then echo "SKIP: skiff was built without MPI"; exit 77; fi
  echo "FAIL: a one-rank job did not run"; cat probe.log; exit 1
fi

same_files() {
  cmp "$1/embeddings.npy" "$2/embeddings.npy" && cmp "$1/predictions.npy" "$2/predictions.npy"
}

# A learning rate high enough that the last epoch is not the best one.
RUN=(train small --hidden 16 --epochs 4 --lr 0.5 --threads 1)
for W in 2 4; do
  "${MPI[@]}" -np $W "$SKIFF" "${RUN[@]}" --distributed --checkpoint w$W.ckpt --export w$W.export \
    > w$W.log 2>&1 || { echo "FAIL: $W ranks with --export"; cat w$W.log; exit 1; }
  grep -q "layer by layer on $W rank(s)" w$W.log || { echo "FAIL: not shared"; cat w$W.log; exit 1; }
  grep -q "best valid accuracy .* (epoch 3)" w$W.log && { echo "FAIL: the best epoch is the last"; exit 1; }
  "$SKIFF" predict small --checkpoint w$W.ckpt --out w$W.pred --threads 1 > /dev/null 2>&1
  same_files w$W.export w$W.pred || { echo "FAIL: $W ranks' export differs from skiff predict"; exit 1; }
  echo "$W ranks' --export = skiff predict of the best checkpoint: OK"
done

# Within --memory each rank predicts its share of the batches through its own pipeline.
"${MPI[@]}" -np 2 "$SKIFF" "${RUN[@]}" --fanouts 5,5 --eval-fanouts 5,5 --batch-size 512 \
  --distributed --memory 8MiB --checkpoint m2.ckpt --export m2.export > m2.log 2>&1 ||
  { echo "FAIL: 2 ranks with --memory --export"; cat m2.log; exit 1; }
grep -q "in batches on 2 rank(s)" m2.log || { echo "FAIL: not shared"; cat m2.log; exit 1; }
"$SKIFF" predict small --checkpoint m2.ckpt --out m2.pred --memory 8MiB --threads 1 > /dev/null 2>&1
same_files m2.export m2.pred || { echo "FAIL: 2 ranks' export in batches differs"; exit 1; }
echo "2 ranks' --export within --memory = skiff predict --memory: OK"

# skiff predict --distributed (rank 0 writes), each way, against one process.
predict_ranks() {  # predict_ranks W NAME CHECKPOINT ONE_PROCESS_OUTPUT [OPTIONS...]
  local w=$1 name=$2 ckpt=$3 want=$4
  shift 4
  "${MPI[@]}" -np "$w" "$SKIFF" predict small --checkpoint "$ckpt" --out "$name" --distributed \
    --threads 1 "$@" > "$name.log" 2>&1 || { echo "FAIL: predict $name"; cat "$name.log"; exit 1; }
  grep -q "($w ranks)" "$name.log" || { echo "FAIL: $name not on $w ranks"; cat "$name.log"; exit 1; }
  same_files "$name" "$want" || { echo "FAIL: $name differs from one process's"; exit 1; }
  echo "skiff predict --distributed $*: $w ranks = one process: OK"
}
predict_ranks 3 p3 w2.ckpt w2.pred
"$SKIFF" predict small --checkpoint m2.ckpt --out m2.batches --inference batches --threads 1 \
  > /dev/null 2>&1
predict_ranks 3 p3b m2.ckpt m2.batches --inference batches
predict_ranks 2 p2m m2.ckpt m2.pred --memory 8MiB

# Rank 1 reads the last epoch's checkpoint, rank 0 the best: the same options, other parameters.
cat > other_ckpt.sh <<'EOF'
#!/usr/bin/env bash
if [ "${OMPI_COMM_WORLD_RANK:-0}" = 1 ]; then exec "$@" --checkpoint w2.ckpt.last; fi
exec "$@" --checkpoint w2.ckpt
EOF
if "${MPI[@]}" -np 2 bash other_ckpt.sh "$SKIFF" predict small --out mixed --distributed \
    > mixed.log 2>&1; then
  echo "FAIL: ranks with different checkpoints predicted"; exit 1
fi
grep -q "rank 1 read other parameters than rank 0" mixed.log || { echo "FAIL: message"; cat mixed.log; exit 1; }
[ ! -e mixed ] || { echo "FAIL: mixed ranks wrote an output"; exit 1; }
echo "refusals: OK"

# Link prediction: the ranks share the canonical encoding batches (and the top-k scoring), rank 0
# writes -- byte for byte what one process writes: embeddings, the scores of given pairs and each
# query's top-k, on 2 and 3 ranks, and within --memory on 2; a data-parallel run's --export, whose
# best epoch is not its last, writes what skiff predict writes for its checkpoint.
"$SKIFF" generate --nodes 3000 --avg-degree 6 --classes 4 --feature-dim 8 \
  --split-edges 0.3,0.05,0.05 --seed 3 --out links > /dev/null 2>&1
LINK=(--task link --hidden 8 --out-dim 8 --fanouts 3,3 --eval-edges 100 --eval-negatives 50
  --threads 1 --seed 4)
"$SKIFF" train links "${LINK[@]}" --epochs 1 --checkpoint link.ckpt > link.log 2>&1 ||
  { echo "FAIL: link training"; cat link.log; exit 1; }
python3 - <<'PY'
import random
random.seed(1)
with open("pairs.txt", "w") as f:
    for _ in range(300):
        f.write(f"{random.randrange(3000)} {random.randrange(3000)}\n")
with open("queries.txt", "w") as f:
    for _ in range(25):
        f.write(f"{random.randrange(3000)}\n")
PY
for kind in embeddings pairs top-k; do
  request=()
  [ $kind = pairs ] && request=(--pairs pairs.txt)
  [ $kind = top-k ] && request=(--top-k 5 --nodes queries.txt)
  "$SKIFF" predict links --checkpoint link.ckpt --out "link-one-$kind" "${request[@]}" --threads 1 \
    > /dev/null 2>&1 || { echo "FAIL: link predict $kind"; exit 1; }
  for run in 2: 3: 2:12MiB; do
    IFS=: read -r w memory <<< "$run"
    budget=()
    [ -n "$memory" ] && budget=(--memory "$memory")
    if [ -n "$memory" ]; then
      rm -rf "link-mem-$kind"
      "$SKIFF" predict links --checkpoint link.ckpt --out "link-mem-$kind" "${request[@]}" \
        "${budget[@]}" --threads 1 > /dev/null 2>&1 || { echo "FAIL: link predict $kind $memory"; exit 1; }
    fi
    want="link-one-$kind"
    [ -n "$memory" ] && want="link-mem-$kind"
    rm -rf got
    "${MPI[@]}" -np "$w" "$SKIFF" predict links --checkpoint link.ckpt --out got "${request[@]}" \
      "${budget[@]}" --threads 1 --distributed > linkp.log 2>&1 ||
      { echo "FAIL: link predict $kind on $w ranks"; cat linkp.log; exit 1; }
    for f in "$want"/*; do
      cmp "$f" "got/$(basename "$f")" || { echo "FAIL: link $kind on $run: $(basename "$f") differs"; exit 1; }
    done
    echo "link $kind on $w ranks ${memory:-in memory}: as one process: OK"
  done
done
cmp link-one-embeddings/embeddings.npy link-mem-embeddings/embeddings.npy ||
  { echo "FAIL: link embeddings within --memory differ from in memory"; exit 1; }
"${MPI[@]}" -np 2 "$SKIFF" train links "${LINK[@]}" --lr 0.05 --epochs 3 --distributed \
  --checkpoint linkw.ckpt --export linkw.exp > linkw.log 2>&1 ||
  { echo "FAIL: link --export on 2 ranks"; cat linkw.log; exit 1; }
grep -q "best epoch [01]$" linkw.log || { echo "FAIL: the best epoch is the last"; cat linkw.log; exit 1; }
grep -q "embeddings: linkw.exp (every node, on 2 ranks" linkw.log || { echo "FAIL: not shared"; cat linkw.log; exit 1; }
"$SKIFF" predict links --checkpoint linkw.ckpt --out linkw.pred --threads 1 > /dev/null 2>&1 ||
  { echo "FAIL: predict linkw"; exit 1; }
cmp linkw.exp/embeddings.npy linkw.pred/embeddings.npy ||
  { echo "FAIL: the link --export differs from skiff predict of its checkpoint"; exit 1; }
echo "link --export on 2 ranks: as skiff predict of its checkpoint: OK"
