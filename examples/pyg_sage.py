#!/usr/bin/env python3
"""GraphSAGE from torch_geometric.nn, trained from skiff.NodeLoader -- in memory or out of core.

    python examples/pyg_sage.py data/built-in/small             # everything resident
    skiff generate --preset 1m --out g1m && skiff partition g1m -k 64
    python examples/pyg_sage.py g1m --memory 141MiB             # out of core (a quarter of g1m)
    python examples/pyg_sage.py g1m --device cuda               # the model on a GPU

A budget smaller than what one batch, the model's share (--model-memory) and the buffer pool's
scratch need together is refused with the least that works.

The batches are PyG's: x, edge_index (source -> target), y and batch_size (the seeds first).
--num-neighbors follows PyG (seed hop first): 10,15 is `skiff train --fanouts 15,10`.
"""

import argparse
import time

import torch
import torch.nn.functional as F
from torch_geometric.nn import SAGEConv

import skiff


class Sage(torch.nn.Module):
    def __init__(self, in_dim, hidden, out_dim, layers, dropout):
        super().__init__()
        dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
        self.convs = torch.nn.ModuleList(SAGEConv(a, b) for a, b in zip(dims, dims[1:]))
        self.dropout = dropout

    def forward(self, x, edge_index):
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i + 1 < len(self.convs):
                x = F.dropout(F.relu(x), p=self.dropout, training=self.training)
        return x


def evaluate(model, loader, device):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in loader:
            x = batch.x.to(device, non_blocking=True)
            out = model(x, batch.edge_index.to(device))[:batch.batch_size]
            correct += int((out.argmax(-1).cpu() == batch.y[:batch.batch_size]).sum())
            total += batch.batch_size
    return correct / max(total, 1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("dataset")
    p.add_argument("--memory", default=None, help="budget, e.g. 256MiB (default: all resident)")
    p.add_argument("--num-neighbors", default="10,15", help="per layer, seed hop first")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model-memory", default=None, help="the budget's share for the model")
    p.add_argument("--device", default="cpu")
    args = p.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    ds = skiff.open(args.dataset)
    fanouts = [int(n) for n in args.num_neighbors.split(",")]
    device = torch.device(args.device)
    model = Sage(ds.feature_dim, args.hidden, ds.num_classes, len(fanouts), args.dropout).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    common = dict(num_neighbors=fanouts, memory=args.memory, threads=args.threads, seed=args.seed,
                  model_memory=args.model_memory)
    train = skiff.NodeLoader(ds, batch_size=args.batch_size, **common)
    print(ds)
    print(train)
    for epoch in range(args.epochs):
        model.train()
        start, seeds, total_loss = time.perf_counter(), 0, 0.0
        for batch in train:
            x = batch.x.to(device, non_blocking=True)
            y = batch.y[:batch.batch_size].to(device, non_blocking=True)
            opt.zero_grad()
            out = model(x, batch.edge_index.to(device, non_blocking=True))[:batch.batch_size]
            loss = F.cross_entropy(out, y)
            loss.backward()
            opt.step()
            total_loss += loss.item() * batch.batch_size
            seeds += batch.batch_size
        seconds = time.perf_counter() - start
        print(f"epoch {epoch}: loss {total_loss / seeds:.4f}, {seconds:.2f}s, "
              f"{seeds / seconds:,.0f} samples/s")
        print(train.report()["text"], end="")
    valid = skiff.NodeLoader(ds, batch_size=4096, input_nodes="valid", shuffle=False, **common)
    test = skiff.NodeLoader(ds, batch_size=4096, input_nodes="test", shuffle=False, **common)
    print(f"valid accuracy {evaluate(model, valid, device):.4f}, "
          f"test accuracy {evaluate(model, test, device):.4f}")


if __name__ == "__main__":
    main()
