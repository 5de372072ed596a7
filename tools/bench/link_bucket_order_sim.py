"""What ordering a link-prediction epoch's edges by partition would save out of core: a simulation
on a partitioned Skiff dataset with an edge split (benchmark only; needs numpy).

    python tools/bench/link_bucket_order_sim.py DATASET_DIR [--group 5] [--groups 20]

A 25% link pass gathers its batches in groups (each group's rows read in one sorted, coalesced
stream: docs/pipeline.md). This samples groups of `--group` batches of 1024 training edges (64
shared uniform negatives each) with fanouts 15,10 -- uniform picks with replacement, close to
Skiff's sampler for this purpose -- in two orders: the trainer's (a uniform shuffle), and
MariusGNN-style buckets: the partitions shuffled into windows of W partitions, the edges grouped
by their source's window and shuffled within it. For each, per group: the distinct input rows
and the bytes a feature file in partition order takes to read them, 4 KiB-aligned, with reads
merged across gaps of at most 0, 4 KiB or 32 KiB (the buffer pool's fine-read merge gap).
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from skiff_dataset import SkiffDataset  # noqa: E402

BATCH, NEGATIVES, FANOUTS, GAPS = 1024, 64, (15, 10), (0, 4096, 32768)


def hop(rng, offsets, neighbors, nodes, fanout):
    degree = offsets[nodes + 1] - offsets[nodes]
    nodes, degree = np.repeat(nodes, fanout), np.repeat(degree, fanout)
    keep = degree > 0
    picks = (rng.random(int(keep.sum())) * degree[keep]).astype(np.int64)
    return neighbors[offsets[nodes[keep]] + picks]


def read_bytes(rows, row_bytes, gap):
    """Bytes and reads to fetch sorted distinct `rows`, 4 KiB-aligned, merged across `gap`."""
    start = rows * row_bytes
    end = start + row_bytes
    cut = np.nonzero(start[1:] - end[:-1] > gap)[0]
    first = np.concatenate([[start[0]], start[cut + 1]]) // 4096 * 4096
    last = (np.concatenate([end[cut], [end[-1]]]) + 4095) // 4096 * 4096
    return int((last - first).sum()), len(first)


def simulate(name, order, pairs, graph, n, row_bytes, args, rng):
    offsets, neighbors = graph
    per_group = args.group * BATCH
    rows = 0
    totals = {gap: [0, 0] for gap in GAPS}
    for g in range(args.groups):
        ends = pairs[order[g * per_group:(g + 1) * per_group]].ravel()
        negatives = rng.integers(0, n, NEGATIVES * args.group)
        needed = np.unique(np.concatenate([ends, negatives]))
        for fanout in FANOUTS:  # every node reached so far draws the next hop
            needed = np.unique(np.concatenate([needed, hop(rng, offsets, neighbors, needed,
                                                            fanout)]))
        rows += needed.size
        for gap in GAPS:
            b, r = read_bytes(needed, row_bytes, gap)
            totals[gap][0] += b
            totals[gap][1] += r
    k = args.groups
    cells = "  ".join(f"gap {gap >> 10} KiB: {v[0] / k / 1e6:6.1f} MB in {v[1] / k:8.0f} reads"
                      for gap, v in totals.items())
    print(f"{name:22s} rows/group {rows / k:9.0f}  {cells}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dataset")
    p.add_argument("--group", type=int, default=5, help="batches per gathered group")
    p.add_argument("--groups", type=int, default=20, help="groups sampled per order")
    p.add_argument("--windows", default="1,2,4,8", help="partitions per bucket window")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    ds = SkiffDataset(args.dataset)
    parts = ds.manifest.get("partitions")
    if not parts or "link_split" not in ds.manifest:
        sys.exit(f"{args.dataset}: needs partitions and an edge split")
    rng = np.random.default_rng(args.seed)
    graph = ds.csr()
    pairs = ds._file("link_train.edges", np.int64).reshape(-1, 2)
    bounds = np.asarray(parts["boundaries"])
    part_of_source = np.searchsorted(bounds, pairs[:, 0], side="right") - 1
    row_bytes = ds.feature_dim * (2 if ds.manifest["feature_dtype"] == "float16" else 4)
    print(f"{args.dataset}: {ds.num_nodes} nodes, {len(pairs)} training pairs, "
          f"{len(bounds) - 1} partitions (edge cut {parts.get('edge_cut_fraction', 0):.3f}), "
          f"groups of {args.group} batches")
    common = (pairs, graph, ds.num_nodes, row_bytes, args, rng)
    simulate("shuffled (trainer)", rng.permutation(len(pairs)), *common)
    for w in (int(x) for x in args.windows.split(",")):
        window = np.empty(len(bounds) - 1, dtype=np.int64)
        window[rng.permutation(len(window))] = np.arange(len(window)) // w
        order = rng.permutation(len(pairs))
        order = order[np.argsort(window[part_of_source[order]], kind="stable")]
        simulate(f"buckets of {w} partitions", order, *common)


if __name__ == "__main__":
    main()
