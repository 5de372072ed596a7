#!/usr/bin/env bash
# `skiff shard`: each rank of an owned-partition job reads its own shard (DIR/rank-<r>) instead of
# the whole dataset.
#   - Each shard holds the lists and feature rows of its rank's nodes alone: its graph.neighbors and
#     features.bin are well under the whole dataset's, and verify (`skiff info --verify`).
#   - A 2-rank job on the shards writes the same checkpoint and the same --export, byte for byte, as
#     the same job on the whole dataset: in memory, and within 12 MiB per rank (every list and row
#     of the shard read through the buffer pool); its checkpoint resumes on the shards.
#   - `skiff predict --distributed --ownership partitions` on the shards (and on the whole dataset)
#     writes what one process predicts, byte for byte: layer by layer, in batches, within 12 MiB.
#   - A dataset with raw IDs keeps them: each shard's ID map holds every node's.
#   - Refused, naming the problem: more ranks than shards, a missing shard (naming the rank),
#     every rank given one rank's shard, training or predicting on shards without --ownership
#     partitions, an unpartitioned dataset, a shard sharded again.
#   bash dist_shard.sh SKIFF_EXE DATASETS_DIR WORK_DIR
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

"$SKIFF" shard smallp --ranks 2 -o shards > shard.log 2>&1 || { echo "FAIL: shard"; cat shard.log; exit 1; }
python3 - smallp shards <<'PY'
import json, sys
whole = json.load(open(sys.argv[1] + "/manifest.json"))
for r in range(2):
    m = json.load(open(f"{sys.argv[2]}/rank-{r}/manifest.json"))
    s = m["shard"]
    assert s["rank"] == r and len(s["rank_first"]) == 3, s
    assert s["dataset_xxh3"] == whole["manifest_xxh3"], s
    for f in ("graph.neighbors", "features.bin"):
        mine, all_ = m["files"][f]["data_bytes"], whole["files"][f]["data_bytes"]
        assert mine < 0.75 * all_, f"rank {r}'s {f}: {mine} of {all_} bytes"
    assert m["files"]["labels.bin"] == whole["files"]["labels.bin"]
    assert "edge_buckets_file" not in m["files"]
print("shards: each holds its own rows alone: OK")
PY
for r in 0 1; do
  "$SKIFF" info "shards/rank-$r" --verify > info$r.log 2>&1 || { echo "FAIL: verify rank $r"; cat info$r.log; exit 1; }
  grep -q "shard        rank $r of 2" info$r.log || { echo "FAIL: info"; cat info$r.log; exit 1; }
done
echo "shards verify: OK"

# The same job on the shards and on the whole dataset.
ONE=(--hidden 16 --fanouts 5,5 --eval-fanouts 5,5 --batch-size 512 --seed 5 --threads 1 --epochs 2
  --dropout 0)
