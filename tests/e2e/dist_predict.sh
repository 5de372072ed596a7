#!/usr/bin/env bash
# Prediction shared among replicated ranks (docs/distributed.md): every rank holds the whole
# dataset and they take each layer's chunks in turns.
#   - `mpirun -np W skiff train --distributed --export DIR` writes, byte for byte, what one
#     process's `skiff predict` writes for the run's best checkpoint (W = 2 and 4; the runs' best
#     epoch is not their last, so rank 0 must send the other ranks the best model);
#   - `mpirun -np 3 skiff predict --distributed` writes what one process writes;
#   - ranks that read different checkpoints, or are asked to predict in batches, refuse and
#     write nothing.
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

"${MPI[@]}" -np 3 "$SKIFF" predict small --checkpoint w2.ckpt --out p3 --distributed --threads 1 \
  > p3.log 2>&1 || { echo "FAIL: predict on 3 ranks"; cat p3.log; exit 1; }
grep -q "(3 ranks)" p3.log || { echo "FAIL: predict not on 3 ranks"; cat p3.log; exit 1; }
same_files p3 w2.pred || { echo "FAIL: 3 ranks' predict differs from one process's"; exit 1; }
echo "skiff predict --distributed on 3 ranks = one process: OK"

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
if "${MPI[@]}" -np 2 "$SKIFF" predict small --checkpoint w2.ckpt --out batches --distributed \
    --inference batches > batches.log 2>&1; then
  echo "FAIL: ranks predicted in batches"; exit 1
fi
grep -q "run in one process" batches.log || { echo "FAIL: message"; cat batches.log; exit 1; }
[ ! -e batches ] || { echo "FAIL: a refused job wrote an output"; exit 1; }
echo "refusals: OK"
