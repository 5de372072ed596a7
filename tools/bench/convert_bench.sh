#!/usr/bin/env bash
# Convert throughput benchmark: generates an edge list of EDGES edges over NODES nodes (a ring that
# touches every node, then uniformly random edges), converts it with `--memory MEMORY`, and reports
# edges/s and peak RSS (/usr/bin/time -v); then the same graph with string IDs ("u<id>"), which go
# through the RocksDB ID map.
#
# Usage: tools/bench/convert_bench.sh SKIFF_EXE WORK_DIR [EDGES=100000000] [NODES=10000000]
#                                     [MEMORY=1GiB]
# Needs about 40 bytes of disk per edge in WORK_DIR (inputs, datasets, spill files).
set -euo pipefail
skiff="$(realpath "$1")"
work="$2"
edges="${3:-100000000}"
nodes="${4:-10000000}"
memory="${5:-1GiB}"
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

run() {  # run NAME INPUT [extra convert flags...]
  local name="$1" input="$2"
  shift 2
  rm -rf "$work/$name"
  sync
  /usr/bin/time -v "$skiff" convert "$input" "$work/$name" --memory "$memory" "$@" \
    >"$work/$name.out" 2>"$work/$name.err"
  local secs rss
  secs=$(grep "Elapsed (wall clock)" "$work/$name.err" | awk '{print $NF}')
  rss=$(grep "Maximum resident set size" "$work/$name.err" | awk '{print $NF}')
  echo "== $name: input $(du -h "$input" | cut -f1), wall $secs, peak RSS $((rss / 1024)) MiB"
  grep -E "^(nodes|edges|sort|time) " "$work/$name.out"
  rm -rf "$work/$name"
}

gen "" "$work/int-$edges.tsv"
run "int" "$work/int-$edges.tsv"
gen "u" "$work/str-$edges.tsv"
run "str" "$work/str-$edges.tsv"
