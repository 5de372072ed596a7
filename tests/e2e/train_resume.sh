#!/usr/bin/env bash
# `skiff train --resume`: the run continues after its last finished epoch even when its best model
# (the --checkpoint file) is older, and the metrics file lists every epoch once.
#   bash train_resume.sh SKIFF_EXE DATASETS_DIR WORK_DIR
set -euo pipefail
SKIFF=$1
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"
"$SKIFF" generate --preset small --out small > /dev/null 2>&1
DATA=small
RUN=(--hidden 16 --seed 3 --threads 2)

"$SKIFF" -q train "$DATA" "${RUN[@]}" --epochs 1 --checkpoint old.bin > old.log 2>&1
"$SKIFF" -q train "$DATA" "${RUN[@]}" --epochs 4 --checkpoint ck.bin --metrics m.jsonl > a.log 2>&1
[ -s ck.bin.last ] || { echo "FAIL: no last-epoch checkpoint"; exit 1; }
# The best model as if validation had peaked at epoch 0 (same run, a shorter epoch count).
cp old.bin ck.bin
# And a metrics line of an epoch the checkpoint does not hold (a run stopped between the two).
echo '{"epoch": 4, "loss": 9.0}' >> m.jsonl
"$SKIFF" train "$DATA" --resume ck.bin --epochs 6 --metrics m.jsonl > b.log 2>&1
grep -q "resuming after epoch 3" b.log || { echo "FAIL: did not continue after epoch 3"; cat b.log; exit 1; }
python3 - <<'PY'
import json
epochs = [json.loads(l)["epoch"] for l in open("m.jsonl")]
assert epochs == list(range(6)), epochs
print("epochs in the metrics file:", epochs)
PY
echo "train --resume: OK"
