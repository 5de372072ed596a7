#!/usr/bin/env bash
# `skiff ownership` end to end on a generated dataset: one rank fetches nothing; the dataset's GREM
# partitions in contiguous ranges leave fewer sampled neighbours and feature rows remote than
# random ownership; every training seed is trained by exactly one rank; the JSON and the table
# agree on the runs they list; an unpartitioned dataset, more ranks than partitions and bad option
# values are refused with a message naming the problem.
#   bash ownership.sh SKIFF_EXE DATASETS_DIR WORK_DIR
set -uo pipefail
SKIFF=$1
WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"
fail() { echo "FAIL: $*"; exit 1; }

"$SKIFF" generate --preset small --out small > /dev/null 2>&1 || fail "generate"
cp -r small part
"$SKIFF" partition part -k 8 --algo grem > /dev/null 2>&1 || fail "partition"

"$SKIFF" ownership part --ranks 1,2,4 --json > out.json 2> err.txt || { cat err.txt; fail "ownership --json"; }
python3 - out.json <<'EOF' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
train = d["train_seeds"]
runs = {(r["ranks"], r["ownership"]): r for r in d["results"]}
assert len(runs) == 6, runs.keys()
for model in ("partitions", "random"):
    one = runs[(1, model)]
    assert one["remote_neighbor_fraction"] == 0 and one["remote_input_row_fraction"] == 0, one
    assert one["remote_adjacency_bytes"] == 0 and one["remote_feature_bytes"] == 0, one
    for w in (1, 2, 4):
        r = runs[(w, model)]
        assert sum(x["seeds"] for x in r["per_rank"]) == train, (w, model)
        assert len(r["per_rank"]) == w
for w in (2, 4):
    grem, rnd = runs[(w, "partitions")], runs[(w, "random")]
    assert grem["remote_neighbor_fraction"] < rnd["remote_neighbor_fraction"], (w, grem, rnd)
    assert grem["remote_input_row_fraction"] < rnd["remote_input_row_fraction"], (w, grem, rnd)
    assert grem["remote_feature_bytes"] < rnd["remote_feature_bytes"], w
    assert len(grem["first_partition"]) == w + 1 and grem["first_partition"][-1] == 8
    # Features: 64 float32 per row.
    assert grem["remote_feature_bytes"] == 256 * sum(x["remote_input_rows"] for x in grem["per_rank"])
EOF
"$SKIFF" ownership part --ranks 2 > table.txt 2> err.txt || { cat err.txt; fail "ownership"; }
grep -q "grem k=8" table.txt || { cat table.txt; fail "no grem row"; }
grep -q "random" table.txt || { cat table.txt; fail "no random row"; }

expect() {  # CODE TEXT ARGS...
  local code=$1 text=$2
  shift 2
  "$SKIFF" "$@" > out.txt 2> err.txt
  local got=$?
  [ "$got" -eq "$code" ] || { echo "FAIL: skiff $* exited $got, expected $code"; cat err.txt; exit 1; }
  [ -z "$text" ] || grep -q -- "$text" err.txt || { echo "FAIL: skiff $*: no '$text'"; cat err.txt; exit 1; }
}
expect 1 "is not partitioned" ownership small
expect 0 "" ownership small --ownership random --ranks 2
expect 1 "cannot give 16 ranks" ownership part --ranks 16
expect 2 "--ranks: '0'" ownership part --ranks 0
expect 2 "--ownership: 'metis'" ownership part --ownership metis
expect 2 "--seeds: 'all'" ownership part --seeds all
expect 2 "--threads" ownership part --threads -1
echo "PASS"
