#!/usr/bin/env bash
# End-to-end: `skiff generate --preset small` makes a dataset that `skiff info --verify` accepts,
# with the preset's counts; the same seed gives byte-identical files at any thread count; a
# different seed does not; bad options fail without leaving a dataset.
# Usage: generate_small.sh SKIFF_EXE DATASETS_DIR WORK_DIR
set -euo pipefail
skiff=$1
work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "generate_small: FAIL: $*" >&2; exit 1; }

"$skiff" generate --preset small --out "$work/a" --threads 1 >"$work/a.log"
"$skiff" info "$work/a" --verify >"$work/a.info"
grep -q "verify       OK" "$work/a.info" || fail "info --verify did not report OK"
"$skiff" info "$work/a" --json >"$work/a.json"
field() { sed -n "s/^  \"$1\": \([0-9a-z]*\),\{0,1\}$/\1/p" "$work/a.json" | head -1; }
[ "$(field num_nodes)" = 10000 ] || fail "num_nodes is $(field num_nodes), expected 10000"
[ "$(field feature_dim)" = 64 ] || fail "feature_dim is $(field feature_dim), expected 64"
[ "$(field num_classes)" = 8 ] || fail "num_classes is $(field num_classes), expected 8"
[ "$(field undirected)" = false ] || fail "generated graphs are directed"
edges=$(field num_edges)
[ "$edges" -gt 90000 ] && [ "$edges" -le 101000 ] || fail "num_edges $edges not near 10000 * 10"

# Determinism: same seed -> byte-identical files, whatever the thread count.
"$skiff" generate --preset small --out "$work/b" --threads 2 >/dev/null
for f in "$work"/a/*; do
  name=$(basename "$f")
  cmp -s "$f" "$work/b/$name" || fail "$name differs between two runs with the same seed"
done
"$skiff" generate --preset small --seed 7 --out "$work/c" >/dev/null
cmp -s "$work/a/graph.neighbors" "$work/c/graph.neighbors" && fail "seed 7 gave the same edges"

# Explicit sizes and float16 features.
"$skiff" generate --nodes 5000 --avg-degree 6 --classes 3 --feature-dim 16 --homophily 0.9 \
  --feature-dtype float16 --split per-class:20,30 --out "$work/d" >"$work/d.log"
# Capture first: `grep -q` stops reading at the first match, which would cut info's pipe.
info_d=$("$skiff" info "$work/d" --verify)
grep -q "features     16 x float16" <<<"$info_d" || fail "float16 dataset"
grep -q "splits       train 60 / valid 90 / test 4850" "$work/d.log" || fail "per-class split counts"

# Bad input: non-zero exit, a message naming the option, no dataset left behind.
if "$skiff" generate --nodes 100 --homophily 2 --out "$work/bad" 2>"$work/bad.err"; then
  fail "--homophily 2 was accepted"
fi
grep -q -- "--homophily" "$work/bad.err" || fail "error does not name --homophily"
[ ! -e "$work/bad" ] || fail "a failed generate left $work/bad"
if "$skiff" generate --preset small --out "$work/a" 2>"$work/exists.err"; then
  fail "overwrote an existing dataset without --overwrite"
fi
grep -q "already exists" "$work/exists.err" || fail "no 'already exists' message"
# An output whose parent does not exist: a clear message, nothing created.
if "$skiff" generate --preset small --out "$work/no/such/dir" 2>"$work/parent.err"; then
  fail "generated into a missing parent directory"
fi
grep -q "does not exist" "$work/parent.err" || fail "no message about the missing parent"
echo "generate_small: OK"

# A manifest edited by hand no longer matches its own checksum: every command refuses the dataset.
# (A writer out of step with its data, checksum and all, is caught by `info --verify`: unit tests.)
cp -r "$work/a" "$work/e"
sed -i 's/^  "num_classes": 8,/  "num_classes": 3,/' "$work/e/manifest.json"
grep -q '"num_classes": 3,' "$work/e/manifest.json" || fail "the edit did not apply"
if "$skiff" info "$work/e" >"$work/e.out" 2>&1; then fail "an edited manifest opened"; fi
grep -q "manifest.json: the manifest does not match its checksum" "$work/e.out" ||
  fail "info: $(cat "$work/e.out")"
