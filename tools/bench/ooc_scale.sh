#!/usr/bin/env bash
# Out-of-core scale run (results: BENCHMARKS.md): a generated dataset whose features alone are
# larger than the machine's RAM trains for one epoch under a 4 GiB budget, from SSD with O_DIRECT.
#
#   tools/bench/ooc_scale.sh SKIFF_EXE WORK_DIR [NODES] [FEATURE_DIM]
#
# Defaults: 8.5M nodes x 800 float32 features = 27.2 GB (25.3 GiB) of features, mean out-degree
# 10, 8 classes, split 1% / 0.1% / 0.1%; GREM, 64 partitions; GraphSAGE 2 layers, fanouts 10,5,
# hidden 128, batch 512, one epoch, --memory 4GiB. Needs about 2.2x the feature bytes of free
# disk while partitioning (the unpartitioned copy is deleted afterwards). Prints the epoch time,
# bytes read, per-stage busy time and the peak RSS (from /usr/bin/time -v).
set -euo pipefail
SKIFF=${1:?usage: ooc_scale.sh SKIFF_EXE WORK_DIR [NODES] [FEATURE_DIM]}
WORK=${2:?usage: ooc_scale.sh SKIFF_EXE WORK_DIR [NODES] [FEATURE_DIM]}
NODES=${3:-8500000}
DIM=${4:-800}
MEMORY=${MEMORY:-4GiB}
THREADS=${THREADS:-2}
BATCH=${BATCH:-512}
mkdir -p "$WORK"
RAW="$WORK/scale-raw"
DS="$WORK/scale-grem64"
free -b | awk '/Mem:/ {printf "machine RAM: %.1f GiB\n", $2 / 2^30}'
if [ ! -d "$DS" ]; then
  /usr/bin/time -f "generate: %e s wall, peak RSS %M KiB" \
    "$SKIFF" generate --nodes "$NODES" --avg-degree 10 --classes 8 --feature-dim "$DIM" \
    --split 0.01,0.001,0.001 --seed 1 --threads "$THREADS" --out "$RAW" --overwrite
  /usr/bin/time -f "partition: %e s wall, peak RSS %M KiB" \
    "$SKIFF" partition "$RAW" -k 64 --algo grem --memory "$MEMORY" --threads "$THREADS" \
    -o "$DS" --overwrite
  rm -rf "$RAW"
fi
du -sbL "$DS"/features.bin | awk '{printf "features.bin: %.1f GiB\n", $1 / 2^30}'
/usr/bin/time -v "$SKIFF" train "$DS" --model sage --layers 2 --hidden 128 --fanouts 10,5 \
  --eval-fanouts 10,5 --batch-size "$BATCH" --epochs 1 --lr 0.003 --dropout 0.2 --seed 1 \
  --threads "$THREADS" --memory "$MEMORY" --sampling exact --metrics "$WORK/scale.jsonl" \
  > "$WORK/scale-train.log" 2>&1 || { tail -20 "$WORK/scale-train.log"; exit 1; }
grep -E "epoch 0|budget|stage|bound|trained" "$WORK/scale-train.log" | tail -12 || true
rss=$(grep "Maximum resident" "$WORK/scale-train.log" | awk '{print $NF}')
python3 - "$WORK/scale.jsonl" "$rss" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    m = json.loads(l)
    p = m.get("pipeline", {})
    print(f"epoch {m['epoch']}: {m['epoch_seconds']:.1f}s (train pass "
          f"{m['epoch_seconds'] - m['eval_seconds']:.1f}s, eval {m['eval_seconds']:.1f}s), "
          f"{m['samples_per_second']:.0f} samples/s, test {100 * m['test_acc']:.2f}%, "
          f"train-pass read {p.get('bytes_read', 0) / 2**30:.2f} GiB "
          f"(amplification {p.get('read_amplification', 0):.2f}), "
          f"peak RSS {int(sys.argv[2]) / 2**20:.2f} GiB")
PY
