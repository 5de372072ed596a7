"""Link prediction on the CPU with PyTorch Geometric's LinkNeighborLoader, on a Skiff dataset with
an edge split (benchmark only; torch, torch_geometric and torch-sparse come from PyPI and are never
Skiff dependencies): the peer of `skiff train --task link` for the speed bar.

    python tools/bench/pyg_link_peer.py DATASET_DIR --num-neighbors 10,15 --epochs 1 --threads 2

The encoder is tools/bench/pyg_loader_peer.py's (SAGEConv mean, root weight; ReLU and dropout
between layers) with an output layer --out-dim wide (Skiff's --out-dim, default 64); the decoder
is the inner product and the loss binary cross-entropy with logits -- `skiff train --task link
--decoder dot --link-loss bce`. --num-neighbors is in PyG's convention, SEED HOP FIRST (Skiff's
--fanouts 15,10 is 10,15).

Batches. LinkNeighborLoader over the training pairs (link_train.edges), --batch-size positive
edges per batch, with PyG's binary negative sampling (neg_sampling_ratio = --neg-ratio, default 1:
one random (src, dst) pair per positive, GAE's recipe) -- PyG's usual way; Skiff instead shares
--negatives destinations across a batch. The message-passing graph is the dataset's (validation
and test edges already removed by `skiff convert --split-edges`); edge_index is [neighbour, v]
read from the CSR, as in pyg_loader_peer.py.

Output: one JSON line of setup, then per epoch

    {"epoch", "train_seconds", "edges_per_second", "loss", "batches"}

where edges_per_second = training positive edges / training-loop seconds (loader and compute),
Skiff's edges_per_second; then one machine-readable line

    pyg_link_peer edges_per_s=<median over epochs after the first, or the only epoch's>
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pyg_loader_peer import Sage, parse_num_neighbors  # noqa: E402
from skiff_dataset import SkiffDataset  # noqa: E402


def load_data(path):
    from torch_geometric.data import Data

    ds = SkiffDataset(path)
    offsets, neighbors = ds.csr()
    target = np.repeat(np.arange(ds.num_nodes, dtype=np.int64), np.diff(offsets))
    edge_index = torch.from_numpy(np.stack([neighbors.astype(np.int64, copy=False), target]))
    del offsets, neighbors, target
    x = torch.from_numpy(ds.features())
    data = Data(x=x, edge_index=edge_index, num_nodes=ds.num_nodes)
    train = torch.from_numpy(ds.edge_pairs("train").reshape(-1, 2).T.copy())
    return data, train, ds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset")
    ap.add_argument("--num-neighbors", default="10,15")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--out-dim", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--neg-ratio", type=float, default=1.0)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-batches", type=int, default=0, help="stop an epoch early (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    import torch_geometric
    from torch_geometric.loader import LinkNeighborLoader

    t0 = time.perf_counter()
    data, train, ds = load_data(a.dataset)
    fanouts = parse_num_neighbors(a.num_neighbors)
    loader = LinkNeighborLoader(data, num_neighbors=fanouts, edge_label_index=train,
                                neg_sampling="binary", neg_sampling_ratio=a.neg_ratio,
                                batch_size=a.batch_size, shuffle=True, is_sorted=True)
    model = Sage([ds.feature_dim] + [a.hidden] * (len(fanouts) - 1) + [a.out_dim], a.dropout, 0.0)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    print(json.dumps({"setup": True, "nodes": ds.num_nodes, "edges": ds.num_edges,
                      "train_edges": int(train.shape[1]), "load_seconds": time.perf_counter() - t0,
                      "torch": torch.__version__, "torch_geometric": torch_geometric.__version__}),
          flush=True)
    rates = []
    for epoch in range(a.epochs):
        model.train()
        start = time.perf_counter()
        loss_sum = 0.0
        batches = positives = 0
        for batch in loader:
            opt.zero_grad()
            h = model(batch.x, batch.edge_index)
            src, dst = batch.edge_label_index
            scores = (h[src] * h[dst]).sum(-1)
            loss = F.binary_cross_entropy_with_logits(scores, batch.edge_label)
            loss.backward()
            opt.step()
            loss_sum += float(loss)
            batches += 1
            positives += int((batch.edge_label == 1).sum())
            if a.max_batches and batches >= a.max_batches:
                break
        seconds = time.perf_counter() - start
        rates.append(positives / seconds)
        print(json.dumps({"epoch": epoch, "train_seconds": seconds, "edges_per_second": rates[-1],
                          "loss": loss_sum / max(batches, 1), "batches": batches,
                          "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                          * 1024}), flush=True)
    rate = statistics.median(rates[1:]) if len(rates) > 1 else rates[0]
    print(f"pyg_link_peer edges_per_s={rate:.1f}")


if __name__ == "__main__":
    main()
