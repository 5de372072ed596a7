#!/usr/bin/env bash
# End-to-end: no command's output may destroy or alter its input. `convert X X --overwrite` and an
# output directory containing the input are refused and leave the input as it was; train and
# predict refuse --metrics, --checkpoint, --export and --out paths inside the dataset (a metrics
# file named DATASET/manifest.json used to replace the manifest).
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
[ "$sums" = "$(cd ds && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)" ] ||
  fail "the dataset changed"
echo "outputs_spare_inputs: ok"
