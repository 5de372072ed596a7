#!/usr/bin/env bash
# Out-of-core training end to end: `skiff train --memory` on a generated, GREM-partitioned dataset.
#   bash ooc_train.sh SKIFF_EXE DATASETS_DIR WORK_DIR
# Checks: a budget far below the dataset trains (exact: the in-memory batch order, reading what is
# not resident; in-buffer: from the buffer states) and reports per-stage times,
# bytes read and read amplification in the metrics; a budget too small is refused with the minimum;
# the dataset is not modified (evaluation's scratch file in its directory leaves nothing); a
# --scratch-dir that cannot hold one is a warning; kill -9 then --resume continues from the last
# checkpoint. Near the minimum the batches are computed in micro-batches.
set -euo pipefail
SKIFF=$1
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"

"$SKIFF" generate --nodes 30000 --avg-degree 8 --classes 4 --feature-dim 64 --split 0.5,0.2,0.3 \
  --seed 3 --out raw > /dev/null 2>&1
"$SKIFF" partition raw -k 12 --algo grem -o ds > /dev/null 2>&1
before=$(cd ds && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)

COMMON=(--model sage --layers 2 --hidden 32 --fanouts 5,5 --eval-fanouts 5,5 --batch-size 128
        --lr 0.01 --dropout 0.1 --seed 7 --threads 2)

for sampling in exact in-buffer; do
  # A budget too small is refused, naming the minimum.
  if "$SKIFF" train ds "${COMMON[@]}" --epochs 1 --memory 64KiB --sampling "$sampling" \
      > "small-$sampling.log" 2>&1; then
    echo "FAIL: a 64KiB budget was accepted"; exit 1
  fi
  minimum=$(grep -o "needs at least [0-9.]* [KMG]iB" "small-$sampling.log" | head -1)
  [ -n "$minimum" ] || { echo "FAIL: no minimum named"; cat "small-$sampling.log"; exit 1; }
  # The minimum plus one partition's worth: a few of the 12 partitions resident at a time.
  budget=$(python3 - "$minimum" <<'PY'
import sys
v, unit = sys.argv[1].split()[-2:]
print(int(float(v) * {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]) + (64 << 10))
PY
)
  echo "$sampling: refused 64KiB ($minimum); training with $budget bytes"
  [ "$sampling" = exact ] && min_bytes=$budget
  "$SKIFF" train ds "${COMMON[@]}" --epochs 3 --memory "$budget" --sampling "$sampling" \
    --disk-bandwidth 512MiB/s --metrics "m-$sampling.jsonl" > "train-$sampling.log" 2>&1 || {
      echo "FAIL: training ($sampling)"; cat "train-$sampling.log"; exit 1; }
  # The epoch's progress counts seeds, so its total is known however the pipeline cuts batches.
  grep -Eq "^epoch 2: ([0-9.]+k?)/\1 nodes \(100\.0%\)" "train-$sampling.log" || {
    echo "FAIL: no epoch progress line with its total ($sampling)"; cat "train-$sampling.log"; exit 1; }
  grep -q "physical limit: .* at 512.00 MiB/s is .* of reading, compute busy" "train-$sampling.log" || {
    echo "FAIL: no physical-limit line ($sampling)"; cat "train-$sampling.log"; exit 1; }
  # So near its minimum the plan computes each batch in micro-batches (one part's activations at
  # a time); the accuracy check below covers what they learn.
  grep -q "activations, 1 of [0-9]* micro-batches" "train-$sampling.log" || {
    echo "FAIL: no micro-batches at the minimum ($sampling)"; cat "train-$sampling.log"; exit 1; }
  python3 - "m-$sampling.jsonl" "$sampling" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 3, rows
for r in rows:
    p = r["pipeline"]
    for stage in ("io", "plan", "sample", "gather", "compute"):
        assert stage in p["stages"], (stage, p)
    # --disk-bandwidth: the pass's reads at that rate, for its physical-limit line.
    assert p["disk_bytes_per_second"] == 512 << 20, p
    assert abs(p["read_seconds_at_disk_rate"] - p["bytes_read"] / (512 << 20)) < 1e-9, p
    if sys.argv[2] == "in-buffer":
        # Batches come from the buffer states and never leave them.
        assert p["buffer_states"] > 1, p
        assert p["fine_bytes_read"] == 0, p
    else:
        # Too few partitions resident to mix labels: seeds in the in-memory order, one state,
        # the rest read fine-grained (or from the hot row cache).
        assert p["buffer_states"] == 1, p
        assert p["fine_bytes_read"] > 0 and p["fine_rows"] + p["cached_rows"] > 0, p
assert rows[0]["pipeline"]["bytes_read"] > 0
# In-buffer loads partitions; exact streams what it reads (aggregated input needs no slot).
assert sys.argv[2] == "exact" or rows[0]["pipeline"]["partition_loads"] > 0
assert rows[-1]["test_acc"] > 0.4, rows[-1]   # 4 classes: chance is 0.25
print(sys.argv[2], "test accuracy", rows[-1]["test_acc"], "read amplification",
      rows[-1]["pipeline"]["read_amplification"])
PY
done
grep -q "read amplification" train-exact.log || { echo "FAIL: no end-of-epoch report"; exit 1; }

# Evaluation keeps its batches in an unnamed file (the dataset's directory by default; the check
# below finds the dataset unchanged); a directory that cannot hold one is a warning, not an error.
"$SKIFF" train ds "${COMMON[@]}" --epochs 2 --memory "$min_bytes" --scratch-dir "$WORK/missing" \
  > scratch.log 2>&1 || { echo "FAIL: training with a missing --scratch-dir"; cat scratch.log; exit 1; }
grep -q "cannot keep evaluation batches in $WORK/missing" scratch.log || {
  echo "FAIL: no warning for a missing --scratch-dir"; cat scratch.log; exit 1; }

# kill -9 mid-run, then --resume from the checkpoint.
"$SKIFF" train ds "${COMMON[@]}" --epochs 40 --memory "$min_bytes" --checkpoint ck.bin \
  --metrics killed.jsonl > killed.log 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  [ -s ck.bin ] && [ "$(wc -l < killed.jsonl 2>/dev/null || echo 0)" -ge 2 ] && break
  sleep 0.1
done
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
[ -s ck.bin ] || { echo "FAIL: no checkpoint before the kill"; cat killed.log; exit 1; }
"$SKIFF" train ds --resume ck.bin --epochs 5 --memory "$min_bytes" --threads 2 \
  --metrics resumed.jsonl > resumed.log 2>&1 || { echo "FAIL: resume"; cat resumed.log; exit 1; }
grep -q "resuming after epoch" resumed.log || { echo "FAIL: did not resume"; exit 1; }
# Options that define the run are taken from the checkpoint, and saying otherwise is not silent.
"$SKIFF" train ds --resume ck.bin --epochs 5 --hidden 7 --memory "$min_bytes" --threads 2 \
  > resumed2.log 2>&1 || { echo "FAIL: resume with --hidden"; cat resumed2.log; exit 1; }
grep -q -- "--hidden is ignored with --resume" resumed2.log || {
  echo "FAIL: --hidden with --resume was ignored silently"; cat resumed2.log; exit 1; }

after=$(cd ds && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)
[ "$before" = "$after" ] || { echo "FAIL: training modified the dataset"; exit 1; }
echo "ok"
