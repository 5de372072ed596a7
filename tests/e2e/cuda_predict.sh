#!/usr/bin/env bash
# On a GPU: `skiff predict --device cuda` computes what the CUDA model trained (the predictions and
# embeddings of `skiff train --device cuda --export`, byte for byte, with host and with device
# sampling), and agrees with `skiff predict --device cpu` on the same checkpoint (fp32 products:
# the classes of at least 99% of the nodes; they differ only where two logits are within rounding).
# Without a usable CUDA device it skips (77).
#   cuda_predict.sh SKIFF DATASETS_DIR WORK_DIR   (SKIFF may be a command: "pack/run skiff")
set -euo pipefail
read -ra skiff <<< "$1"
work="$3"
rm -rf "$work"; mkdir -p "$work"; cd "$work"
"${skiff[@]}" generate --preset small --out ds > /dev/null 2>&1
model=(--epochs 2 --threads 2 --cuda-matmul fp32)
if ! "${skiff[@]}" train ds --device cuda "${model[@]}" --checkpoint ck --export ex > train.log 2>&1; then
  if grep -q "no usable CUDA device" train.log; then echo "no usable CUDA device; skipping"; exit 77; fi
  cat train.log; exit 1
fi
"${skiff[@]}" predict ds --checkpoint ck --out gpu --device cuda --cuda-matmul fp32 --threads 2 > gpu.log 2>&1 ||
  { cat gpu.log; exit 1; }
cmp ex/predictions.npy gpu/predictions.npy
cmp ex/embeddings.npy gpu/embeddings.npy
"${skiff[@]}" predict ds --checkpoint ck --out gpu-sampled --device cuda --cuda-matmul fp32 \
  --sampler device --threads 2 > gpu-sampled.log 2>&1 || { cat gpu-sampled.log; exit 1; }
cmp ex/predictions.npy gpu-sampled/predictions.npy
"${skiff[@]}" predict ds --checkpoint ck --out cpu --threads 2 > cpu.log 2>&1 || { cat cpu.log; exit 1; }
python3 - gpu/predictions.npy cpu/predictions.npy <<'PY'
import array, sys
def classes(path):
    data = open(path, "rb").read()
    header = 10 + int.from_bytes(data[8:10], "little")  # .npy v1: magic, version, header length
    values = array.array("i")
    values.frombytes(data[header:])
    return values
gpu, cpu = classes(sys.argv[1]), classes(sys.argv[2])
assert len(gpu) == len(cpu) == 10000, (len(gpu), len(cpu))
same = sum(1 for a, b in zip(gpu, cpu) if a == b) / len(gpu)
print(f"cuda and cpu predictions agree on {100 * same:.2f}% of the nodes")
sys.exit(0 if same >= 0.99 else 1)
PY
echo OK
