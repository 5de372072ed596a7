#!/usr/bin/env bash
# On a GPU: link prediction with the CUDA encoder (`skiff train --task link --device cuda`) learns
# what the CPU learns, and `skiff predict --device cuda` reproduces what training exported.
#   - the same seed, batches and negatives on both devices (fp32 products, host sampling), for
#     GraphSAGE (the default) and GCN (whose CPU first layer takes its input aggregated as it is
#     read): each epoch's loss within 1e-3 relative and its validation/test AUC, AP and MRR within
#     0.5 points (the devices round differently, and three epochs of Adam carry the difference);
#   - the CUDA run's `--export` embeddings equal `predict --device cuda` on its checkpoint, byte
#     for byte (the same checkpoint, batches and device);
#   - one epoch within `--memory` (out of core, the rows gathered on the host) on the device gives
#     the in-memory epoch's loss (the features in device memory);
#   - one epoch of steps over 2 batches (--accumulate 2: the encoder's gradients summed on the
#     host with the decoder's) on the device gives the CPU's loss within 1e-3 relative.
# Without a usable CUDA device, or in a build without CUDA, it skips (77).
#   cuda_link.sh SKIFF DATASETS_DIR WORK_DIR   (SKIFF may be a command: "pack/run skiff")
set -euo pipefail
read -ra skiff <<< "$1"
work="$3"
rm -rf "$work"; mkdir -p "$work"; cd "$work"
"${skiff[@]}" generate --nodes 20000 --avg-degree 8 --feature-dim 64 --classes 8 \
  --split-edges 0.8,0.1,0.1 --seed 5 --out ds > /dev/null 2>&1
model=(--task link --threads 2 --sampler host --eval-negatives 100 --batch-size 512
  --negatives 32 --seed 3)
if ! "${skiff[@]}" train ds --device cuda --cuda-matmul fp32 "${model[@]}" --epochs 3 \
    --metrics sage-cuda.jsonl --checkpoint ck --export ex > sage-cuda.log 2>&1; then
  if grep -q "no usable CUDA device\|has no CUDA support" sage-cuda.log; then
    echo "no usable CUDA device, or a build without CUDA; skipping"; exit 77
  fi
  cat sage-cuda.log; exit 1
fi
run() {  # run NAME ARGS...: skiff train ds ARGS, its log in NAME.log
  local name=$1
  shift
  "${skiff[@]}" train ds "$@" > "$name.log" 2>&1 || { cat "$name.log"; exit 1; }
}
run sage-cpu --device cpu "${model[@]}" --epochs 3 --metrics sage-cpu.jsonl
run gcn-cuda --device cuda --cuda-matmul fp32 --model gcn "${model[@]}" --epochs 3 \
  --metrics gcn-cuda.jsonl
run gcn-cpu --device cpu --model gcn "${model[@]}" --epochs 3 --metrics gcn-cpu.jsonl
"${skiff[@]}" predict ds --checkpoint ck --out pred --device cuda --cuda-matmul fp32 \
  --sampler host --threads 2 > pred.log 2>&1 || { cat pred.log; exit 1; }
cmp ex/embeddings.npy pred/embeddings.npy
run ooc --device cuda --cuda-matmul fp32 "${model[@]}" --epochs 1 --memory 128MiB \
  --metrics ooc.jsonl
run acc-cuda --device cuda --cuda-matmul fp32 "${model[@]}" --epochs 1 --accumulate 2 \
  --metrics acc-cuda.jsonl
run acc-cpu --device cpu "${model[@]}" --epochs 1 --accumulate 2 --metrics acc-cpu.jsonl
python3 - <<'PY'
import json, sys
def lines(path):
    return [json.loads(l) for l in open(path)]
ok = True
for name in ("sage", "gcn"):
    gpu, cpu = lines(f"{name}-cuda.jsonl"), lines(f"{name}-cpu.jsonl")
    assert len(gpu) == len(cpu) == 3, (name, len(gpu), len(cpu))
    for g, c in zip(gpu, cpu):
        rel = abs(g["loss"] - c["loss"]) / max(abs(c["loss"]), 1e-12)
        line = f"{name} epoch {g['epoch']}: loss cuda {g['loss']:.6f} cpu {c['loss']:.6f} (rel {rel:.2e})"
        ok = ok and rel <= 1e-3
        for key in ("valid_auc", "valid_ap", "valid_mrr", "test_auc", "test_ap", "test_mrr"):
            diff = abs(g[key] - c[key]) * 100  # points
            line += f"; {key} {g[key]:.4f}/{c[key]:.4f}"
            ok = ok and diff <= 0.5
        print(line)
held, ooc = lines("sage-cuda.jsonl")[0], lines("ooc.jsonl")[0]
rel = abs(ooc["loss"] - held["loss"]) / max(abs(held["loss"]), 1e-12)
print(f"epoch 0 within --memory: loss {ooc['loss']:.6f} vs in memory {held['loss']:.6f}")
ok = ok and rel <= 1e-5
gpu, cpu = lines("acc-cuda.jsonl")[0], lines("acc-cpu.jsonl")[0]
rel = abs(gpu["loss"] - cpu["loss"]) / max(abs(cpu["loss"]), 1e-12)
print(f"epoch 0 with --accumulate 2: loss cuda {gpu['loss']:.6f} cpu {cpu['loss']:.6f} (rel {rel:.2e})")
ok = ok and rel <= 1e-3
sys.exit(0 if ok else 1)
PY
echo OK
