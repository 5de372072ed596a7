#!/usr/bin/env bash
# Out-of-core training benchmarks (results: BENCHMARKS.md).
#
#   tools/bench/ooc_bench.sh SKIFF_EXE WORK_DIR [NODES]
#
# Generates one dataset (skiff generate), partitions it with GREM, LDG, Fennel and random
# partitions (k = 16) and with GREM into k = 64, then, side by side in one run:
#   1. overhead: epoch time with --memory = 25% of the dataset vs the whole dataset in memory
#      (same pipeline, exact sampling), alternating the two settings;
#   2. accuracy: exact vs in-buffer sampling at 25%, and exact with 64 smaller partitions at the
#      same budget in bytes (16 of 64 slots instead of 4 of 16);
#   3. I/O: bytes read per epoch with GREM, LDG, Fennel and random partitions at the same budget.
# Each run's metrics JSON lines are kept under WORK_DIR/runs/ and summarised at the end.
set -euo pipefail
SKIFF=${1:?usage: ooc_bench.sh SKIFF_EXE WORK_DIR [NODES]}
WORK=${2:?usage: ooc_bench.sh SKIFF_EXE WORK_DIR [NODES]}
NODES=${3:-400000}
EPOCHS=${EPOCHS:-2}
THREADS=${THREADS:-2}
REPEATS=${REPEATS:-2}
COMMON=(--model sage --layers 2 --hidden 128 --fanouts 10,5 --batch-size 1024 --epochs "$EPOCHS"
        --lr 0.003 --dropout 0.2 --seed 1 --threads "$THREADS" --eval-fanouts 10,5)

mkdir -p "$WORK/runs"
DS="$WORK/g$NODES"
if [ ! -d "$DS" ]; then
  "$SKIFF" generate --nodes "$NODES" --avg-degree 15 --classes 16 --feature-dim 128 \
    --split 0.3,0.1,0.1 --seed 1 --out "$DS" --overwrite
fi
for algo in grem ldg fennel random; do
  [ -d "$DS-$algo" ] || "$SKIFF" partition "$DS" -k 16 --algo "$algo" -o "$DS-$algo" --overwrite
done
[ -d "$DS-grem64" ] || "$SKIFF" partition "$DS" -k 64 --algo grem -o "$DS-grem64" --overwrite
# Budgets. The fixed part of the budget (model, in-flight batches, metadata) does not depend on the
# dataset's size; what is left becomes partition slots. "25%" therefore means: the minimum the run
# needs (2 slots) plus 2 more slots, i.e. 4 of the 16 partitions in the buffer (3 resident while
# the 4th loads); "whole" means the minimum plus the whole dataset, so all 16 are resident.
DATA_BYTES=$(du -sbL "$DS-grem" | cut -f1)
MIN_TEXT=$("$SKIFF" train "$DS-grem" "${COMMON[@]}" --memory 1KiB 2>&1 | grep -o "needs at least [0-9.]* [KMG]iB" | head -1 || true)
MIN_BYTES=$(python3 -c "import sys; v,u=sys.argv[1].split()[-2:]; print(int(float(v)*{'KiB':1<<10,'MiB':1<<20,'GiB':1<<30}[u]))" "$MIN_TEXT")
SLOT=$((DATA_BYTES / 16))
QUARTER=$((MIN_BYTES + 2 * SLOT + (1 << 20)))
WHOLE=$((MIN_BYTES + DATA_BYTES + (64 << 20)))
echo "dataset $DS-grem: $DATA_BYTES bytes; minimum budget $MIN_BYTES; 25%: $QUARTER; whole: $WHOLE"

run() {  # name dataset memory sampling
  local name=$1 ds=$2 mem=$3 sampling=$4
  local out="$WORK/runs/$name"
  rm -f "$out.jsonl"
  /usr/bin/time -v "$SKIFF" train "$ds" "${COMMON[@]}" --memory "$mem" --sampling "$sampling" \
    --metrics "$out.jsonl" > "$out.log" 2>&1
  local rss
  rss=$(grep "Maximum resident" "$out.log" | awk '{print $NF}')
  python3 - "$out.jsonl" "$name" "$rss" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for r in rows:
    p = r.get("pipeline", {})
    print(f"{sys.argv[2]:<18} epoch {r['epoch']}  {r['epoch_seconds']:7.2f}s  "
          f"train-pass {p.get('pipeline_seconds', 0):7.2f}s  test {100*r['test_acc']:.2f}%  "
          f"read {p.get('bytes_read', 0)/2**20:8.1f} MiB  ampl {p.get('read_amplification', 0):.2f}  "
          f"peak RSS {int(sys.argv[3])/1024:.0f} MiB")
PY
}

for rep in $(seq 1 "$REPEATS"); do
  run "whole-$rep" "$DS-grem" "$WHOLE" exact
  run "quarter-$rep" "$DS-grem" "$QUARTER" exact
done
# In-buffer mode reserves no fine-grained read buffers (8 MiB per in-flight batch, 8 batches), so
# the same bytes would buy it more slots: give it 64 MiB less to compare at 4 slots as well.
run "quarter-inbuf" "$DS-grem" "$((QUARTER - (64 << 20)))" in-buffer
run "random-quarter" "$DS-random" "$QUARTER" exact
run "ldg-quarter" "$DS-ldg" "$QUARTER" exact
run "fennel-quarter" "$DS-fennel" "$QUARTER" exact
# The same budget in bytes buys 16 slots of 64 smaller partitions (15 resident + 1 loading).
run "grem64-quarter" "$DS-grem64" "$QUARTER" exact
