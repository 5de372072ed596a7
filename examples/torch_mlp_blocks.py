#!/usr/bin/env python3
"""A plain-torch, layer-wise GraphSAGE (no PyG) on skiff.NodeLoader's per-layer blocks.

    python examples/torch_mlp_blocks.py data/built-in/small [--memory SIZE]

Each batch's `adjs` are the sampled blocks, input layer first: (edge_index, (num_src, num_dst)),
the destinations a prefix of the sources -- the message-flow graphs of DGL and of PyG's older
NeighborSampler. Mean aggregation is one index_add_ per layer.
"""

import argparse
import time

import torch
import torch.nn.functional as F

import skiff


class BlockSage(torch.nn.Module):
    def __init__(self, in_dim, hidden, out_dim, layers):
        super().__init__()
        dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
        self.self_lin = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.neigh_lin = torch.nn.ModuleList(
            torch.nn.Linear(a, b, bias=False) for a, b in zip(dims, dims[1:]))

    def forward(self, x, adjs):
        for i, (edge_index, (num_src, num_dst)) in enumerate(adjs):
            src, dst = edge_index
            total = torch.zeros(num_dst, x.shape[1], dtype=x.dtype).index_add_(0, dst, x[src])
            count = torch.bincount(dst, minlength=num_dst).clamp(min=1).unsqueeze(1)
            x = self.self_lin[i](x[:num_dst]) + self.neigh_lin[i](total / count)
            if i + 1 < len(adjs):
                x = F.relu(x)
        return x


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("dataset")
    p.add_argument("--memory", default=None)
    p.add_argument("--num-neighbors", default="5,10", help="per layer, seed hop first")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    ds = skiff.open(args.dataset)
    fanouts = [int(n) for n in args.num_neighbors.split(",")]
    model = BlockSage(ds.feature_dim, 128, ds.num_classes, len(fanouts))
    opt = torch.optim.Adam(model.parameters(), lr=0.005)
    loader = skiff.NodeLoader(ds, num_neighbors=fanouts, batch_size=512, memory=args.memory,
                              threads=args.threads)
    for epoch in range(args.epochs):
        start, correct, seen = time.perf_counter(), 0, 0
        for batch in loader:
            out = model(batch.x, batch.adjs)
            loss = F.cross_entropy(out, batch.y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            correct += int((out.argmax(-1) == batch.y).sum())
            seen += batch.batch_size
        print(f"epoch {epoch}: train accuracy {correct / seen:.4f}, "
              f"{time.perf_counter() - start:.2f}s")


if __name__ == "__main__":
    main()
