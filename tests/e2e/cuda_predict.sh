#!/usr/bin/env bash
# On a GPU: `skiff predict --device cuda` computes what the CUDA model trained (the predictions and
# embeddings of `skiff train --device cuda --export`, byte for byte: the same checkpoint, batches
# and device; both sample where the default `--sampler auto` puts it, the device for this dataset).
# `predict --device cuda --sampler host` agrees with `skiff predict --device cpu --inference
# batches` (the same batches on the CPU; the CPU's default predicts layer by layer) on the same
# checkpoint, and with the default (device-sampled) prediction (fp32 products; classes of at least
# 99% of the nodes: the CPU's arithmetic differs in rounding, and the device-sampled run cuts its
# batches differently, so a node whose degree is over the evaluation fanout draws other
# neighbours).
# Without a usable CUDA device, or in a build without CUDA, it skips (77).
#   cuda_predict.sh SKIFF DATASETS_DIR WORK_DIR   (SKIFF may be a command: "pack/run skiff")
set -euo pipefail
read -ra skiff <<< "$1"
work="$3"
rm -rf "$work"; mkdir -p "$work"; cd "$work"
"${skiff[@]}" generate --preset small --out ds > /dev/null 2>&1
model=(--epochs 2 --threads 2 --cuda-matmul fp32)
if ! "${skiff[@]}" train ds --device cuda "${model[@]}" --checkpoint ck --export ex > train.log 2>&1; then
  if grep -q "no usable CUDA device\|has no CUDA support" train.log; then
    echo "no usable CUDA device, or a build without CUDA; skipping"; exit 77
  fi
  cat train.log; exit 1
fi
"${skiff[@]}" predict ds --checkpoint ck --out gpu --device cuda --cuda-matmul fp32 --threads 2 > gpu.log 2>&1 ||
  { cat gpu.log; exit 1; }
for log in train.log gpu.log; do
  grep -q "batches are sampled on the device" $log ||
    { echo "the default --sampler auto did not sample on the device in $log"; cat $log; exit 1; }
done
cmp ex/predictions.npy gpu/predictions.npy
cmp ex/embeddings.npy gpu/embeddings.npy
"${skiff[@]}" predict ds --checkpoint ck --out gpu-host --device cuda --cuda-matmul fp32 \
  --sampler host --threads 2 > gpu-host.log 2>&1 || { cat gpu-host.log; exit 1; }
"${skiff[@]}" predict ds --checkpoint ck --out cpu --inference batches --threads 2 > cpu.log 2>&1 || { cat cpu.log; exit 1; }
python3 - gpu-host/predictions.npy cpu/predictions.npy gpu/predictions.npy <<'PY'
import array, sys
def classes(path):
    data = open(path, "rb").read()
    header = 10 + int.from_bytes(data[8:10], "little")  # .npy v1: magic, version, header length
    values = array.array("i")
    values.frombytes(data[header:])
    return values
gpu = classes(sys.argv[1])
ok = True
for path, name in ((sys.argv[2], "cpu"), (sys.argv[3], "cuda --sampler auto (device)")):
    other = classes(path)
    assert len(gpu) == len(other) == 10000, (len(gpu), len(other))
    same = sum(1 for a, b in zip(gpu, other) if a == b) / len(gpu)
    print(f"cuda --sampler host and {name} predictions agree on {100 * same:.2f}% of the nodes")
    ok = ok and same >= 0.99
sys.exit(0 if ok else 1)
PY
echo OK