RUN=("${ONE[@]}" --distributed --ownership partitions)
for memory in "" 12MiB; do
  budget=()
  [ -n "$memory" ] && budget=(--memory "$memory")
  for data in smallp shards; do
    rm -rf "out-$data"
    "${MPI[@]}" -np 2 "$SKIFF" train "$data" "${RUN[@]}" "${budget[@]}" --checkpoint "$data.ckpt" \
      --export "out-$data" > "$data.log" 2>&1 || { echo "FAIL: $data ${memory:-in memory}"; cat "$data.log"; exit 1; }
  done
  if [ -n "$memory" ]; then
    grep -q "read at fine grain" shards.log || { echo "FAIL: nothing read at fine grain"; cat shards.log; exit 1; }
  fi
  cmp smallp.ckpt shards.ckpt || { echo "FAIL: the checkpoints differ (${memory:-in memory})"; exit 1; }
  for f in out-smallp/*; do
    cmp "$f" "out-shards/$(basename "$f")" || { echo "FAIL: $f differs (${memory:-in memory})"; exit 1; }
  done
  echo "2 ranks on shards ${memory:-in memory}: checkpoint and export as on the whole dataset: OK"
done
"${MPI[@]}" -np 2 "$SKIFF" train shards --resume shards.ckpt --epochs 3 --distributed --threads 1 \
  > resume.log 2>&1 || { echo "FAIL: resume"; cat resume.log; exit 1; }
grep -q "resuming after epoch [12] from shards.ckpt" resume.log || { echo "FAIL: resume"; cat resume.log; exit 1; }
echo "resume on shards: OK"

# skiff predict on the shards: each rank predicts the nodes it owns, byte for byte what one process
# predicts with the whole dataset -- layer by layer, in batches, and in batches within 12 MiB per
# rank; and with --ownership partitions on the whole dataset too.
"$SKIFF" train smallp "${ONE[@]}" --eval-batch-size 256 --checkpoint one.ckpt > one.log 2>&1 ||
  { echo "FAIL: one process"; cat one.log; exit 1; }
for mode in layers batches; do
  "$SKIFF" predict smallp --checkpoint one.ckpt --out "want-$mode" --inference $mode --threads 1 \
    > /dev/null 2>&1 || { echo "FAIL: predict $mode"; exit 1; }
done
for run in shards:layers: shards:batches: shards:batches:12MiB smallp:layers:; do
  IFS=: read -r data mode memory <<< "$run"
  budget=()
  [ -n "$memory" ] && budget=(--memory "$memory")
  rm -rf got
  "${MPI[@]}" -np 2 "$SKIFF" predict "$data" --checkpoint one.ckpt --out got --distributed \
    --ownership partitions --inference $mode "${budget[@]}" --threads 1 > predict.log 2>&1 ||
    { echo "FAIL: predict $run"; cat predict.log; exit 1; }
  for f in predictions.npy embeddings.npy; do
    cmp "want-$mode/$f" "got/$f" || { echo "FAIL: predict $run: $f differs from one process's"; exit 1; }
  done
  echo "predict on 2 owned ranks ($run): as one process predicts: OK"
done

# Raw IDs: each shard maps every node.
python3 - <<'PY'
import random
random.seed(3)
ids = random.sample(range(10**6, 10**9), 400)
with open("edges.csv", "w") as f:
    for i, a in enumerate(ids):
        for b in random.sample(ids, 4):
            if a != b:
                f.write(f"{a},{b}\n")
PY
"$SKIFF" convert edges.csv raw --undirected --partitions 4 > convert.log 2>&1 || { echo "FAIL: convert"; cat convert.log; exit 1; }
"$SKIFF" shard raw --ranks 2 -o rawshards > /dev/null 2>&1 || { echo "FAIL: shard raw"; exit 1; }
nodes=$("$SKIFF" info raw | awk '/^nodes/ {print $2}')
for r in 0 1; do
  "$SKIFF" info "rawshards/rank-$r" --verify > raw$r.log 2>&1 || { echo "FAIL: verify raw $r"; cat raw$r.log; exit 1; }
  grep -q "id map       yes (idmap/): $nodes raw IDs" raw$r.log || { echo "FAIL: id map"; cat raw$r.log; exit 1; }
done
echo "raw IDs: each shard maps all $nodes nodes: OK"

refused() {  # refused PATTERN CMD...: CMD fails and says what the extended regex PATTERN matches
  local text=$1; shift
  if "$@" > refused.log 2>&1; then echo "FAIL: accepted: $*"; exit 1; fi
  grep -Eq -- "$text" refused.log || { echo "FAIL: no /$text/"; cat refused.log; exit 1; }
}
# Three ranks on two shards: every rank refuses (ranks 0 and 1 their shard's job size, rank 2 its
# missing shard), and the first to end the job is the one whose message is sure to be printed.
refused "of a 2-rank job, opened by rank [01] of 3|but not rank 2's" \
  "${MPI[@]}" -np 3 "$SKIFF" train shards "${RUN[@]}"
# A missing shard on its own: rank 1 alone refuses.
"$SKIFF" shard smallp --ranks 2 --rank 0 -o half > /dev/null 2>&1 || { echo "FAIL: shard --rank 0"; exit 1; }
refused "half holds shards \(skiff shard\), but not rank 1's" \
  "${MPI[@]}" -np 2 "$SKIFF" train half "${RUN[@]}"
refused "rank 0's shard of a 2-rank job, opened by rank 1" \
  "${MPI[@]}" -np 2 "$SKIFF" train shards/rank-0 "${RUN[@]}"
refused "training without --ownership partitions needs the whole dataset" \
  "${MPI[@]}" -np 2 "$SKIFF" train shards --epochs 1 --distributed --threads 1
refused "prediction without --ownership partitions needs the whole dataset" \
  "${MPI[@]}" -np 2 "$SKIFF" predict shards --checkpoint one.ckpt --out nope --distributed
refused "not partitioned" "$SKIFF" shard small --ranks 2 -o nope
refused "it holds the lists and feature rows of nodes" "$SKIFF" shard shards/rank-0 --ranks 2 -o nope
[ ! -e nope/rank-0 ] || { echo "FAIL: a refused shard was written"; exit 1; }
echo "refusals: OK"
