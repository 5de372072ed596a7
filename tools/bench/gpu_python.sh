#!/usr/bin/env bash
# The Python package's GPU checks, on the lent GPU machine (docs/python.md; BENCHMARKS.md "skiff
# from Python on a GPU"). Build and pack here first:
#   python3.12 -m pip wheel --no-build-isolation --no-deps -w /tmp/wheel312 .   # the machine's Python
#   bash tools/bench/gpu_python_pack.sh /tmp/wheel312/skiff-*.whl               # -> .pack/py.tar.xz
# then run this there with .pack carried. Each phase has its own time limit and writes its log
# under $OUT; the dataset is the 2M-node one of the out-of-core bar, made there.
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
tar -xJf .pack/py.tar.xz -C /tmp
pack=/tmp/pypack
export PYTHONPATH=$pack/site PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH="$pack/lib:${LD_LIBRARY_PATH:-}"
skiff() { "$pack/run" skiff "$@"; }
threads=$(nproc)
phase() {  # phase NAME SECONDS COMMAND...: runs with a limit, logs to $out/NAME.log
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  echo "== $name: rc=$? in $((SECONDS - start)) s"
  grep -v -i warn "$out/$name.log" | tail -n "${TAIL:-6}"
}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python3 -c "import torch, torch_geometric, numpy; print('torch', torch.__version__, 'pyg', torch_geometric.__version__, 'numpy', numpy.__version__)"
phase generate 120 "$pack/run" skiff generate --nodes 2000000 --avg-degree 15 --feature-dim 128 \
  --classes 128 --homophily 0.85 --split 0.05,0.01,0.01 --seed 3 --out /tmp/g2m --threads "$threads"
phase partition 150 "$pack/run" skiff partition /tmp/g2m -k 64
bench=(python3 tools/bench/python_loader_bench.py /tmp/g2m --device cuda --threads "$threads")
phase py_inmem 150 "${bench[@]}" --epochs 2
phase cli_cuda 150 "$pack/run" skiff train /tmp/g2m --device cuda --model sage --layers 2 \
  --hidden 256 --fanouts 15,10 --batch-size 1024 --lr 0.003 --epochs 2 --threads "$threads"
phase py_inmem_pinned 150 "${bench[@]}" --epochs 2 --pin-memory --no-eval
phase py_ooc25 200 "${bench[@]}" --epochs 2 --memory 25% --model-memory 64MiB --no-eval
phase cli_cuda_host 150 "$pack/run" skiff train /tmp/g2m --device cuda --sampler host \
  --model sage --layers 2 --hidden 256 --fanouts 15,10 --batch-size 1024 --lr 0.003 --epochs 2 \
  --threads "$threads"
printf '#!/bin/sh\nexec %s/run skiff "$@"\n' "$pack" >/tmp/skiff-exe && chmod +x /tmp/skiff-exe
(cd python/tests && TAIL=15 SKIFF_EXE=/tmp/skiff-exe phase pytest 200 python3 -m pytest -q \
  -p no:cacheprovider .)
