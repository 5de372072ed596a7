#!/usr/bin/env bash
# On a GPU: `skiff train --device cuda --gpus 0` (the multi-GPU path with one GPU: a replica group,
# its step sums all-reduced by NCCL) trains the model `--device cuda` trains -- the same losses and
# accuracies in every epoch and the same predictions, byte for byte, when the plain run repeats
# itself byte for byte (else: losses within 1e-4 relative and classes of at least 99% of the nodes
# alike). `--device cuda --accumulate 2` trains with the step's sum on the GPU; two CUDA ranks
# (mpirun, where it is installed) train as one CUDA process's --accumulate 2 (losses to rounding:
# the ranks sum their loss totals in another order); with two or more GPUs, `--gpus 0,1` trains on
# both (2 batches per step). fp32 products throughout.
# Without a usable CUDA device, or in a build without CUDA, it skips (77).
#   cuda_gpus.sh SKIFF DATASETS_DIR WORK_DIR   (SKIFF may be a command: "pack/run skiff")
set -euo pipefail
read -ra skiff <<< "$1"
work="$3"
rm -rf "$work"; mkdir -p "$work"; cd "$work"
"${skiff[@]}" generate --preset small --out ds > /dev/null 2>&1
model=(--epochs 3 --cuda-matmul fp32)

# train NAME ARGS...: a run with its metrics, log and exported predictions under NAME, on
# ${THREADS:-2} threads.
train() {
  local name=$1
  shift
  "${skiff[@]}" train ds --device cuda "${model[@]}" --threads "${THREADS:-2}" \
    --metrics "$name.jsonl" --export "$name" "$@" > "$name.log" 2>&1 || { cat "$name.log"; return 1; }
}

if ! train plain; then
  if grep -q "no usable CUDA device\|has no CUDA support" plain.log; then
    echo "no usable CUDA device, or a build without CUDA; skipping"; exit 77
  fi
  exit 1
fi
train again
if ! train gpus0 --gpus 0; then
  if grep -q "has no NCCL\|not installed here" gpus0.log; then
    echo "no NCCL here: the multi-GPU path is not checked"; exit 77
  fi
  exit 1
fi
grep -q "1 GPU (0) summing gradients with NCCL" gpus0.log ||
  { echo "--gpus 0 did not train on a replica group"; cat gpus0.log; exit 1; }

# same A B: B's epochs and predictions against A's, exactly or (when A does not repeat itself) close.
python3 - plain again gpus0 <<'PY'
import json, sys
def epochs(name):
    return [json.loads(l) for l in open(name + ".jsonl") if '"epoch"' in l]
def classes(name):
    data = open(name + "/predictions.npy", "rb").read()
    header = 10 + int.from_bytes(data[8:10], "little")
    return data[header:]
plain, again, group = sys.argv[1:]
exact = epochs(plain) and [(e["loss"], e["valid_acc"]) for e in epochs(plain)] == \
    [(e["loss"], e["valid_acc"]) for e in epochs(again)] and classes(plain) == classes(again)
print("the plain run repeats itself", "exactly" if exact else "only approximately")
for a, b in zip(epochs(plain), epochs(group)):
    if exact:
        assert (a["loss"], a["valid_acc"]) == (b["loss"], b["valid_acc"]), (a["epoch"], a["loss"], b["loss"])
    else:
        assert abs(a["loss"] - b["loss"]) <= 1e-4 * max(1.0, abs(a["loss"])), (a["epoch"], a["loss"], b["loss"])
assert len(epochs(plain)) == len(epochs(group)) == 3
if exact:
    assert classes(plain) == classes(group), "predictions differ"
else:
    a, b = classes(plain), classes(group)
    same = sum(1 for i in range(0, len(a), 8) if a[i:i + 8] == b[i:i + 8])
    assert same >= 0.99 * len(a) / 8, f"{same} of {len(a) // 8} classes alike"
print("--gpus 0 trains the plain model")
PY

train acc2 --accumulate 2
grep -q "2 batches per optimiser step" acc2.log && grep -q "gradients of a step summed on the GPU" acc2.log ||
  { echo "--accumulate 2 did not sum its steps on the GPU"; cat acc2.log; exit 1; }

# Two CUDA ranks (each on its machine rank's GPU, here both on GPU 0 when there is one) compute
# what one CUDA process's --accumulate 2 computes: the same losses and accuracies (exactly when the
# plain run repeats itself exactly: the ranks sum the same device gradients in the same order).
if command -v mpirun > /dev/null; then
  THREADS=1 train acc2t1 --accumulate 2
  timeout 600 mpirun --oversubscribe --allow-run-as-root -np 2 "${skiff[@]}" train ds --device cuda \
    "${model[@]}" --threads 1 --distributed --metrics ranks.jsonl --export ranks > ranks.log 2>&1 ||
    { cat ranks.log; exit 1; }
  grep -q "gradients are summed on the host through MPI" ranks.log ||
    { echo "the ranks did not train on the GPU"; cat ranks.log; exit 1; }
  python3 - plain again acc2t1 ranks <<'PY'
import json, sys
def epochs(name):
    return [(e["loss"], e["valid_acc"]) for e in map(json.loads, open(name + ".jsonl")) if "epoch" in e]
plain, again, one, ranks = sys.argv[1:]
exact = epochs(plain) == epochs(again)
a, b = epochs(one), epochs(ranks)
assert len(a) == len(b) == 3, (a, b)
for (la, va), (lb, vb) in zip(a, b):
    if exact:
        assert abs(la - lb) <= 1e-12 * abs(la) and va == vb, (a, b)
    else:
        assert abs(la - lb) <= 1e-4 * max(1.0, abs(la)), (a, b)
print("2 CUDA ranks train as one CUDA process with --accumulate 2")
PY
else
  echo "no mpirun here: CUDA ranks not run"
fi

gpus=$(nvidia-smi -L 2>/dev/null | wc -l || echo 0)
if ((gpus >= 2)); then
  train gpus01 --gpus 0,1
  grep -q "2 GPUs (0, 1) summing gradients with NCCL" gpus01.log ||
    { echo "--gpus 0,1 did not train on two GPUs"; cat gpus01.log; exit 1; }
else
  echo "one GPU here: --gpus 0,1 not run"
fi
echo "cuda gpus: OK"
