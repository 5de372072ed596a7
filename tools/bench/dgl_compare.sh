#!/usr/bin/env bash
# GraphSAGE CPU training speed, Skiff vs DGL, side by side (results: BENCHMARKS.md).
#
#   tools/bench/dgl_compare.sh SKIFF_EXE PYTHON WORK_DIR [REPEATS]
#
# PYTHON is an interpreter with dgl and torch installed (PyPI; benchmark only). Generates the 1m
# preset with a 10% / 1% / 1% split (so evaluation stays short), then alternates one Skiff epoch and
# one DGL epoch REPEATS times: GraphSAGE (mean, root weight), 3 layers, fanouts 15,10,5, hidden 256,
# batch 1024, Adam lr 0.003, dropout 0.5, no weight decay, THREADS threads (default 2) for both.
# Reports training-pass samples/s of each and test accuracy after the epoch (same fanouts).
set -euo pipefail
SKIFF=${1:?usage: dgl_compare.sh SKIFF_EXE PYTHON WORK_DIR [REPEATS]}
PY=${2:?usage: dgl_compare.sh SKIFF_EXE PYTHON WORK_DIR [REPEATS]}
WORK=${3:?usage: dgl_compare.sh SKIFF_EXE PYTHON WORK_DIR [REPEATS]}
REPEATS=${4:-2}
THREADS=${THREADS:-2}
EPOCHS=${EPOCHS:-1}
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$WORK"
DS="$WORK/g1m"
[ -d "$DS" ] || "$SKIFF" generate --preset 1m --split 0.1,0.01,0.01 --out "$DS"

for ((r = 0; r < REPEATS; r++)); do
  "$SKIFF" train "$DS" --model sage --layers 3 --hidden 256 --fanouts 15,10,5 \
    --eval-fanouts 15,10,5 --batch-size 1024 --epochs "$EPOCHS" --lr 0.003 --dropout 0.5 \
    --weight-decay 0 --threads "$THREADS" --seed "$r" --metrics "$WORK/skiff-$r.jsonl" \
    > "$WORK/skiff-$r.log" 2>&1
  python3 - "$WORK/skiff-$r.jsonl" "$r" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    m = json.loads(l)
    print(f"repeat {sys.argv[2]} skiff epoch {m['epoch']}: train pass "
          f"{m['epoch_seconds'] - m['eval_seconds']:.1f}s, {m['samples_per_second']:.0f} samples/s, "
          f"test {100 * m['test_acc']:.2f}%")
PY
  OMP_NUM_THREADS="$THREADS" "$PY" "$here/dgl_sage_speed.py" "$DS" --fanouts 15,10,5 --hidden 256 \
    --batch-size 1024 --epochs "$EPOCHS" --lr 0.003 --dropout 0.5 --threads "$THREADS" \
    --seed "$r" > "$WORK/dgl-$r.log" 2> "$WORK/dgl-$r.err"
  python3 - "$WORK/dgl-$r.log" "$r" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
acc = next(r["test_acc"] for r in rows if "test_acc" in r)
for m in rows:
    if "epoch" in m:
        print(f"repeat {sys.argv[2]} dgl   epoch {m['epoch']}: train pass {m['train_seconds']:.1f}s, "
              f"{m['samples_per_second']:.0f} samples/s, test {100 * acc:.2f}% (after last epoch)")
PY
done
