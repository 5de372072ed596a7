#!/usr/bin/env bash
# Installs what is missing, builds, and runs Skiff's main job on the built-in dataset: generate the
# `small` preset (10,000 nodes, 8 classes, 64 features; about a second) into data/built-in/small
# and verify it. Idempotent: an existing, verified dataset is reused.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
bash tools/build.sh
skiff=build/skiff
dataset=data/built-in/small
mkdir -p "$(dirname "$dataset")"
if [ ! -f "$dataset/manifest.json" ] || ! "$skiff" -q info "$dataset" --verify >/dev/null 2>&1; then
  "$skiff" generate --preset small --out "$dataset" --overwrite
fi
"$skiff" info "$dataset" --verify
