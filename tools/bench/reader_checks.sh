#!/usr/bin/env bash
# What the readers' content checks cost (docs/FORMAT.md, "What readers check"): one epoch of the
# default model on a dataset, in memory and with --memory = 25% of its bytes, with two builds
# alternating (before and after), and `info --verify` with each. Results: BENCHMARKS.md, "Checks
# on open".
#
#   tools/bench/reader_checks.sh BEFORE_EXE AFTER_EXE DATASET WORK_DIR
#
# REPEATS (default 2) pairs per setting. Evaluation batches are not kept (--scratch-dir none), so
# the dataset's directory is only read. Prints, per run, the epoch time and accuracy from the
# metrics line, and wall, CPU and peak RSS from `time`.
set -euo pipefail
BEFORE=${1:?usage: reader_checks.sh BEFORE_EXE AFTER_EXE DATASET WORK_DIR}
AFTER=${2:?usage: reader_checks.sh BEFORE_EXE AFTER_EXE DATASET WORK_DIR}
DS=${3:?usage: reader_checks.sh BEFORE_EXE AFTER_EXE DATASET WORK_DIR}
WORK=${4:?usage: reader_checks.sh BEFORE_EXE AFTER_EXE DATASET WORK_DIR}
REPEATS=${REPEATS:-2}
mkdir -p "$WORK"
QUARTER=$(($(du -sb "$DS" | cut -f1) / 4))
run() {  # NAME EXE ARGS...
  local name=$1 exe=$2
  shift 2
  rm -f "$WORK/$name.jsonl"
  /usr/bin/time -f "wall %e s, cpu %U+%S s, peak %M KiB" "$exe" "$@" > "$WORK/$name.log" 2>&1
  local epoch=""
  if [ -f "$WORK/$name.jsonl" ]; then
    epoch=$(python3 -c "import json,sys; m=json.loads(open(sys.argv[1]).readline()); \
print('epoch %.2f s, test %.2f%%' % (m['epoch_seconds'], 100 * m['test_acc']))" "$WORK/$name.jsonl")
  fi
  echo "$name: $epoch | $(tail -1 "$WORK/$name.log")"
}
for r in $(seq 1 "$REPEATS"); do
  for setting in memory 25pct; do
    args=(train "$DS" --epochs 1 --threads 2 --scratch-dir none)
    [ "$setting" = 25pct ] && args+=(--memory "$QUARTER")
    run "$setting-before-$r" "$BEFORE" "${args[@]}" --metrics "$WORK/$setting-before-$r.jsonl"
    run "$setting-after-$r" "$AFTER" "${args[@]}" --metrics "$WORK/$setting-after-$r.jsonl"
  done
done
run verify-before "$BEFORE" info "$DS" --verify
run verify-after "$AFTER" info "$DS" --verify
