#!/usr/bin/env bash
# Installs what is missing, builds, and runs Skiff's main job on the built-in dataset:
#   1. generate the `small` preset (10,000 nodes, 8 classes, 64 features; about a second) into
#      data/built-in/small, or reuse it when it is already there and verifies;
#   2. partition it with GREM into 8 partitions (partition-ordered layout, in place);
#   3. train GraphSAGE on it and print the accuracy reached.
# Extra arguments are passed to `skiff train` (e.g. --model gcn --epochs 20).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
# Only what the main job runs: the executable (and, where CUDA is found, the kernels it loads for
# --device cuda); tools/run-tests.sh builds the rest.
SKIFF_TARGETS=skiff bash tools/build.sh
skiff=build/skiff
dataset=data/built-in/small
mkdir -p "$(dirname "$dataset")"
if [ ! -f "$dataset/manifest.json" ] || ! "$skiff" -q info "$dataset" --verify >/dev/null 2>&1; then
  "$skiff" generate --preset small --out "$dataset" --overwrite
  "$skiff" partition "$dataset" -k 8 --algo grem
fi
"$skiff" info "$dataset" --verify
"$skiff" train "$dataset" --model sage --layers 2 --hidden 128 --fanouts 10,5 --epochs 5 \
  --checkpoint data/built-in/small-sage.ckpt "$@"
