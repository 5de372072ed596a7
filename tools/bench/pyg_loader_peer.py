"""GraphSAGE mini-batch training on the CPU with PyTorch Geometric's own NeighborLoader, on a Skiff
dataset (benchmark only; torch, torch_geometric and torch-sparse come from PyPI and are never Skiff
dependencies).

Where tools/bench/pyg_peer.py replaces PyG's sampler with a plain-torch one that follows Skiff's
semantics, this peer is PyG as a PyG user writes it: torch_geometric.loader.NeighborLoader over the
training nodes, a 2-layer torch_geometric.nn.SAGEConv model run over each sampled subgraph, Adam.
NeighborLoader needs a sampling backend, pyg-lib or torch-sparse; pyg-lib is not on PyPI, so the
benchmark venv builds torch-sparse (and torch-scatter, which it imports) from PyPI's sources.

    python tools/bench/pyg_loader_peer.py DATASET_DIR --num-neighbors 10,15 --epochs 1 --threads 2

Fanouts. --num-neighbors is in PyG's convention: SEED HOP FIRST. num_neighbors=[10, 15] draws 10
neighbours of each seed, then 15 neighbours of each of those 1-hop nodes. Skiff's --fanouts (and
DGL's NeighborSampler) list the INPUT LAYER first, so Skiff's "15,10" is PyG's "10,15": the
default here, 10,15, is the same sampling as `skiff train --fanouts 15,10`. The number of entries
is the number of SAGEConv layers (default 2).

Data. The Skiff CSR row of node v lists the neighbours the sampler draws for v, i.e. the nodes that
send messages to v; edge_index is therefore [neighbour, v] (PyG's source -> target), the same
reading as tools/bench/dgl_sage_speed.py. Built from the CSR, edge_index is already sorted by
target, so NeighborLoader is told is_sorted=True and skips its CSC sort. x is float32 (float16
features are widened by skiff_dataset.py), y is int64 with -1 for unlabelled nodes (ignored by the
loss and by accuracy), and the splits are Data.train_mask / val_mask / test_mask.

Model: SAGEConv(aggr='mean', PyG's defaults: root weight, bias, PyG's initialisation) per layer,
ReLU and dropout (--dropout, default 0.5) between layers; --input-dropout (default 0) adds dropout
on the input features, which Skiff's model and dgl_sage_speed.py apply (give --input-dropout 0.5 to
match them). As in PyG's examples, each layer runs over the whole sampled subgraph and the seeds'
logits are the first batch_size rows (no per-hop trimming: the torch-sparse backend does not report
per-hop counts), so the last layer computes rows that are then dropped. Adam(lr=--lr, default
0.003), cross-entropy averaged over the labelled seeds of each batch.

Output: one JSON line of setup (sizes, versions, load seconds), then per epoch one JSON line

    {"epoch", "train_seconds", "samples_per_second", "loss", "train_acc", "batches", ...}

where samples_per_second = training seeds / training-loop seconds (Skiff's samples_per_second;
the loop includes NeighborLoader's sampling and feature gathering as well as forward, backward and
Adam). After the last epoch: validation and test accuracy with NeighborLoader over the valid and
test nodes, the same --num-neighbors, batch --eval-batch-size (default 4096), and the peak RSS of
the process (getrusage ru_maxrss), then one machine-readable line

    pyg_loader_peer samples_per_s=<median over epochs after the first> valid_acc=.. test_acc=..

(with a single epoch, samples_per_s is that epoch's).
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
from skiff_dataset import SkiffDataset  # noqa: E402


class Sage(torch.nn.Module):
    def __init__(self, dims, dropout, input_dropout):
        super().__init__()
        from torch_geometric.nn import SAGEConv

        self.dropout = dropout
        self.input_dropout = input_dropout
        self.convs = torch.nn.ModuleList(
            [SAGEConv(dims[i], dims[i + 1], aggr="mean") for i in range(len(dims) - 1)])

    def forward(self, x, edge_index):
        x = F.dropout(x, self.input_dropout, self.training)
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i + 1 < len(self.convs):
                x = F.relu(x)
                x = F.dropout(x, self.dropout, self.training)
        return x


def parse_num_neighbors(text):
    values = [int(v) for v in text.split(",")]
    if not values or any(v < -1 for v in values):
        raise SystemExit(f"--num-neighbors {text!r}: each entry must be >= 0 or -1 (all)")
    return values


def load_data(path):
    """A Skiff dataset as a torch_geometric.data.Data on the CPU, plus the dataset object."""
    from torch_geometric.data import Data

    ds = SkiffDataset(path)
    offsets, neighbors = ds.csr()
    target = np.repeat(np.arange(ds.num_nodes, dtype=np.int64), np.diff(offsets))
    edge_index = torch.from_numpy(np.stack([neighbors.astype(np.int64, copy=False), target]))
    del offsets, neighbors, target
    x = torch.from_numpy(ds.features())
    y = torch.from_numpy(ds.labels().astype(np.int64))
    masks = {}
    for name, attr in (("train", "train_mask"), ("valid", "val_mask"), ("test", "test_mask")):
        mask = torch.zeros(ds.num_nodes, dtype=torch.bool)
        mask[torch.from_numpy(ds.split(name))] = True
        masks[attr] = mask
    data = Data(x=x, y=y, edge_index=edge_index, num_nodes=ds.num_nodes, **masks)
    return data, ds


def make_loader(data, num_neighbors, mask, batch_size, shuffle, workers):
    from torch_geometric.loader import NeighborLoader

    return NeighborLoader(data, num_neighbors=num_neighbors, input_nodes=mask,
                          batch_size=batch_size, shuffle=shuffle, num_workers=workers,
                          persistent_workers=workers > 0, is_sorted=True)


def evaluate(model, loader):
    """Accuracy over the labelled seeds the loader visits."""
    model.eval()
    correct = labelled = 0
    with torch.no_grad():
        for batch in loader:
            logits = model(batch.x, batch.edge_index)[:batch.batch_size]
            target = batch.y[:batch.batch_size]
            mask = target >= 0
            correct += int((logits.argmax(1) == target)[mask].sum())
            labelled += int(mask.sum())
    return correct / max(labelled, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", help="Skiff dataset directory")
    ap.add_argument("--num-neighbors", default="10,15",
                    help="PyG convention, SEED HOP FIRST (Skiff's --fanouts 15,10 is 10,15); "
                         "-1 = all neighbours; one entry per layer (default 10,15)")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--dropout", type=float, default=0.5, help="between layers")
    ap.add_argument("--input-dropout", type=float, default=0.0,
                    help="on the input features (Skiff's model: same as --dropout)")
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--eval-batch-size", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    ap.add_argument("--num-workers", type=int, default=0, help="NeighborLoader worker processes")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    import torch_geometric
    import torch_geometric.typing as pyg_typing

    if not (pyg_typing.WITH_PYG_LIB or pyg_typing.WITH_TORCH_SPARSE):
        raise SystemExit("NeighborLoader needs pyg-lib or torch-sparse; neither imports here")
    num_neighbors = parse_num_neighbors(a.num_neighbors)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    t0 = time.time()
    data, ds = load_data(a.dataset)
    load_seconds = time.time() - t0
    counts = {k: int(getattr(data, m).sum())
              for k, m in (("train", "train_mask"), ("valid", "val_mask"), ("test", "test_mask"))}
    backend = "pyg-lib" if pyg_typing.WITH_PYG_LIB else "torch-sparse"
    print(json.dumps({
        "dataset": a.dataset, "nodes": ds.num_nodes, "edges": ds.num_edges,
        "feature_dim": ds.feature_dim, "classes": ds.num_classes, **counts,
        "torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
        "sampler_backend": backend, "threads": a.threads, "num_workers": a.num_workers,
        "num_neighbors": num_neighbors, "batch_size": a.batch_size,
        "load_seconds": round(load_seconds, 2),
    }), flush=True)

    dims = [ds.feature_dim] + [a.hidden] * (len(num_neighbors) - 1) + [ds.num_classes]
    model = Sage(dims, a.dropout, a.input_dropout)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    train_loader = make_loader(data, num_neighbors, data.train_mask, a.batch_size, True,
                               a.num_workers)

    rows = []
    for epoch in range(a.epochs):
        model.train()
        loss_sum = 0.0
        correct = labelled = batches = sampled_nodes = 0
        start = time.time()
        for batch in train_loader:
            logits = model(batch.x, batch.edge_index)[:batch.batch_size]
            target = batch.y[:batch.batch_size]
            mask = target >= 0
            n = int(mask.sum())
            batch_loss = F.cross_entropy(logits, target, ignore_index=-1, reduction="sum")
            loss = batch_loss / max(n, 1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += float(batch_loss)
            correct += int((logits.detach().argmax(1) == target)[mask].sum())
            labelled += n
            batches += 1
            sampled_nodes += batch.num_nodes
        train_seconds = time.time() - start
        row = {
            "epoch": epoch, "train_seconds": round(train_seconds, 3),
            "samples_per_second": round(counts["train"] / train_seconds, 1),
            "loss": round(loss_sum / max(labelled, 1), 5),
            "train_acc": round(correct / max(labelled, 1), 5), "batches": batches,
            "sampled_nodes_per_batch": round(sampled_nodes / max(batches, 1), 1),
        }
        print(json.dumps(row), flush=True)
        rows.append(row)

    e0 = time.time()
    valid_acc = evaluate(model, make_loader(data, num_neighbors, data.val_mask,
                                            a.eval_batch_size, False, a.num_workers))
    test_acc = evaluate(model, make_loader(data, num_neighbors, data.test_mask,
                                           a.eval_batch_size, False, a.num_workers))
    peak_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"valid_acc": round(valid_acc, 5), "test_acc": round(test_acc, 5),
                      "eval_seconds": round(time.time() - e0, 3),
                      "peak_rss_mib": round(peak_rss_kib / 1024, 1)}), flush=True)
    speeds = [r["samples_per_second"] for r in (rows[1:] if len(rows) > 1 else rows)]
    print(f"pyg_loader_peer samples_per_s={statistics.median(speeds) if speeds else 0:.1f} "
          f"valid_acc={valid_acc:.5f} test_acc={test_acc:.5f} "
          f"peak_rss_mib={peak_rss_kib / 1024:.1f} epochs={len(rows)} threads={a.threads} "
          f"num_workers={a.num_workers} backend={backend}", flush=True)


if __name__ == "__main__":
    main()
