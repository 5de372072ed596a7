#!/usr/bin/env bash
# The convert memory budget is a promise: peak RSS, measured to process exit, stays within --memory
# plus the documented fixed overhead (docs/convert.md, 96 MiB), here for string IDs piped through
# gzip -- read once, mapped by sorting in many spilled runs -- at a budget far below what holding
# every ID would take (4M edges over 2M IDs: about 150 MiB in one run).
#   bash convert_memory_promise.sh SKIFF_EXE DATASETS_DIR WORK_DIR
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SKIFF=$1
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"

awk 'BEGIN { srand(7); for (i = 0; i < 4000000; i++)
  printf "user-%d\tuser-%d\n", int(rand() * 2000000), int(rand() * 2000000) }' | gzip -1 > e.tsv.gz

budget=$((32 << 20))
python3 "$HERE/peak_rss_within.py" "$budget" $((96 << 20)) convert.log -- \
  bash -c "zcat e.tsv.gz | '$SKIFF' convert /dev/stdin ds --memory $budget"
runs=$(sed -nE 's/.*id map +[0-9]+ IDs by sorting, ([0-9]+) runs spilled.*/\1/p' convert.log)
[ "${runs:-0}" -ge 4 ] || { cat convert.log; echo "expected >= 4 spilled runs, got '$runs'"; exit 1; }
"$SKIFF" info ds --verify | grep -q "verify       OK"
"$SKIFF" info ds | grep -q "id map       yes (idmap/): "
echo "convert memory promise: OK"
