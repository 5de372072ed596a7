"""GraphSAGE in PyTorch Geometric with everything in GPU memory: the peer of `skiff train --device
cuda` (benchmark only; torch and torch_geometric are never Skiff dependencies).

What it measures. The graph (CSR), the features and the labels of a Skiff dataset are copied to the
device once; then every epoch -- sampling, feature gathering, forward, backward, Adam -- runs there.
Per epoch it prints one JSON line: the training pass's seconds and samples/s (training nodes /
training-pass seconds, Skiff's `samples_per_second`), the mean training loss and accuracy, the mean
number of input nodes per batch, and validation and test accuracy with the evaluation fanouts. At
the end: test accuracy at the best-validation epoch (Skiff's rule: highest validation accuracy,
ties to the lower validation loss) and at the last epoch, then one machine-readable line

    pyg_peer samples_per_s=<median over epochs after the first> test_acc=<at best valid> ...

(with a single epoch, samples_per_s is that epoch's). Timings are taken between
torch.cuda.synchronize() calls, so they include all queued GPU work. Loading and the host->device
copy are reported but not counted.

The model is Skiff's GraphSAGE (include/skiff/model/model.h): per layer
h_dst = x_dst W_self + mean_{s in N(d)} x_s W_neigh + b, i.e. torch_geometric.nn.SAGEConv with
aggr='mean' and root_weight=True on bipartite (x_src, x_dst) pairs, x_dst = x_src[:num_dst]
(destinations are a prefix of sources, as in Skiff's mini-batches); dropout on every layer's input
(the first layer's with --input-dropout, default --dropout), ReLU after hidden layers, no
normalisation; Glorot-uniform weights and zero biases as Skiff initialises them (not PyG's default
Kaiming init); fp32 GEMMs (TF32 off; --tf32 turns it on, as `skiff train --cuda-matmul tf32`). Adam
(betas 0.9/0.999, eps 1e-8, L2 weight decay added to the gradient, as Skiff's), cross-entropy
averaged over the labelled seeds.
Weight decay defaults to 0 here (Skiff's default is 5e-4: give `--weight-decay 0` to skiff).

The sampler is written in plain torch, because PyG's NeighborLoader needs pyg-lib or torch-sparse,
and it follows Skiff's semantics (src/sampler/neighbor_sampler.cpp):
  - Fanouts are per layer, input layer first (15,10,5: each seed gets 5 neighbours in the last
    block, each destination of the middle block 10, of the first block 15); -1 takes every
    neighbour; a fanout >= the degree takes the whole row. Picks are uniform without replacement.
  - Block l's destinations are all nodes of hops 0 .. L-1-l (seeds first), and its sources add the
    nodes first seen in hop L-l; local IDs are numbered by the hop where a node first appears, so
    destinations are a prefix of sources.
  - Each node is sampled once per batch, when first expanded: a uniformly random *ordered* sample
    of its row (random keys, sorted within each row on the device), cut at the largest fanout it
    needs; block l takes the first fanouts[l] of it, so a node's picks in a narrower block are a
    subset of those in a wider one (Skiff draws the same distribution with Floyd + Fisher-Yates).
  Differences: the random streams are torch's, not Skiff's xoshiro/BatchSeed ones, so the batches
  are equal in distribution, not bit for bit; new source nodes of a hop are numbered in ascending
  node-ID order rather than in order of first appearance (only a permutation within the hop);
  the shuffle of the training nodes is torch.randperm. Evaluation draws the same neighbours every
  epoch (a fixed seed per split), as Skiff's does.
  Cost: the sampler is a handful of torch ops per hop (a segmented sort of the frontier's rows,
  torch.unique for relabelling) with a few host synchronisations each, not a fused sampling
  kernel such as pyg-lib's; it runs in the training pass, serially with compute, and its time is
  part of samples/s.
Default evaluation fanouts: 100 per layer, the cap Skiff uses (train::kDefaultEvalFanoutCap), batch
4096 (Skiff's eval_batch_size).

Run (GPU machine; the dataset as made by `skiff generate --preset 1m --split 0.1,0.01,0.01 --out
g1m`, partitioned or not):

    python tools/bench/pyg_peer.py g1m --epochs 3
    # the Skiff run to compare with:
    skiff train g1m --device cuda --model sage --layers 3 --hidden 256 --fanouts 15,10,5 \
        --batch-size 1024 --lr 0.003 --dropout 0.5 --weight-decay 0 --epochs 3

`--device cpu` runs the same code on the CPU (a smoke test on a machine without a GPU).
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from skiff_dataset import SkiffDataset  # noqa: E402

# Skiff's evaluation defaults (include/skiff/train/trainer.h).
DEFAULT_EVAL_FANOUT_CAP = 100
DEFAULT_EVAL_BATCH_SIZE = 4096


# ---------------------------------------------------------------------------------------------
# Sampling (plain torch, on the data's device)


class DeviceGraph:
    """The CSR on the device, plus a global -> local ID scratch map (-1 = not in the batch)."""

    def __init__(self, offsets, neighbors, device):
        self.num_nodes = len(offsets) - 1
        self.indptr = torch.from_numpy(offsets.astype(np.int64, copy=False)).to(device)
        self.indices = torch.from_numpy(neighbors.astype(np.int64, copy=False)).to(device)
        self.degree = self.indptr[1:] - self.indptr[:-1]
        self.local_of = torch.full((self.num_nodes,), -1, dtype=torch.int64, device=device)
        self.device = device


class Block:
    """One layer's bipartite graph: edge_index[0] = source local ID, edge_index[1] = destination
    local ID; destinations are sources 0 .. num_dst-1."""

    def __init__(self, edge_index, num_src, num_dst):
        self.edge_index = edge_index
        self.num_src = num_src
        self.num_dst = num_dst


class NeighborSampler:
    """Multi-hop uniform neighbour sampling without replacement, Skiff's semantics (module doc)."""

    def __init__(self, graph, fanouts):
        self.graph = graph
        self.fanouts = list(fanouts)

    def _ordered_sample(self, frontier, cap, generator):
        """A uniformly random order of each frontier node's row, cut at `cap` picks (None: whole
        row). Returns (row, rank, neighbour) per kept pick: the rank-th pick of frontier[row]."""
        g = self.graph
        dev = g.device
        deg = g.degree[frontier]
        total = int(deg.sum())  # host sync: the size of everything below
        if total == 0:
            empty = torch.empty(0, dtype=torch.int64, device=dev)
            return empty, empty, empty
        row = torch.repeat_interleave(torch.arange(frontier.numel(), device=dev), deg,
                                      output_size=total)
        row_start = torch.cumsum(deg, 0) - deg
        rank = torch.arange(total, device=dev) - row_start[row]  # position within the row
        edge = g.indptr[frontier][row] + rank
        # Sort by (row, random key): rows keep their ranges, and within each row the edges land in
        # a uniformly random order, so position `rank` now holds the row's rank-th random pick.
        # float64: 2^20 rows still leave ~32 bits of key, so ties are negligible.
        key = row.to(torch.float64) + torch.rand(total, generator=generator, device=dev,
                                                 dtype=torch.float64)
        edge = edge[torch.argsort(key)]
        if cap is not None:
            keep = rank < cap
            row, rank, edge = row[keep], rank[keep], edge[keep]
        return row, rank, g.indices[edge]

    def sample(self, seeds, generator):
        """seeds: distinct node IDs on the device. Returns (input_nodes, blocks): input_nodes are
        the global IDs of block 0's sources (seeds first), blocks are input layer first."""
        g = self.graph
        dev = g.device
        num_layers = len(self.fanouts)
        nodes = seeds
        g.local_of[seeds] = torch.arange(seeds.numel(), device=dev)
        hop_begin = [0, seeds.numel()]
        picks = []  # per expanded hop: (destination local ID, rank, neighbour global ID)
        blocks = [None] * num_layers
        try:
            for hop in range(num_layers):
                b = num_layers - 1 - hop  # this hop builds the sources of block b
                fanout = self.fanouts[b]
                # Nodes first expanded now are destinations of blocks 0 .. b: draw as many picks
                # as the widest of those needs (-1: the whole row).
                needed = self.fanouts[:b + 1]
                cap = None if min(needed) < 0 else max(needed)
                begin, end = hop_begin[hop], hop_begin[hop + 1]
                row, rank, nbr = self._ordered_sample(nodes[begin:end], cap, generator)
                picks.append((row + begin, rank, nbr))
                dst = torch.cat([p[0] for p in picks])
                rank = torch.cat([p[1] for p in picks])
                nbr = torch.cat([p[2] for p in picks])
                if fanout >= 0:
                    keep = rank < fanout
                    dst, nbr = dst[keep], nbr[keep]
                # Relabel: neighbours already in the batch keep their local IDs; new ones are
                # appended after every node so far, so this block's destinations stay a prefix.
                src = g.local_of[nbr]
                new = torch.unique(nbr[src < 0])
                g.local_of[new] = torch.arange(nodes.numel(), nodes.numel() + new.numel(),
                                               device=dev)
                nodes = torch.cat([nodes, new])
                src = g.local_of[nbr]
                blocks[b] = Block(torch.stack([src, dst]), nodes.numel(), end)
                hop_begin.append(nodes.numel())
        finally:
            g.local_of[nodes] = -1  # leave the scratch map empty for the next batch
        return nodes, blocks


