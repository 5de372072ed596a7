"""GraphSAGE mini-batch training in DGL + PyTorch on a Skiff dataset, with the same model, sampler
and optimiser settings as `skiff train --model sage`, for the CPU speed comparison in
BENCHMARKS.md (benchmark only; dgl and torch come from PyPI and are never Skiff dependencies).

    python tools/bench/dgl_sage_speed.py DATASET_DIR --fanouts 15,10,5 --hidden 256 \
        --batch-size 1024 --epochs 1 --threads 2 [--workers 0]

Per epoch it prints the training pass's seconds and samples/s (the same definition as Skiff's
`samples_per_second`: training nodes / training-pass seconds); after the last epoch, test accuracy
with the training fanouts (as `skiff train --eval-fanouts` set to the same list).
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from skiff_dataset import SkiffDataset  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--fanouts", default="15,10,5")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workers", type=int, default=0, help="DataLoader sampling processes")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    import dgl
    import dgl.nn as dglnn

    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    fanouts = [int(f) for f in a.fanouts.split(",")]
    t0 = time.time()
    ds = SkiffDataset(a.dataset)
    offsets, neighbors = ds.csr()
    dst = np.repeat(np.arange(ds.num_nodes, dtype=np.int64), np.diff(offsets))
    # Row v of the CSR holds v's neighbours, which the sampler draws for v: edges neighbour -> v,
    # so DGL's in-edge sampling picks from the same lists.
    g = dgl.graph((torch.from_numpy(neighbors.astype(np.int64)), torch.from_numpy(dst)),
                  num_nodes=ds.num_nodes)
    g = g.formats(["csc"])
    x = torch.from_numpy(ds.features())
    y = torch.from_numpy(ds.labels().astype(np.int64))
    train = torch.from_numpy(ds.split("train"))
    test = torch.from_numpy(ds.split("test"))
    print(f"loaded {ds.num_nodes} nodes, {ds.num_edges} edges, {len(train)} training nodes in "
          f"{time.time() - t0:.1f}s", flush=True)

    dims = [ds.feature_dim] + [a.hidden] * (len(fanouts) - 1) + [ds.num_classes]
    layers = torch.nn.ModuleList(
        [dglnn.SAGEConv(dims[i], dims[i + 1], "mean") for i in range(len(fanouts))])
    opt = torch.optim.Adam(layers.parameters(), lr=a.lr)
    sampler = dgl.dataloading.NeighborSampler(fanouts)

    def forward(blocks, h, training):
        for i, (layer, block) in enumerate(zip(layers, blocks)):
            h = F.dropout(h, a.dropout, training)
            h = layer(block, h)
            if i + 1 < len(layers):
                h = F.relu(h)
        return h

    results = []
    for epoch in range(a.epochs):
        loader = dgl.dataloading.DataLoader(g, train, sampler, batch_size=a.batch_size,
                                            shuffle=True, drop_last=False, num_workers=a.workers)
        layers.train()
        start = time.time()
        loss_sum, seen = 0.0, 0
        for input_nodes, seeds, blocks in loader:
            logits = forward(blocks, x[input_nodes], True)
            loss = F.cross_entropy(logits, y[seeds])
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_sum += loss.item() * len(seeds)
            seen += len(seeds)
        seconds = time.time() - start
        row = {"epoch": epoch, "train_seconds": seconds, "samples_per_second": seen / seconds,
               "loss": loss_sum / seen}
        print(json.dumps(row), flush=True)
        results.append(row)

    layers.eval()
    loader = dgl.dataloading.DataLoader(g, test, sampler, batch_size=a.batch_size,
                                        shuffle=False, num_workers=a.workers)
    correct = 0
    start = time.time()
    with torch.no_grad():
        for input_nodes, seeds, blocks in loader:
            correct += (forward(blocks, x[input_nodes], False).argmax(1) == y[seeds]).sum().item()
    print(json.dumps({"test_acc": correct / len(test), "eval_seconds": time.time() - start}),
          flush=True)


if __name__ == "__main__":
    main()
