#!/usr/bin/env bash
# The corruption suite: every file of a small partitioned dataset, edited with its checksums
# recomputed as a writer computes them (the adversarial case: a file written by another tool, by a
# bug or by hand) and without (bit rot), run through every reading command: `info --verify`,
# `train` in memory, `train --memory` (out of core), `predict`, `train --export` and `shard`. Every
# run must end below exit status 128 (no crash); a command that relies on what an edit breaks must
# fail naming it, and `info --verify` must fail on every edit (`shard` must refuse bit rot, and
# never leave a half-written shard).
#   bash corruption_suite.sh SKIFF_EXE DATASETS_DIR WORK_DIR EDIT_EXE
# EDIT_EXE is skiff_edit_dataset (tests/tools/edit_dataset.cpp).
set -euo pipefail
SKIFF=$1
WORK=$3
EDIT=$4
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"

"$SKIFF" generate --nodes 600 --avg-degree 4 --classes 3 --feature-dim 8 --seed 3 --out gen \
  > /dev/null 2>&1
"$SKIFF" partition gen -k 3 --output clean > /dev/null 2>&1
"$SKIFF" info clean --verify > /dev/null
TRAIN=(--epochs 1 --fanouts 3,3 --batch-size 64 --hidden 8 --threads 1)
"$SKIFF" train clean "${TRAIN[@]}" --checkpoint model.ckpt > /dev/null 2>&1

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# Element INDEX of a little-endian int64 FILE of the clean dataset.
i64() { python3 -c "import struct,sys; d=open(sys.argv[1],'rb').read(); print(struct.unpack_from('<q', d, 8*int(sys.argv[2]))[0])" "clean/$1" "$2"; }
i32() { python3 -c "import struct,sys; d=open(sys.argv[1],'rb').read(); print(struct.unpack_from('<i', d, 4*int(sys.argv[2]))[0])" "clean/$1" "$2"; }

# run_case NAME MUST PATTERN -- EDIT_ARGS...
#   MUST: which commands must refuse the edit besides `info --verify`: "all" (train, train
#   --memory, predict and --export), "predict" (predict and --export: what reads relabel.old_ids)
#   or "verify" (no other command relies on it: they may succeed, but must not crash).
#   PATTERN: an extended regular expression every refusal's message must match.
run_case() {
  local name=$1 must=$2 pattern=$3
  shift 4
  rm -rf ds out export && cp -r clean ds
  if ! "$EDIT" ds "$@" 2> edit.err; then
    fail "$name: the edit itself failed: $(cat edit.err)"
    return
  fi
  local commands=(verify train memory predict export)
  for c in "${commands[@]}"; do
    local rc=0
    case $c in
      verify) "$SKIFF" info ds --verify > run.out 2> run.err || rc=$? ;;
      train) "$SKIFF" train ds "${TRAIN[@]}" > run.out 2> run.err || rc=$? ;;
      memory) "$SKIFF" train ds "${TRAIN[@]}" --memory 256MiB > run.out 2> run.err || rc=$? ;;
      predict) "$SKIFF" predict ds --checkpoint model.ckpt --out out > run.out 2> run.err || rc=$? ;;
      export) "$SKIFF" train ds "${TRAIN[@]}" --export export > run.out 2> run.err || rc=$? ;;
    esac
    if [ "$rc" -ge 128 ]; then
      fail "$name / $c: exit status $rc (a crash): $(tail -c 400 run.err)"
      continue
    fi
    local required=no
    case $must:$c in
      *:verify | all:* | predict:predict | predict:export) required=yes ;;
    esac
    if [ "$rc" -eq 0 ]; then
      [ "$required" = yes ] && fail "$name / $c: accepted (exit 0)"
      continue
    fi
    if ! grep -Eq "$pattern" run.err; then
      fail "$name / $c: exit $rc without a message matching /$pattern/: $(tail -c 400 run.err)"
    fi
    if [ "$c" = predict ] || [ "$c" = export ]; then
      local dir=out
      [ "$c" = export ] && dir=export
      if [ -e "$dir" ]; then fail "$name / $c: failed, yet left $dir behind"; fi
    fi
  done
  check_shard "$name" "$pattern"
}

# check_shard NAME PATTERN: `skiff shard` of the edited dataset never crashes and never leaves a
# half-written shard; bit rot in a file it copies it must refuse, naming the file (every byte it
# copies is read through its checksum). Other edits it copies into the shards, whose readers check them as the whole
# dataset's do.
check_shard() {
  local name=$1 pattern=$2 rc=0
  rm -rf shards
  "$SKIFF" shard ds --ranks 2 -o shards > run.out 2> run.err || rc=$?
  if [ "$rc" -ge 128 ]; then
    fail "$name / shard: exit status $rc (a crash): $(tail -c 400 run.err)"
    return
  fi
  if compgen -G "shards/rank-*.tmp-*" > /dev/null; then fail "$name / shard: left a staging directory"; fi
  case $name in
    "bit rot in edge_buckets"*) ;;  # a shard leaves the edge buckets out, unread
    "bit rot"*)
      if [ "$rc" -eq 0 ]; then
        fail "$name / shard: accepted (exit 0)"
      elif ! grep -Eq "$pattern" run.err; then
        fail "$name / shard: exit $rc without a message matching /$pattern/: $(tail -c 400 run.err)"
      elif [ -e shards/rank-0 ]; then  # rank 0's shard holds block 0 of every file
        fail "$name / shard: refused, yet wrote rank 0's shard"
      fi
      ;;
  esac
}