# ---------------------------------------------------------------------------------------------
# Model


class Sage(torch.nn.Module):
    def __init__(self, dims, dropout, input_dropout):
        super().__init__()
        from torch_geometric.nn import SAGEConv

        self.dropout = dropout
        self.input_dropout = input_dropout
        self.convs = torch.nn.ModuleList([
            SAGEConv(dims[i], dims[i + 1], aggr="mean", root_weight=True, bias=True)
            for i in range(len(dims) - 1)
        ])
        # Skiff's initialisation: Glorot-uniform W_self and W_neigh, zero bias. In PyG's SAGEConv,
        # lin_l is the neighbour transform (with the bias) and lin_r the root transform.
        for conv in self.convs:
            torch.nn.init.xavier_uniform_(conv.lin_l.weight)
            torch.nn.init.xavier_uniform_(conv.lin_r.weight)
            torch.nn.init.zeros_(conv.lin_l.bias)

    def forward(self, x, blocks):
        h = x
        for i, (conv, block) in enumerate(zip(self.convs, blocks)):
            h = F.dropout(h, self.input_dropout if i == 0 else self.dropout, self.training)
            h = conv((h, h[:block.num_dst]), block.edge_index, size=(block.num_src, block.num_dst))
            if i + 1 < len(self.convs):
                h = F.relu(h)
        return h


