#!/usr/bin/env bash
# End-to-end: `skiff convert cora.npz` (the .npz layout of Shchur et al.) gives the counts in
# ../shared/datasets/README.md: 2,708 nodes, 10,556 directed edges (both directions of 5,278
# undirected ones), 1,433 features, 7 classes; per-class:20,30 gives 140 train / 210 valid.
# Usage: cora_npz.sh SKIFF_EXE DATASETS_DIR WORK_DIR   (exit 77 = skipped)
set -euo pipefail
skiff=$1
datasets=$2
work=$3
if [ ! -f "$datasets/cora.npz" ]; then
  echo "cora_npz: skipped: $datasets/cora.npz not found"
  exit 77
fi
if ! "$skiff" convert --help 2>/dev/null | grep -q "Usage: .*convert"; then
  echo "cora_npz: skipped: this skiff has no convert command"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
fail() { echo "cora_npz: FAIL: $*" >&2; exit 1; }

"$skiff" convert "$datasets/cora.npz" "$work/cora" --format npz --undirected \
  --split per-class:20,30 --seed 1
"$skiff" info "$work/cora" --verify | grep -q "verify       OK" || fail "info --verify"
"$skiff" info "$work/cora" --json >"$work/cora.json"
value() { tr -d ' \n' <"$work/cora.json" | grep -o "\"$1\":[0-9]*" | head -1 | cut -d: -f2; }
[ "$(value num_nodes)" = 2708 ] || fail "num_nodes $(value num_nodes), expected 2708"
[ "$(value num_edges)" = 10556 ] || fail "num_edges $(value num_edges), expected 10556"
[ "$(value feature_dim)" = 1433 ] || fail "feature_dim $(value feature_dim), expected 1433"
[ "$(value num_classes)" = 7 ] || fail "num_classes $(value num_classes), expected 7"
[ "$(value train)" = 140 ] || fail "train $(value train), expected 140"
[ "$(value valid)" = 210 ] || fail "valid $(value valid), expected 210"
[ "$(value test)" = 2358 ] || fail "test $(value test), expected 2358"
echo "cora_npz: OK"
