#!/usr/bin/env bash
# End-to-end: `skiff convert --partitions K` takes a raw graph to a partitioned, verified dataset in
# one command, with the same edges as convert + partition run separately.
# Usage: convert_partitions.sh SKIFF_EXE DATASETS_DIR WORK_DIR (exit 77 = skipped)
set -euo pipefail
SKIFF="$1"
DATASETS="$2"
WORK="$3"
[ -f "$DATASETS/email-Enron.tsv" ] || { echo "skip: no email-Enron.tsv"; exit 77; }
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

"$SKIFF" convert "$DATASETS/email-Enron.tsv" one --undirected --partitions 8 >one.out 2>one.err
grep -q "partitions   8 (grem)" one.out
"$SKIFF" info one --verify >one.info
grep -q "partitions   8 (grem)" one.info
grep -q "verify       OK" one.info
grep -q "nodes        36692" one.info
grep -q "edges        367662 stored" one.info

"$SKIFF" convert "$DATASETS/email-Enron.tsv" two --undirected >/dev/null 2>&1
"$SKIFF" partition two -k 8 --algo grem >/dev/null 2>&1
"$SKIFF" info one --json | grep -v '"source"' >one.json
"$SKIFF" info two --json | grep -v '"source"' >two.json
# Same partitioning, same layout: the manifests agree except for provenance and timings.
diff <(grep -E '"(boundaries|edge_cut_fraction|num_edges|num_nodes)"' -A0 one.json) \
     <(grep -E '"(boundaries|edge_cut_fraction|num_edges|num_nodes)"' -A0 two.json)

# A bad algorithm name is a usage error and writes nothing.
if "$SKIFF" convert "$DATASETS/email-Enron.tsv" bad --partitions 4 --partition-algo metis \
    >bad.out 2>bad.err; then
  echo "expected failure"; exit 1
fi
grep -qi "metis" bad.err
[ ! -e bad ]
# Partitioning that fails after the conversion leaves nothing: no output, no staging; the same
# command with a valid k then succeeds.
if "$SKIFF" convert "$DATASETS/email-Enron.tsv" late --undirected --partitions 100000 \
    >late.out 2>late.err; then
  echo "expected failure"; exit 1
fi
grep -q "nothing was written there" late.err
[ ! -e late ] || { echo "late was written"; exit 1; }
[ -z "$(ls -d late.* 2>/dev/null | grep -v -e '\.out$' -e '\.err$')" ] || { ls -d late.*; exit 1; }
"$SKIFF" convert "$DATASETS/email-Enron.tsv" late --undirected --partitions 4 >/dev/null 2>&1
"$SKIFF" info late --verify | grep -q "verify       OK"
echo "convert --partitions: OK"
