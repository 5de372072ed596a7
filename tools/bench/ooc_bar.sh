#!/usr/bin/env bash
# Out of core at the default model: in memory vs --memory = 25% and 10% of the dataset's bytes,
# side by side (results: BENCHMARKS.md, "Out of core at the default model").
#
#   tools/bench/ooc_bar.sh SKIFF_EXE WORK_DIR
#
# Dataset: 2M nodes, avg degree 15, 128 features, 128 classes, homophily 0.85, split
# 0.05,0.01,0.01, seed 3, partitioned with GREM into k = 64. Training: the default model
# (GraphSAGE, fanouts 15,10, hidden 256, batch 1024), 2 threads, one epoch (training + evaluation;
# EPOCHS=3 for more: out of core, epochs after the first replay their evaluation batches).
# Settings alternate (in memory, 25%, 10%, then again with REPEATS=2; SETTINGS="memory 25pct" for
# fewer; 5pct too; a setting ending in -mbN, e.g. 10pct-mb1, passes --micro-batches N). FEATURE_DTYPE=float16 generates the same graph with float16 features (its own
# directory); BASIS_BYTES=N takes the percentages of N bytes instead of the dataset's own (e.g. the
# float32 dataset's, to give both the same memory); DISK_BANDWIDTH=RATE passes --disk-bandwidth, so
# each pass's report gives its physical limit. Each run keeps its metrics
# JSON line and `time -v` output under WORK_DIR/runs/; a summary table is printed at the end.
set -euo pipefail
SKIFF=${1:?usage: ooc_bar.sh SKIFF_EXE WORK_DIR}
WORK=${2:?usage: ooc_bar.sh SKIFF_EXE WORK_DIR}
REPEATS=${REPEATS:-1}
EPOCHS=${EPOCHS:-1}
SETTINGS=${SETTINGS:-memory 25pct 10pct}
mkdir -p "$WORK/runs"
DTYPE=${FEATURE_DTYPE:-float32}
SUFFIX=$([ "$DTYPE" = float32 ] && echo "" || echo "-$DTYPE")
RAW="$WORK/g2m_raw$SUFFIX"
DS="$WORK/g2m$SUFFIX"
if [ ! -d "$DS" ]; then
  [ -d "$RAW" ] || "$SKIFF" generate --nodes 2000000 --avg-degree 15 --feature-dim 128 \
    --classes 128 --homophily 0.85 --split 0.05,0.01,0.01 --seed 3 --feature-dtype "$DTYPE" \
    --out "$RAW"
  "$SKIFF" partition "$RAW" -k 64 -o "$DS"
fi
BYTES=${BASIS_BYTES:-$(du -sb "$DS" | cut -f1)}
declare -A BUDGET=([memory]="" [25pct]=$((BYTES / 4)) [10pct]=$((BYTES / 10))
  [5pct]=$((BYTES / 20)))
EXTRA=()
[ -n "${DISK_BANDWIDTH:-}" ] && EXTRA=(--disk-bandwidth "$DISK_BANDWIDTH")
for r in $(seq 1 "$REPEATS"); do
  for setting in $SETTINGS; do
    name="$setting$SUFFIX-$r"
    args=("${EXTRA[@]}")
    budget=${setting%%-mb*}  # "10pct-mb1": 10% with --micro-batches 1
    [ -n "${BUDGET[$budget]}" ] && args+=(--memory "${BUDGET[$budget]}")
    [ "$budget" != "$setting" ] && args+=(--micro-batches "${setting##*-mb}")
    echo "== $name ${args[*]}"
    /usr/bin/time -v "$SKIFF" train "$DS" --epochs "$EPOCHS" --threads 2 "${args[@]}" \
      --metrics "$WORK/runs/$name.jsonl" > "$WORK/runs/$name.log" 2>&1 ||
      { echo "refused or failed: $(grep -m1 '^skiff train' "$WORK/runs/$name.log")"; continue; }
    grep -E "^skiff: info: epoch [0-9]+:|^peak RSS|Maximum resident|physical limit" \
      "$WORK/runs/$name.log"
  done
done
python3 - "$WORK/runs" "$BYTES" <<'PY'
import json, os, re, sys
runs, size = sys.argv[1], int(sys.argv[2])
print(f"dataset {size / 2**30:.2f} GiB")
print("run | epoch | epoch s | train pass s | eval s | test acc | read GiB (x dataset) | fine rows | cached rows | peak RSS MiB")
for name in sorted(os.listdir(runs)):
    if not name.endswith(".jsonl"):
        continue
    log = open(os.path.join(runs, name[:-6] + ".log")).read()
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", log).group(1)) / 1024
    for line in open(os.path.join(runs, name)):
        m = json.loads(line)
        p = m.get("pipeline", {})
        read = p.get("bytes_read", 0)
        print(f"{name[:-6]} | {m['epoch']} | {m['epoch_seconds']:.1f} | {m['epoch_seconds'] - m['eval_seconds']:.1f} | "
              f"{m['eval_seconds']:.1f} | {100 * m['test_acc']:.2f} | {read / 2**30:.2f} "
              f"({read / size:.1f}x) | {p.get('fine_rows', 0)} | {p.get('cached_rows', 0)} | {rss:.0f}")
PY
