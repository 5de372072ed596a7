#!/usr/bin/env bash
# `skiff convert` on inputs that used to give a 0-node dataset with exit 0: an empty file and a
# file of comments must fail naming the input and write nothing. Piped input is read once: with
# dense integer IDs it converts as the file does (no map), with string or sparse IDs through the
# map, in first-seen order. An input name that is not UTF-8 is recorded with U+FFFD.
#   bash convert_odd_inputs.sh SKIFF_EXE DATASETS_DIR WORK_DIR
set -euo pipefail
SKIFF=$1
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"

expect_refusal() {  # NAME EXPECTED_TEXT COMMAND...
  local name=$1 text=$2
  shift 2
  if "$@" > "$name.out" 2> "$name.err"; then echo "FAIL: $name was accepted"; exit 1; fi
  grep -q "$text" "$name.err" || { echo "FAIL: $name: no '$text'"; cat "$name.err"; exit 1; }
  [ -z "$(ls -d out-"$name"* 2>/dev/null)" ] || { echo "FAIL: $name wrote output"; exit 1; }
}

: > empty.tsv
printf '# only\n%% comments\n' > comments.tsv
expect_refusal empty "empty.tsv holds no edges and no nodes" "$SKIFF" convert empty.tsv out-empty
expect_refusal comments "comments.tsv holds no edges" "$SKIFF" convert comments.tsv out-comments
printf 'a b\nb c\n' | "$SKIFF" convert /dev/stdin piped > piped.out 2>&1
"$SKIFF" info piped | grep -q "nodes        3"
"$SKIFF" info piped | grep -q "id map       yes"
printf '0 1\n1 5\n5 0\n' | "$SKIFF" convert /dev/stdin sparse > sparse.out 2>&1
"$SKIFF" info sparse --verify | grep -q "verify       OK"
"$SKIFF" info sparse | grep -q "nodes        3"

printf '0 1\n1 2\n2 0\n' | "$SKIFF" convert /dev/stdin dense > dense.out 2>&1
"$SKIFF" info dense --verify | grep -q "verify       OK"
"$SKIFF" info dense | grep -q "nodes        3"
# A stray large label: converted (it is a valid class index) but not silently.
python3 - <<'PY'
import struct
header = "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open("labels.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<3q", 0, 1, 1000000))
PY
printf '0 1\n1 2\n2 0\n' > three.tsv
"$SKIFF" convert three.tsv wide --labels labels.npy > wide.out 2> wide.err
grep -q "labels go up to 1000000 but only 3 distinct values occur" wide.err || {
  echo "FAIL: no warning for 1000001 classes"; cat wide.err; exit 1; }
echo "convert odd inputs: OK"

# A METIS file listing some edges at one end only: stored both ways, with a warning saying so.
printf '3 2\n2 3\n3\n2\n' > asym.graph
"$SKIFF" convert asym.graph asym > asym.out 2> asym.err
grep -q "asym.graph is not symmetric: at least 2 adjacency entries are listed at one end only" \
  asym.err || { echo "FAIL: asymmetric METIS without a warning"; cat asym.err; exit 1; }
"$SKIFF" info asym --verify | grep -q "verify       OK"

# An input whose name is not UTF-8: the manifest records it with U+FFFD instead of failing.
odd=$(printf 'odd\xff.tsv')
printf '0 1\n1 2\n' > "$odd"
"$SKIFF" convert "$odd" odd > odd.out 2>&1 || { echo "FAIL: a non-UTF-8 input name"; cat odd.out; exit 1; }
"$SKIFF" info odd --verify > odd.info
grep -q "source       skiff convert odd"$'\xef\xbf\xbd'".tsv" odd.info ||
  { echo "FAIL: source not recorded"; cat odd.info; exit 1; }
grep -q "format       version 5$" odd.info
grep -q "verify       OK" odd.info
echo "convert non-UTF-8 name: OK"
