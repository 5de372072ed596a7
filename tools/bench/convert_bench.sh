#!/usr/bin/env bash
# Convert throughput benchmark: generates an edge list of EDGES edges over NODES nodes (a ring that
# touches every node, then uniformly random edges), converts it with `--memory MEMORY`, and reports
# wall time, edges/s and peak RSS (/usr/bin/time -v); then the same graph with string IDs ("u<id>"),
# which are mapped by sorting (IdMapBuilder). Dense and string runs alternate REPEATS times, so
# their ratio is measured side by side; last, the string input is piped through zcat from a .gz
# (read once; peak RSS is the larger of zcat's and skiff's).
#
# Usage: [REPEATS=2] tools/bench/convert_bench.sh SKIFF_EXE WORK_DIR [EDGES=100000000]
#                                                 [NODES=10000000] [MEMORY=1GiB]
# Needs about 60 bytes of disk per edge in WORK_DIR (inputs, a .gz, datasets, spill files).
set -euo pipefail
skiff="$(realpath "$1")"
work="$2"
edges="${3:-100000000}"
nodes="${4:-10000000}"
memory="${5:-1GiB}"
repeats="${REPEATS:-2}"
mkdir -p "$work"

gen() {  # gen PREFIX OUT
  [[ -f "$2" ]] && return 0
  echo "generating $2 ($edges edges, $nodes nodes)" >&2
  mawk -v E="$edges" -v N="$nodes" -v P="$1" 'BEGIN {
    srand(42);
    for (i = 0; i < N && i < E; i++) printf "%s%d\t%s%d\n", P, i, P, (i + 1) % N;
    for (; i < E; i++) printf "%s%d\t%s%d\n", P, int(rand() * N), P, int(rand() * N);
  }' >"$2.partial"
  mv "$2.partial" "$2"
}

run() {  # run NAME COMMAND...  (the command writes the dataset to $work/out)
  local name="$1"
  shift
  rm -rf "$work/out"
  sync
  /usr/bin/time -v "$@" >"$work/$name.out" 2>"$work/$name.err"
  local secs rss
  secs=$(grep "Elapsed (wall clock)" "$work/$name.err" | awk '{print $NF}')
  rss=$(grep "Maximum resident set size" "$work/$name.err" | awk '{print $NF}')
  echo "== $name: wall $secs, peak RSS $((rss / 1024)) MiB"
  grep -E "^(nodes|edges|sort|id map|time) " "$work/$name.out"
  rm -rf "$work/out"
}

int="$work/int-$edges.tsv"
str="$work/str-$edges.tsv"
gen "" "$int"
gen "u" "$str"
[[ -f "$str.gz" ]] || { gzip -1 -c "$str" >"$str.gz.partial" && mv "$str.gz.partial" "$str.gz"; }
for rep in $(seq 1 "$repeats"); do
  run "int-$rep" "$skiff" convert "$int" "$work/out" --memory "$memory"
  run "str-$rep" "$skiff" convert "$str" "$work/out" --memory "$memory"
done
run "str-zcat" bash -c "zcat '$str.gz' | '$skiff' convert /dev/stdin '$work/out' --memory '$memory'"
