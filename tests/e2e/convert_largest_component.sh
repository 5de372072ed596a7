#!/usr/bin/env bash
# End-to-end: `skiff convert --largest-component` on the shared datasets, alone and with
# --partitions, gives verified datasets of the published largest-component sizes.
# Usage: convert_largest_component.sh SKIFF_EXE DATASETS_DIR WORK_DIR (exit 77 = skipped)
set -euo pipefail
SKIFF="$1"
DATASETS="$2"
WORK="$3"
[ -f "$DATASETS/cora.npz" ] || { echo "skip: no cora.npz"; exit 77; }
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

# Cora (Shchur et al.; datasets README): 2,485 nodes and 5,069 undirected edges in the largest
# component, per-class splits drawn on it.
"$SKIFF" convert "$DATASETS/cora.npz" cora --undirected --largest-component \
  --split per-class:20,30 --seed 1 >cora.out 2>cora.err
grep -q "component    largest of 78: 2485 of 2708 nodes, 10138 of 10556 edges kept" cora.out
"$SKIFF" info cora --verify >cora.info
grep -q "verify       OK" cora.info
grep -q "nodes        2485" cora.info
grep -q "splits       train 140 / valid 210 / test 2135" cora.info

# With --partitions: converted, reduced and partitioned in one command.
"$SKIFF" convert "$DATASETS/cora.npz" parts --undirected --largest-component --partitions 4 \
  >parts.out 2>parts.err
grep -q "partitions   4 (grem)" parts.out
"$SKIFF" info parts --verify >parts.info
grep -q "verify       OK" parts.info
grep -q "nodes        2485" parts.info
[ -z "$(ls -d parts.* 2>/dev/null | grep -v -e '\.out$' -e '\.err$' -e '\.info$')" ] \
  || { ls -d parts.*; exit 1; }

# An edge list: email-Enron's largest weakly connected component is 33,696 nodes and 180,811
# edges (SNAP's figures).
if [ -f "$DATASETS/email-Enron.tsv" ]; then
  "$SKIFF" convert "$DATASETS/email-Enron.tsv" enron --undirected --largest-component \
    >enron.out 2>enron.err
  grep -q "33696 of 36692 nodes, 361622 of 367662 edges kept" enron.out
  "$SKIFF" info enron --verify | grep -q "verify       OK"
fi
echo "convert --largest-component: OK"
