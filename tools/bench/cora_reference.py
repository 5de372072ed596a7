"""Reference GCN / GraphSAGE / GAT on a Skiff dataset in DGL + PyTorch, full batch, for comparing
Skiff's accuracy on *identical* splits (benchmark only; needs dgl and torch from PyPI).

    python tools/bench/cora_reference.py DATASET_DIR --model gcn --seed 0 [--hidden 16 ...]

Prints "test accuracy X%" at the epoch of best validation accuracy (ties: lower validation loss),
the selection rule `skiff train` uses.
"""

import argparse
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from skiff_dataset import SkiffDataset  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset")
    ap.add_argument("--model", default="gcn", choices=["gcn", "sage", "gat"])
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--decay-first-layer-only", action="store_true")
    ap.add_argument("--feature-norm", default="row", choices=["none", "row"])
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()

    import dgl
    import dgl.nn as dglnn

    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    torch.set_num_threads(a.threads)
    ds = SkiffDataset(a.dataset)
    offsets, neighbors = ds.csr()
    dst = np.repeat(np.arange(ds.num_nodes), np.diff(offsets))
    # Row v holds v's neighbours; messages flow neighbour -> v.
    g = dgl.graph((torch.from_numpy(neighbors.astype(np.int64)), torch.from_numpy(dst)),
                  num_nodes=ds.num_nodes)
    x = torch.from_numpy(ds.features())
    if a.feature_norm == "row":
        x = x / x.sum(1, keepdim=True).clamp(min=1e-12)
    y = torch.from_numpy(ds.labels().astype(np.int64))
    train, valid, test = (torch.from_numpy(ds.split(s)) for s in ("train", "valid", "test"))

    c = ds.num_classes
    if a.model == "gcn":
        g = dgl.add_self_loop(g)
        layers = torch.nn.ModuleList([dglnn.GraphConv(x.shape[1], a.hidden),
                                      dglnn.GraphConv(a.hidden, c)])
    elif a.model == "sage":
        layers = torch.nn.ModuleList([dglnn.SAGEConv(x.shape[1], a.hidden, "mean"),
                                      dglnn.SAGEConv(a.hidden, c, "mean")])
    else:
        g = dgl.add_self_loop(g)
        layers = torch.nn.ModuleList([
            dglnn.GATConv(x.shape[1], a.hidden, a.heads, feat_drop=a.dropout,
                          attn_drop=a.dropout, activation=F.elu),
            dglnn.GATConv(a.hidden * a.heads, c, 1, feat_drop=a.dropout, attn_drop=a.dropout)])

    def forward(training):
        h = x
        for i, layer in enumerate(layers):
            if a.model != "gat":
                h = F.dropout(h, a.dropout, training)
            h = layer(g, h)
            if a.model == "gat":
                h = h.flatten(1) if i + 1 < len(layers) else h.mean(1)
            elif i + 1 < len(layers):
                h = F.relu(h)
        return h

    if a.decay_first_layer_only:
        groups = [{"params": layers[0].parameters(), "weight_decay": a.weight_decay},
                  {"params": layers[1].parameters(), "weight_decay": 0.0}]
    else:
        groups = [{"params": layers.parameters(), "weight_decay": a.weight_decay}]
    opt = torch.optim.Adam(groups, lr=a.lr)
    best = (-1.0, float("inf"), 0.0)
    for _ in range(a.epochs):
        layers.train()
        opt.zero_grad()
        loss = F.cross_entropy(forward(True)[train], y[train])
        loss.backward()
        opt.step()
        layers.eval()
        with torch.no_grad():
            logits = forward(False)
            pred = logits.argmax(1)
            va = (pred[valid] == y[valid]).float().mean().item()
            vl = F.cross_entropy(logits[valid], y[valid]).item()
            ta = (pred[test] == y[test]).float().mean().item()
        if va > best[0] or (va == best[0] and vl < best[1]):
            best = (va, vl, ta)
    print(f"valid accuracy {100 * best[0]:.2f}%  test accuracy {100 * best[2]:.2f}%")


if __name__ == "__main__":
    main()
