#!/usr/bin/env bash
# Time to accuracy (BENCHMARKS.md, "Time to accuracy"): how long training takes to reach 99% of
# the in-memory run's final test accuracy, in memory and within --memory, with and without
# --epoch-fraction (repeated random subsets).
#
#   tools/bench/time_to_accuracy.sh SKIFF DATASET WORK_DIR
#
# Runs, in the order of RUNS (default "mem:1 mem:0.25 10pct:1 10pct:0.25"; SETTING:FRACTION, with
# SETTING mem (in memory) or NNpct (--memory NN% of the dataset's bytes)): the default model,
# --threads 2, EPOCHS_FULL (default 4) epochs at fraction 1 and EPOCHS_PART (default 8) at a
# fraction below 1, a --metrics file each. The target is 99% of the last test accuracy of the first
# run (which should be mem:1). For each run: the wall time until the end of the first epoch whose
# test accuracy reaches the target, counting training and evaluation as they ran (what a user
# waits for), the training passes alone, and the node visits (epochs x fraction).
set -euo pipefail
SKIFF=${1:?usage: time_to_accuracy.sh SKIFF DATASET WORK_DIR}
DS=${2:?usage: time_to_accuracy.sh SKIFF DATASET WORK_DIR}
WORK=${3:?usage: time_to_accuracy.sh SKIFF DATASET WORK_DIR}
RUNS=${RUNS:-mem:1 mem:0.25 10pct:1 10pct:0.25}
mkdir -p "$WORK"
BYTES=$(du -sb "$DS" | cut -f1)
for run in $RUNS; do
  setting=${run%%:*}
  fraction=${run##*:}
  args=(--threads 2 --epoch-fraction "$fraction")
  if [[ $fraction == 1 ]]; then args+=(--epochs "${EPOCHS_FULL:-4}"); else
    args+=(--epochs "${EPOCHS_PART:-8}")
  fi
  if [[ $setting != mem ]]; then args+=(--memory $((BYTES * ${setting%pct} / 100))); fi
  echo "== $run: skiff train $DS ${args[*]}"
  "$SKIFF" train "$DS" "${args[@]}" --metrics "$WORK/$run.jsonl" >"$WORK/$run.log" 2>&1 ||
    { tail -5 "$WORK/$run.log"; exit 1; }
  grep "peak RSS" "$WORK/$run.log" || true
done
python3 - "$WORK" $RUNS <<'PY'
import json, sys
work, runs = sys.argv[1], sys.argv[2:]
lines = {r: [json.loads(l) for l in open(f"{work}/{r}.jsonl")] for r in runs}
target = 0.99 * lines[runs[0]][-1]["test_acc"]
print(f"target: 99% of {runs[0]}'s last test accuracy {lines[runs[0]][-1]['test_acc']:.4f} = {target:.4f}")
print("| run | epochs to target | node visits (epochs) | wall to target | training passes | last test acc |")
print("|---|---:|---:|---:|---:|---:|")
for r in runs:
    fraction = float(r.split(":")[1])
    wall = train = 0.0
    reached = None
    for i, m in enumerate(lines[r]):
        wall += m["epoch_seconds"]  # the training pass and the evaluation after it
        train += m["epoch_seconds"] - m["eval_seconds"]
        if m["test_acc"] >= target:
            reached = (i + 1, wall, train)
            break
    last = lines[r][-1]["test_acc"]
    if reached is None:
        print(f"| {r} | not reached in {len(lines[r])} | -- | -- | -- | {last:.4f} |")
    else:
        e, w, t = reached
        print(f"| {r} | {e} | {e * fraction:.2f} | {w:.1f} s | {t:.1f} s | {last:.4f} |")
PY