# ---------------------------------------------------------------------------------------------
# Training and evaluation


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def make_generator(device, seed):
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen


def evaluate(model, sampler, x, y, nodes, batch_size, seed):
    """(accuracy, mean loss) over the labelled nodes of `nodes`; the same neighbours every call."""
    model.eval()
    gen = make_generator(x.device, seed)
    correct = torch.zeros((), dtype=torch.int64, device=x.device)
    loss_sum = torch.zeros((), dtype=torch.float64, device=x.device)
    labelled = torch.zeros((), dtype=torch.int64, device=x.device)
    with torch.no_grad():
        for start in range(0, nodes.numel(), batch_size):
            seeds = nodes[start:start + batch_size]
            input_nodes, blocks = sampler.sample(seeds, gen)
            logits = model(x[input_nodes], blocks)
            target = y[seeds]
            mask = target >= 0
            correct += (logits.argmax(1) == target)[mask].sum()
            loss_sum += F.cross_entropy(logits, target, ignore_index=-1, reduction="sum").double()
            labelled += mask.sum()
    n = max(int(labelled), 1)
    return int(correct) / n, float(loss_sum) / n


def parse_fanouts(text):
    fanouts = [int(f) for f in text.split(",")]
    if not fanouts or any(f < -1 for f in fanouts):
        raise SystemExit(f"fanouts {text!r}: each must be >= 0 or -1")
    return fanouts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", help="Skiff dataset directory")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu (smoke test)")
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--fanouts", default="15,10,5", help="per layer, input layer first; -1 = all")
    ap.add_argument("--eval-fanouts", default=None,
                    help=f"default: {DEFAULT_EVAL_FANOUT_CAP} per layer (Skiff's cap)")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=1024)
    ap.add_argument("--eval-batch-size", type=int, default=DEFAULT_EVAL_BATCH_SIZE)
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--weight-decay", type=float, default=0.0, help="L2, as Skiff's Adam")
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--input-dropout", type=float, default=-1.0,
                    help="dropout on the first layer's input; < 0: --dropout")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tf32", action="store_true",
                    help="TF32 tensor-core matrix products (skiff --cuda-matmul tf32); default fp32")
    a = ap.parse_args()

    fanouts = parse_fanouts(a.fanouts)
    if len(fanouts) != a.layers:
        raise SystemExit(f"--fanouts has {len(fanouts)} entries for --layers {a.layers}")
    eval_fanouts = (parse_fanouts(a.eval_fanouts) if a.eval_fanouts
                    else [DEFAULT_EVAL_FANOUT_CAP] * a.layers)
    if len(eval_fanouts) != a.layers:
        raise SystemExit(f"--eval-fanouts has {len(eval_fanouts)} entries for --layers {a.layers}")
    device = torch.device(a.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: use --device cpu for a smoke test")
    # Matrix products as `skiff train --cuda-matmul`: exact fp32 unless --tf32.
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.manual_seed(a.seed)  # parameters and dropout

    import torch_geometric

    t0 = time.time()
    ds = SkiffDataset(a.dataset)
    offsets, neighbors = ds.csr()
    features = ds.features()
    labels = ds.labels().astype(np.int64)
    splits = {name: ds.split(name) for name in ("train", "valid", "test")}
    load_seconds = time.time() - t0
    t0 = time.time()
    graph = DeviceGraph(offsets, neighbors, device)
    x = torch.from_numpy(features).to(device)
    y = torch.from_numpy(labels).to(device)
    train, valid, test = (torch.from_numpy(splits[s]).to(device)
                          for s in ("train", "valid", "test"))
    del offsets, neighbors, features
    sync(device)
    copy_seconds = time.time() - t0
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(json.dumps({
        "dataset": a.dataset, "nodes": ds.num_nodes, "edges": ds.num_edges,
        "feature_dim": ds.feature_dim, "classes": ds.num_classes, "train": train.numel(),
        "valid": valid.numel(), "test": test.numel(), "device": device_name,
        "torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
        "load_seconds": round(load_seconds, 2), "to_device_seconds": round(copy_seconds, 2),
        "fanouts": fanouts, "eval_fanouts": eval_fanouts,
    }), flush=True)

    dims = [ds.feature_dim] + [a.hidden] * (a.layers - 1) + [ds.num_classes]
    model = Sage(dims, a.dropout, a.input_dropout if a.input_dropout >= 0 else a.dropout).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    train_sampler = NeighborSampler(graph, fanouts)
    eval_sampler = NeighborSampler(graph, eval_fanouts)
    train_gen = make_generator(device, a.seed)

    rows = []
    for epoch in range(a.epochs):
        model.train()
        loss_sum = torch.zeros((), dtype=torch.float64, device=device)
        correct = torch.zeros((), dtype=torch.int64, device=device)
        labelled = torch.zeros((), dtype=torch.int64, device=device)
        input_nodes_total, batches = 0, 0
        sync(device)
        start = time.time()
        order = train[torch.randperm(train.numel(), generator=train_gen, device=device)]
        for begin in range(0, order.numel(), a.batch_size):
            seeds = order[begin:begin + a.batch_size]
            input_nodes, blocks = train_sampler.sample(seeds, train_gen)
            logits = model(x[input_nodes], blocks)
            target = y[seeds]
            mask = target >= 0
            n = mask.sum()
            # Mean over the labelled seeds (Skiff's loss; 0, not NaN, for a batch without any).
            loss_sum_batch = F.cross_entropy(logits, target, ignore_index=-1, reduction="sum")
            loss = loss_sum_batch / n.clamp(min=1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss_sum_batch.detach().double()
            correct += (logits.detach().argmax(1) == target)[mask].sum()
            labelled += n
            input_nodes_total += input_nodes.numel()
            batches += 1
        sync(device)
        train_seconds = time.time() - start
        e0 = time.time()
        valid_acc, valid_loss = (evaluate(model, eval_sampler, x, y, valid, a.eval_batch_size,
                                          a.seed + 1) if valid.numel() else (0.0, 0.0))
        test_acc, _ = (evaluate(model, eval_sampler, x, y, test, a.eval_batch_size, a.seed + 2)
                       if test.numel() else (0.0, 0.0))
        sync(device)
        n = max(int(labelled), 1)
        row = {
            "epoch": epoch, "train_seconds": round(train_seconds, 3),
            "samples_per_second": round(train.numel() / train_seconds, 1),
            "loss": round(float(loss_sum) / n, 5), "train_acc": round(int(correct) / n, 5),
            "input_nodes_per_batch": round(input_nodes_total / max(batches, 1), 1),
            "valid_acc": round(valid_acc, 5), "valid_loss": round(valid_loss, 5),
            "test_acc": round(test_acc, 5), "eval_seconds": round(time.time() - e0, 3),
        }
        print(json.dumps(row), flush=True)
        rows.append(row)

    if not rows:
        return
    # Best epoch as Skiff picks it: highest validation accuracy, ties to the lower loss.
    best = max(rows, key=lambda r: (r["valid_acc"], -r["valid_loss"]))
    last = rows[-1]
    speeds = [r["samples_per_second"] for r in (rows[1:] if len(rows) > 1 else rows)]
    if device.type == "cuda":
        print(json.dumps({"peak_gpu_memory_gib":
                          round(torch.cuda.max_memory_allocated(device) / 2**30, 2)}))
    print(f"test accuracy at the best-valid epoch ({best['epoch']}): "
          f"{100 * best['test_acc']:.2f}%; at the last epoch ({last['epoch']}): "
          f"{100 * last['test_acc']:.2f}%")
    print(f"pyg_peer samples_per_s={statistics.median(speeds):.1f} test_acc={best['test_acc']:.5f} "
          f"test_acc_last={last['test_acc']:.5f} best_epoch={best['epoch']} epochs={len(rows)} "
          f"device={device.type}", flush=True)


if __name__ == "__main__":
    main()
