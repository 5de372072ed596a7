#!/usr/bin/env bash
# Partition quality benchmark: GREM, LDG, Fennel, random (skiff partition --no-write) and METIS
# (gpmetis, for comparison only) side by side on the same graphs, for k = 8, 16, 64, 256.
#
# Usage: tools/bench/partition_quality.sh [WORK_DIR] [GRAPHS...]
#   SKIFF=path/to/skiff (default build/skiff), DATASETS=../shared/datasets,
#   GRAPHS: any of enron delaunay gen1m gen10m gen100m (default: all but gen100m),
#   KS="8 16 64 256", ALGOS="grem ldg fennel random metis" (also: grem-frozen = grem --no-refine),
#   MEMORY=1GiB (skiff's --memory).
# Prints one Markdown table row per (graph, k, algorithm): edge-cut fraction of the stored edges,
# imbalance (largest part / ceil(N/k) - 1), wall time and peak RSS from /usr/bin/time -v. gpmetis
# runs with -ufactor=30 (the same 3% bound as skiff's default --eps 0.03); its partition is scored
# by `skiff partition --evaluate` on the same stored edges. Datasets are built once in WORK_DIR.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SKIFF="${SKIFF:-$ROOT/build/skiff}"
DATASETS="${DATASETS:-$ROOT/../shared/datasets}"
WORK="${1:-/tmp/skiff-partition-bench}"
shift || true
GRAPHS=("$@")
[ ${#GRAPHS[@]} -eq 0 ] && GRAPHS=(enron delaunay gen1m gen10m)
KS="${KS:-8 16 64 256}"
ALGOS="${ALGOS:-grem ldg fennel random metis}"
MEMORY="${MEMORY:-1GiB}"
mkdir -p "$WORK"

build_dataset() {
  local name="$1" dir="$WORK/$1"
  [ -f "$dir/manifest.json" ] && return 0
  case "$name" in
    enron) "$SKIFF" convert "$DATASETS/email-Enron.tsv" "$dir" --undirected >/dev/null ;;
    delaunay) "$SKIFF" convert "$DATASETS/delaunay_n15.graph" "$dir" >/dev/null ;;
    gen1m) "$SKIFF" generate --nodes 100000 --avg-degree 10 --feature-dim 8 --seed 1 --out "$dir" >/dev/null ;;
    gen10m) "$SKIFF" generate --nodes 1000000 --avg-degree 10 --feature-dim 8 --seed 1 --out "$dir" >/dev/null ;;
    gen100m) "$SKIFF" generate --nodes 10000000 --avg-degree 10 --feature-dim 8 --seed 1 --out "$dir" >/dev/null ;;
    *) echo "unknown graph $name" >&2; exit 2 ;;
  esac
}

# Runs a command under /usr/bin/time -v; sets WALL_S, RSS_MIB and OUT (its stdout).
timed() {
  local tfile="$WORK/time.txt"
  OUT="$(/usr/bin/time -v -o "$tfile" "$@" 2>/dev/null)"
  WALL_S="$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,t,":"); s=0; for(i=1;i<=n;i++) s=s*60+t[i]; print s}' "$tfile")"
  RSS_MIB="$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2/1024}' "$tfile")"
}

json_field() { sed -n "s/.*\"$1\": \([-0-9.e]*\).*/\1/p" <<<"$2"; }

echo "| graph | nodes | stored edges | k | algorithm | edge cut | imbalance | wall s | peak RSS MiB |"
echo "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |"
for g in "${GRAPHS[@]}"; do
  build_dataset "$g"
  ds="$WORK/$g"
  if [[ " $ALGOS " == *" metis "* ]] && [ ! -f "$WORK/$g.graph" ]; then
    "$SKIFF" partition "$ds" --export-metis "$WORK/$g.graph" >/dev/null
  fi
  for k in $KS; do
    for a in $ALGOS; do
      if [ "$a" = metis ]; then
        timed gpmetis "$WORK/$g.graph" "$k" -ufactor=30
        wall="$WALL_S" rss="$RSS_MIB"
        OUT="$("$SKIFF" partition "$ds" -k "$k" --evaluate "$WORK/$g.graph.part.$k")"
      elif [ "$a" = grem-frozen ]; then
        timed "$SKIFF" partition "$ds" -k "$k" --algo grem --no-refine --memory "$MEMORY" --no-write --json
        wall="$WALL_S" rss="$RSS_MIB"
      else
        timed "$SKIFF" partition "$ds" -k "$k" --algo "$a" --memory "$MEMORY" --no-write --json
        wall="$WALL_S" rss="$RSS_MIB"
      fi
      printf "| %s | %s | %s | %s | %s | %.4f | %.4f | %s | %s |\n" "$g" \
        "$(json_field nodes "$OUT")" "$(json_field edges "$OUT")" "$k" "$a" \
        "$(json_field edge_cut_fraction "$OUT")" "$(json_field imbalance "$OUT")" "$wall" "$rss"
    done
  done
done
