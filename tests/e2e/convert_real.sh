#!/usr/bin/env bash
# Converts the shared real datasets and checks the counts from their README:
#   email-Enron.tsv (SNAP, undirected): 36,692 nodes, 183,831 edges -> 367,662 stored
#   delaunay_n15.graph (METIS):          32,768 nodes,  98,274 edges -> 196,548 stored
# Usage: convert_real.sh SKIFF_EXE DATASETS_DIR WORK_DIR   (exit 77 when the datasets are absent)
set -euo pipefail
skiff="$1"
datasets="$2"
work="$3"

for f in email-Enron.tsv delaunay_n15.graph; do
  if [[ ! -f "$datasets/$f" ]]; then
    echo "skipped: $datasets/$f not found"
    exit 77
  fi
done
rm -rf "$work"
mkdir -p "$work"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# json_field DATASET FIELD -> the integer/boolean value of a top-level manifest field
json_field() {
  "$skiff" info --json "$1" | python3 -c "import json,sys; v=json.load(sys.stdin)$2; print(str(v).lower() if isinstance(v,bool) else v)"
}

check() {  # check DATASET FIELD EXPECTED
  local got
  got=$(json_field "$1" "$2")
  [[ "$got" == "$3" ]] || fail "$1: $2 is $got, expected $3"
  echo "ok: $(basename "$1") $2 = $got"
}

# email-Enron: undirected, lists both directions; duplicates are dropped.
"$skiff" convert "$datasets/email-Enron.tsv" "$work/enron" --undirected --memory 64MiB
check "$work/enron" "['num_nodes']" 36692
check "$work/enron" "['num_edges']" 367662
check "$work/enron" "['undirected']" true
check "$work/enron" "['has_id_map']" false
"$skiff" info --verify "$work/enron" >/dev/null || fail "enron: verify"

# The same with a budget so small the sort spills, through a gzip copy: identical CSR.
gzip -c "$datasets/email-Enron.tsv" >"$work/enron.tsv.gz"
"$skiff" convert "$work/enron.tsv.gz" "$work/enron-gz" --undirected --memory 1MiB
check "$work/enron-gz" "['num_edges']" 367662
cmp "$work/enron/graph.neighbors" "$work/enron-gz/graph.neighbors" || fail "spilled CSR differs"
cmp "$work/enron/graph.offsets" "$work/enron-gz/graph.offsets" || fail "spilled offsets differ"

# Forcing the RocksDB ID map gives the same counts (IDs renumbered in first-seen order).
"$skiff" convert "$datasets/email-Enron.tsv" "$work/enron-map" --undirected --id-map always
check "$work/enron-map" "['num_nodes']" 36692
check "$work/enron-map" "['num_edges']" 367662
check "$work/enron-map" "['has_id_map']" true
[[ -d "$work/enron-map/idmap" ]] || fail "enron-map has no idmap/"

# delaunay_n15: METIS, undirected by nature.
"$skiff" convert "$datasets/delaunay_n15.graph" "$work/delaunay"
check "$work/delaunay" "['num_nodes']" 32768
check "$work/delaunay" "['num_edges']" 196548
check "$work/delaunay" "['undirected']" true
"$skiff" info --verify "$work/delaunay" >/dev/null || fail "delaunay: verify"

# Bad input: non-zero exit, one message naming file and line, and no output directory.
head -c 100000 "$datasets/delaunay_n15.graph" >"$work/cut.graph"
if "$skiff" convert "$work/cut.graph" "$work/cut" 2>"$work/cut.err"; then
  fail "a truncated METIS file converted"
fi
grep -q "cut.graph: file ends after" "$work/cut.err" || fail "unclear error: $(cat "$work/cut.err")"
[[ ! -e "$work/cut" ]] || fail "a failed conversion left $work/cut"
if compgen -G "$work/cut.tmp-*" >/dev/null; then fail "a failed conversion left a temp dir"; fi

# An unwritable output location.
if "$skiff" convert "$datasets/email-Enron.tsv" /proc/skiff-nope 2>"$work/nope.err"; then
  fail "converting into /proc succeeded"
fi
echo "ok: bad inputs rejected: $(tail -1 "$work/cut.err")"
echo "PASS"
