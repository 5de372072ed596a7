#!/usr/bin/env bash
# The convert memory budget is a promise: peak RSS, measured to process exit, stays within --memory
# plus the documented fixed overhead (docs/convert.md, 96 MiB), here for string IDs piped through
# gzip -- read once, mapped by sorting in many spilled runs -- at a budget far below what holding
# every ID would take (4M edges over 2M IDs: about 150 MiB in one run).
#   bash convert_memory_promise.sh SKIFF_EXE DATASETS_DIR WORK_DIR
set -euo pipefail
SKIFF=$1
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"

awk 'BEGIN { srand(7); for (i = 0; i < 4000000; i++)
  printf "user-%d\tuser-%d\n", int(rand() * 2000000), int(rand() * 2000000) }' | gzip -1 > e.tsv.gz

python3 - "$SKIFF" <<'PY'
import re, resource, subprocess, sys
skiff = sys.argv[1]
budget, overhead = 32 << 20, 96 << 20
run = subprocess.run(f"zcat e.tsv.gz | '{skiff}' convert /dev/stdin ds --memory {budget}",
                     shell=True, capture_output=True, text=True)
log = run.stdout + run.stderr
open("convert.log", "w").write(log)
assert run.returncode == 0, log
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # KiB on Linux
print(f"budget {budget >> 20} MiB, peak RSS {peak / 2**20:.1f} MiB "
      f"(promise {(budget + overhead) >> 20} MiB)")
assert peak <= budget + overhead, f"peak RSS {peak} > budget {budget} + {overhead}"
runs = int(re.search(r"id map +\d+ IDs by sorting, (\d+) runs spilled", log).group(1))
assert runs >= 4, log
PY
"$SKIFF" info ds --verify | grep -q "verify       OK"
"$SKIFF" info ds | grep -q "id map       yes (idmap/): "
echo "convert memory promise: OK"
