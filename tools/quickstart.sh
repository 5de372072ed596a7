#!/usr/bin/env bash
# Installs what is missing, builds, and runs Skiff's main job on the built-in dataset:
# generate the `small` preset as a raw edge list + features, convert it, and show it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
bash tools/build.sh
skiff=build/skiff
work=data/built-in
mkdir -p "$work"
if [ ! -f "$work/small/manifest.json" ]; then
  "$skiff" generate --preset small --out "$work/small" --overwrite
fi
"$skiff" info "$work/small" --verify
