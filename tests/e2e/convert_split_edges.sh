#!/usr/bin/env bash
# End-to-end: `skiff convert --split-edges` on cora.npz holds out edges for link prediction: the
# dataset verifies (no held-out edge left in the graph, train pairs in it, non-edges absent), the
# counts are near the fractions, `skiff partition` keeps the split verified, `skiff split-edges`
# on the unsplit dataset gives the same split, and malformed fractions are usage errors.
# Usage: convert_split_edges.sh SKIFF_EXE DATASETS_DIR WORK_DIR   (exit 77 = skipped)
set -euo pipefail
SKIFF="$1"
DATASETS="$2"
WORK="$3"
[ -f "$DATASETS/cora.npz" ] || { echo "skip: no cora.npz"; exit 77; }
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"
fail() { echo "convert_split_edges: FAIL: $*" >&2; exit 1; }

# Cora converted undirected has 5,278 undirected edges (10,556 stored). Valid and test counts are
# binomial: 5% of 5,278 is 264 (sd ~16), 10% is 528 (sd ~22).
"$SKIFF" convert "$DATASETS/cora.npz" cora --undirected --split-edges 0.85,0.05,0.1 \
  --split-seed 3 >cora.out 2>cora.err || { cat cora.err; fail "convert"; }
grep -q "^edge split   train" cora.out || { cat cora.out; fail "no summary line"; }
"$SKIFF" info cora --verify >cora.info || { cat cora.info; fail "info --verify"; }
grep -q "verify       OK" cora.info
grep -q "format       version 5" cora.info
read -r train valid test valid_neg test_neg < <(sed -n \
  's/^edge split   train \([0-9]*\) \/ valid \([0-9]*\) \/ test \([0-9]*\) pairs, non-edges \([0-9]*\) \/ \([0-9]*\).*/\1 \2 \3 \4 \5/p' \
  cora.info)
[ -n "${train:-}" ] || { cat cora.info; fail "no edge split line in info"; }
[ $((train + valid + test)) -eq 5278 ] || fail "train+valid+test = $((train + valid + test))"
[ "$valid" -ge 184 ] && [ "$valid" -le 344 ] || fail "valid count $valid far from 264"
[ "$test" -ge 418 ] && [ "$test" -le 638 ] || fail "test count $test far from 528"
[ "$valid_neg" -eq "$valid" ] && [ "$test_neg" -eq "$test" ] || fail "non-edge counts"
edges=$(sed -n 's/^edges        \([0-9]*\) stored.*/\1/p' cora.info)
[ "$edges" -eq $((10556 - 2 * (valid + test))) ] || fail "graph keeps $edges edges"

# Partitioning relabels the pairs; the split stays consistent.
"$SKIFF" partition cora -k 4 -o parts >parts.out 2>parts.err || { cat parts.err; fail "partition"; }
"$SKIFF" info parts --verify >parts.info || { cat parts.info; fail "info --verify after partition"; }
grep -q "verify       OK" parts.info
grep -q "edge split   train $train / valid $valid / test $test pairs" parts.info ||
  fail "partition changed the split counts"

# The standalone command on the unsplit dataset gives the same split.
"$SKIFF" convert "$DATASETS/cora.npz" plain --undirected >plain.out 2>plain.err
"$SKIFF" split-edges plain again --split-edges 0.85,0.05,0.1 --seed 3 >again.out
grep -q "train $train / valid $valid / test $test pairs" again.out || { cat again.out; fail "split-edges"; }
"$SKIFF" info again --verify | grep -q "verify       OK" || fail "split-edges output does not verify"
if "$SKIFF" split-edges cora twice --split-edges 0.85,0.05,0.1 2>twice.err; then
  fail "splitting a split dataset"
fi
grep -q "already has an edge split" twice.err || { cat twice.err; fail "refusal message"; }

# Malformed fractions are usage errors naming the option.
for bad in 0.85,0.05 0.9,0.2,0.1 a,b,c; do
  set +e
  "$SKIFF" convert "$DATASETS/cora.npz" bad --split-edges "$bad" 2>bad.err
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "--split-edges $bad: exit $rc"
  grep -q -- "--split-edges '$bad'" bad.err || { cat bad.err; fail "message for $bad"; }
  [ ! -e bad ] || fail "--split-edges $bad left an output"
done
echo "convert --split-edges: OK"
