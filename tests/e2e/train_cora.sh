#!/usr/bin/env bash
# End to end: convert Cora, train from a TOML config with checkpoint/metrics/export, resume, predict,
# and reject a damaged checkpoint. Usage: train_cora.sh SKIFF_EXE DATASETS_DIR WORK_DIR
set -euo pipefail
skiff="$1"; datasets="$2"; work="$3"
root="$(cd "$(dirname "$0")/../.." && pwd)"
[[ -f "$datasets/cora.npz" ]] || { echo "cora.npz not found; skipping"; exit 77; }
rm -rf "$work"; mkdir -p "$work"; cd "$work"
"$skiff" convert "$datasets/cora.npz" cora --undirected --split per-class:20,30 > /dev/null 2>&1
"$skiff" train cora --config "$root/data/cora-gcn.toml" --epochs 4 --threads 2 \
  --checkpoint best.ckpt --metrics metrics.jsonl --export out > train.log 2>&1
grep -q "best valid accuracy" train.log
[[ $(wc -l < metrics.jsonl) -eq 4 ]] || { echo "expected 4 metrics lines"; exit 1; }
grep -q '"samples_per_second"' metrics.jsonl
# predictions: int32[2708] (128-byte header); embeddings: float32[2708, 256] (hidden 256).
[[ $(stat -c %s out/predictions.npy) -eq $((128 + 2708 * 4)) ]]
[[ $(stat -c %s out/embeddings.npy) -eq $((128 + 2708 * 256 * 4)) ]]
head -c 80 out/embeddings.npy | grep -q "'shape': (2708, 256)"
# Resume continues after the checkpoint's epoch.
"$skiff" train cora --resume best.ckpt --epochs 6 --threads 2 > resume.log 2>&1
grep -q "resuming after epoch" resume.log
# predict from the checkpoint gives the same predictions as --export.
"$skiff" predict cora --checkpoint best.ckpt --out pred --threads 2 > /dev/null 2>&1
cmp out/predictions.npy pred/predictions.npy
cmp out/embeddings.npy pred/embeddings.npy
# A damaged checkpoint is refused with a clear message.
cp best.ckpt bad.ckpt
printf '\x00\x01' | dd of=bad.ckpt bs=1 seek=100 conv=notrunc 2> /dev/null
if "$skiff" predict cora --checkpoint bad.ckpt --out bad > bad.log 2>&1; then
  echo "damaged checkpoint accepted"; exit 1
fi
grep -q "checksum mismatch" bad.log
[[ ! -e bad/predictions.npy ]]
echo OK
