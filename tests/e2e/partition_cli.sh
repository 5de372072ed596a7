#!/usr/bin/env bash
# End-to-end: convert delaunay_n15, partition it with each algorithm, verify the result, partition
# in place, and check that bad input fails with a clear message and leaves the dataset intact.
# Usage: partition_cli.sh SKIFF_EXE DATASETS_DIR WORK_DIR (exit 77 = skipped)
set -euo pipefail
SKIFF="$1"
DATASETS="$2"
WORK="$3"
[ -f "$DATASETS/delaunay_n15.graph" ] || { echo "skip: no delaunay_n15.graph"; exit 77; }
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

"$SKIFF" convert "$DATASETS/delaunay_n15.graph" ds >/dev/null 2>&1

for algo in grem fennel ldg random; do
  "$SKIFF" partition ds -k 8 --algo "$algo" --output "p_$algo" >"$algo.out" 2>"$algo.err"
  grep -q "edge cut" "$algo.out"
  "$SKIFF" info "p_$algo" --verify >"$algo.info" 2>&1
  grep -q "partitions   8 ($algo)" "$algo.info"
  grep -q "verify       OK" "$algo.info"
done
# GREM must beat random by a wide margin on a mesh.
grem_cut=$(sed -n 's/edge cut *\([0-9.]*\)%.*/\1/p' grem.out)
random_cut=$(sed -n 's/edge cut *\([0-9.]*\)%.*/\1/p' random.out)
awk -v g="$grem_cut" -v r="$random_cut" 'BEGIN { exit !(g * 5 < r) }'

# In place: the dataset becomes partitioned, no temporary directory is left.
cp -r ds inplace
"$SKIFF" partition inplace -k 4 >/dev/null 2>&1
info_inplace=$("$SKIFF" info inplace --verify)  # captured: grep -q would cut info's pipe
grep -q "partitions   4 (grem)" <<<"$info_inplace"
! ls -d inplace.tmp-* 2>/dev/null

# Bad input: k larger than N, an unknown algorithm, a flipped byte. Non-zero exit, clear message.
if "$SKIFF" partition ds -k 40000 --output bad 2>err.txt; then exit 1; fi
grep -q "cannot split 32768 nodes into 40000" err.txt
[ ! -e bad ]
if "$SKIFF" partition ds --algo metis --output bad 2>err.txt; then exit 1; fi
grep -q "unknown partitioning algorithm 'metis'" err.txt
cp -r ds corrupt
printf '\xff' | dd of=corrupt/graph.neighbors bs=1 seek=1000 conv=notrunc 2>/dev/null
if "$SKIFF" partition corrupt -k 4 2>err.txt; then exit 1; fi
grep -q "graph.neighbors" err.txt
"$SKIFF" info corrupt | grep -q "partitions   none"
echo "partition e2e OK"