N=$(python3 -c "import json; print(json.load(open('clean/manifest.json'))['num_nodes'])")
E=$(python3 -c "import json; print(json.load(open('clean/manifest.json'))['num_edges'])")
K=3
# A node whose row starts past 0 and holds at least two neighbours, the first of them at least 1:
# the node, the position of its row, and its first neighbour.
read -r ROW FIRST NB0 < <(python3 - clean <<'EOF'
import struct, sys
d = open(sys.argv[1] + "/graph.offsets", "rb").read()
off = struct.unpack_from("<%dq" % (len(d) // 8), d)
nb = open(sys.argv[1] + "/graph.neighbors", "rb").read()
for v in range(len(off) - 1):
    if off[v] > 0 and off[v + 1] - off[v] >= 2:
        first = struct.unpack_from("<i", nb, 4 * off[v])[0]
        if first >= 1:
            print(v, off[v], first); break
EOF
)
# A valid.idx entry that can become a training node while valid.idx stays ascending.
read -r VAT VNODE < <(python3 - clean <<'EOF'
import json, struct, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
def ids(name, count):
    d = open(sys.argv[1] + "/" + name, "rb").read()
    return list(struct.unpack_from("<%dq" % count, d))
train, valid = set(ids("train.idx", m["splits"]["train"])), ids("valid.idx", m["splits"]["valid"])
for i in range(len(valid)):
    lo = valid[i - 1] if i > 0 else -1
    hi = valid[i + 1] if i + 1 < len(valid) else m["num_nodes"]
    t = [v for v in train if lo < v < hi]
    if t:
        print(i, t[0]); break
EOF
)

R=--reseal
# graph.offsets
run_case "offsets decrease" all "graph.offsets: offsets of node $ROW decrease" -- \
  graph.offsets i64 $((ROW + 1)) 0 $R
run_case "offsets start" all "graph.offsets: entry 0 = 5" -- graph.offsets i64 0 5 $R
run_case "offsets end" all "graph.offsets: entry $N = $((E + 5))" -- \
  graph.offsets i64 $N $((E + 5)) $R
run_case "offsets past the end" all "graph.offsets: entry 1 = 99999999" -- \
  graph.offsets i64 1 99999999 $R
# graph.neighbors
run_case "neighbour too large" all "graph.neighbors: node $ROW has neighbour $N, outside" -- \
  graph.neighbors i32 "$FIRST" "$N" $R
run_case "neighbour negative" all "graph.neighbors: node $ROW has neighbour -7, outside" -- \
  graph.neighbors i32 "$FIRST" -7 $R
run_case "neighbours out of order" verify \
  "graph.neighbors: node $ROW has neighbour $((NB0 - 1)) after $NB0" -- \
  graph.neighbors i32 $((FIRST + 1)) $((NB0 - 1)) $R
# features.bin
run_case "feature nan" all "features.bin: node 1 has feature 2 = nan" -- features.bin f32 10 nan $R
run_case "feature inf" all "features.bin: node 0 has feature 3 = inf" -- features.bin f32 3 inf $R
# labels.bin
run_case "label too large" all "labels.bin: node 4 has label 2147483647, outside" -- \
  labels.bin i32 4 2147483647 $R
run_case "label below -1" all "labels.bin: node 0 has label -2, outside" -- labels.bin i32 0 -2 $R
# splits
run_case "splits overlap" all "node $VNODE is in both train.idx and valid.idx" -- \
  valid.idx i64 "$VAT" "$VNODE" $R
run_case "split out of range" all "test.idx: entry [0-9]+ is node $N" -- test.idx i64 -1 "$N" $R
run_case "split not ascending" all "train.idx: entry 1 is node 0" -- train.idx i64 1 0 $R
# relabel.old_ids
OLD0=$(i64 relabel.old_ids 0)
run_case "relabelling repeats an ID" predict "relabel.old_ids: node 1 maps to ID $OLD0" -- \
  relabel.old_ids i64 1 "$OLD0" $R
run_case "relabelling out of range" predict "relabel.old_ids: node 2 maps to ID $N" -- \
  relabel.old_ids i64 2 "$N" $R
# edge buckets
run_case "bucket index decreases" verify "edge_buckets.idx: entry 2 = 0" -- \
  edge_buckets.idx i64 2 0 $R
run_case "bucket index end" verify "edge_buckets.idx: entry $((K * K)) = " -- \
  edge_buckets.idx i64 $((K * K)) 1 $R
run_case "bucket record moved" verify "edge_buckets.bin: record 0 " -- \
  edge_buckets.bin i32 1 "$((N - 1))" $R
# the manifest, resealed
run_case "num_classes huge" all "num_classes is 2147483648, above the limit" -- \
  manifest.json json num_classes 2147483648 $R
# (predict refuses it sooner: the checkpoint's classes no longer match.)
run_case "num_classes too small" all \
  "labels.bin: node [0-9]+ has label 2, outside \[-1, num_classes = 2\)|of another shape" -- \
  manifest.json json num_classes 2 $R
run_case "num_edges" all "graph.neighbors holds .* bytes, expected" -- \
  manifest.json json num_edges $((E - 1)) $R

# Bit rot: one byte of each file changed under its checksum.
for f in graph.offsets graph.neighbors features.bin labels.bin train.idx valid.idx test.idx; do
  run_case "bit rot in $f" all "$f: checksum mismatch in block 0" -- "$f" u8 1 171
done
for f in relabel.old_ids; do
  run_case "bit rot in $f" predict "$f: checksum mismatch in block 0" -- "$f" u8 1 171
done
for f in edge_buckets.idx edge_buckets.bin; do
  run_case "bit rot in $f" verify "$f: checksum mismatch in block 0" -- "$f" u8 1 171
done
run_case "bit rot in manifest.json" all "manifest.json: the manifest does not match its checksum" -- \
  manifest.json json num_classes 4

if [ "$failures" -gt 0 ]; then
  echo "corruption suite: $failures failures"
  exit 1
fi
echo "corruption suite: OK"
