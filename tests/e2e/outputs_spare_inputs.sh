#!/usr/bin/env bash
# End-to-end: no command's output may destroy or alter its input. `convert X X --overwrite` and an
# output directory containing the input are refused and leave the input as it was; train and
# predict refuse --metrics, --checkpoint, --export and --out paths inside the dataset (a metrics
# file named DATASET/manifest.json used to replace the manifest); partition refuses an --output or
# --export-metis path that is, holds or lies inside the dataset; --overwrite replaces only a
# dataset or an empty directory; an export replaces only an earlier export, and train checks its
# output paths before training.
# Usage: outputs_spare_inputs.sh SKIFF_EXE DATASETS_DIR WORK_DIR
set -euo pipefail
skiff=$1
work=$3
rm -rf "$work"
mkdir -p "$work"
cd "$work"
fail() { echo "outputs_spare_inputs: FAIL: $*" >&2; exit 1; }

printf '0 1\n1 2\n2 0\n' > edges.tsv
before=$(sha256sum edges.tsv)
"$skiff" convert edges.tsv edges.tsv --overwrite > c1.log 2>&1 && fail "convert X X was accepted"
grep -q "would replace the input" c1.log || fail "no clear error: $(cat c1.log)"
mkdir -p in && cp edges.tsv in/
"$skiff" convert in/edges.tsv in --overwrite > c2.log 2>&1 && fail "output containing the input"
[ "$before" = "$(sha256sum edges.tsv)" ] && [ -f in/edges.tsv ] || fail "the input changed"

"$skiff" generate --nodes 500 --avg-degree 4 --classes 2 --feature-dim 8 --out ds > /dev/null 2>&1
sums=$(cd ds && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)
for opt in --metrics --checkpoint --export; do
  "$skiff" train ds --epochs 1 "$opt" ds/manifest.json > t.log 2>&1 && fail "train $opt inside"
  grep -q "is inside the dataset" t.log || fail "train $opt: no clear error: $(cat t.log)"
done
"$skiff" train ds --epochs 1 --checkpoint ck > /dev/null 2>&1 || fail "a plain run failed"
"$skiff" predict ds --checkpoint ck --out ds/pred > p.log 2>&1 && fail "predict --out inside"
grep -q "is inside the dataset" p.log || fail "predict: no clear error: $(cat p.log)"
# partition: an --output holding the dataset or inside it, and an --export-metis file inside it.
mkdir -p outer && cp -r ds outer/ds && echo mine > outer/notes.txt
"$skiff" partition outer/ds -k 2 -o outer --overwrite > q1.log 2>&1 && fail "partition -o PARENT"
grep -q "would replace the input" q1.log || fail "partition -o PARENT: no clear error: $(cat q1.log)"
[ -f outer/notes.txt ] && [ -f outer/ds/manifest.json ] || fail "partition -o PARENT deleted files"
for opt in -o --export-metis; do
  "$skiff" partition ds -k 2 "$opt" ds/features.bin --overwrite > q2.log 2>&1 &&
    fail "partition $opt inside"
  grep -q "is inside the dataset" q2.log || fail "partition $opt: no clear error: $(cat q2.log)"
done
# --overwrite replaces a dataset, never a directory holding anything else: refused before any work.
mkdir -p mine && echo keep > mine/notes.txt
"$skiff" partition ds -k 2 -o mine --overwrite > q3.log 2>&1 && fail "partition over a non-dataset"
grep -q "is not a Skiff dataset" q3.log || fail "no clear error: $(cat q3.log)"
grep -q "refine pass" q3.log && fail "refused only after partitioning: $(cat q3.log)"
"$skiff" generate --nodes 100 --out mine --overwrite > g.log 2>&1 && fail "generate over a non-dataset"
"$skiff" convert edges.tsv mine --partitions 2 --overwrite > c3.log 2>&1 && fail "convert over a non-dataset"
grep -q "is not a Skiff dataset" c3.log || fail "convert --partitions: no clear error: $(cat c3.log)"
grep -q "converted" c3.log && fail "convert --partitions refused only after converting"
[ "$(cat mine/notes.txt)" = keep ] || fail "a non-dataset directory was replaced"
# Exports: a rerun replaces the last export whole; a directory holding anything else is refused
# before any work, and so is a checkpoint whose directory does not exist.
"$skiff" predict ds --checkpoint ck --out pred > /dev/null 2>&1 || fail "predict failed"
"$skiff" predict ds --checkpoint ck --out pred > /dev/null 2>&1 || fail "predict again failed"
[ "$(ls pred | tr '\n' ' ')" = "embeddings.npy predictions.npy " ] || fail "export: $(ls -a pred)"
ls -d pred.* 2> /dev/null && fail "an export left a sibling behind"
mkdir -p notes && echo keep > notes/mine.txt
"$skiff" predict ds --checkpoint ck --out notes > e1.log 2>&1 && fail "predict over a non-export"
grep -q "holds mine.txt, which is not part of an export" e1.log || fail "no clear error: $(cat e1.log)"
grep -q "predict:.*nodes" e1.log && fail "refused only after predicting: $(cat e1.log)"
"$skiff" train ds --epochs 1 --export notes > e2.log 2>&1 && fail "train --export over a non-export"
grep -q "epoch 0" e2.log && fail "train --export refused only after training: $(cat e2.log)"
[ "$(cat notes/mine.txt)" = keep ] && [ "$(ls notes)" = mine.txt ] || fail "notes/ changed"
"$skiff" train ds --epochs 1 --checkpoint no/such/dir/ck > e3.log 2>&1 && fail "checkpoint dir"
grep -q "directory .*no/such/dir does not exist" e3.log || fail "no clear error: $(cat e3.log)"
[ "$sums" = "$(cd ds && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)" ] ||
  fail "the dataset changed"
echo "outputs_spare_inputs: ok"
