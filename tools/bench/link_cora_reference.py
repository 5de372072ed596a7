#!/usr/bin/env python3
"""Reference recipes for the Cora link-prediction bar (BENCHMARKS.md, "Link prediction"), in plain
PyTorch + PyG's GCNConv: what GAE's own loss and PyG's GAE example reach on the bar's protocol, and
Skiff's sampled method re-implemented, so the recipes can be compared on one footing.

    python tools/bench/link_cora_reference.py MODE EPOCHS NORM REPORT [SEEDS] [--cora PATH]

Protocol (as tools/bench/link_cora_bar.sh): Cora's undirected edges split 85 / 5 / 10 per seed
(NumPy's generator, so the splits are not Skiff's), valid and test edges removed from the graph,
as many uniform non-edges for valid and test; a 2-layer GCN 32-16 (ReLU between), inner product,
Adam lr 0.01; test AUC and AP averaged over SEEDS (default 10) seeds.

MODE, how a training epoch's loss is made (one full-graph step per epoch):
  full       Kipf & Welling 2016: weighted BCE over the whole adjacency with self-loops as positives
             (pos_weight = (N^2 - E) / E, norm = N^2 / (2 (N^2 - E)))
  fullns     the same without the self-loops
  batchfullK `full` over the training edges' ends and K uniform nodes drawn each epoch (the
             batch of Skiff's --link-loss gae with every training edge and --negatives K)
  pyg        PyG's GAE.recon_loss: one uniform random pair per positive
  dstK       Skiff's: K destinations shared by every positive's (randomly oriented) source
  dstindK    K independent uniform destinations per positive (PyG's triplet sampling)
  randK      K shared sources x K shared destinations, every pair among them
  bothK      dstK plus K shared sources against every positive's destination
  self...    any sampled MODE above with every node paired with itself added to the positives
             (what the self-loops of Kipf's `full` add to `fullns`), e.g. selfdst1024
NORM: none (binary features as given) or row (rows scaled to sum 1). REPORT: last (the last
epoch's test figures) or best (the test figures of the epoch with the best validation AUC).
Needs torch, torch_geometric, numpy, scipy and scikit-learn.
"""
import argparse

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.metrics import average_precision_score, roc_auc_score
from torch_geometric.nn import GCNConv
from torch_geometric.utils import negative_sampling, to_undirected


def load_cora(path):
    z = np.load(path)
    adj = sp.csr_matrix((z["adj_data"], z["adj_indices"], z["adj_indptr"]),
                        shape=tuple(z["adj_shape"]))
    x = sp.csr_matrix((z["attr_data"], z["attr_indices"], z["attr_indptr"]),
                      shape=tuple(z["attr_shape"])).toarray()
    adj = ((adj + adj.T) > 0).astype(np.float32)
    adj.setdiag(0)
    adj.eliminate_zeros()
    u, v = sp.triu(adj, 1).nonzero()
    return torch.tensor(x), u, v


def negatives(mode, z, src, dst, mp, n):
    """The negative scores of one epoch (MODE's sampled recipes)."""
    if mode == "pyg":
        ne = negative_sampling(mp, n, src.shape[0])
        return (z[ne[0]] * z[ne[1]]).sum(1)
    for prefix in ("dstind", "dst", "rand", "both"):
        if mode.startswith(prefix):
            k = int(mode[len(prefix):] or 1)
            break
    else:
        raise SystemExit(f"unknown mode {mode}")
    if prefix == "dstind":
        nd = torch.randint(0, n, (src.shape[0], k))
        return (z[src].unsqueeze(1) * z[nd]).sum(-1).flatten()
    nd = torch.randint(0, n, (k,))
    if prefix == "dst":
        return (z[src] @ z[nd].T).flatten()
    ns = torch.randint(0, n, (k,))
    if prefix == "rand":
        return (z[ns] @ z[nd].T).flatten()
    return torch.cat([(z[src] @ z[nd].T).flatten(), (z[ns] @ z[dst].T).flatten()])


def run(seed, x, u, v, args):
    n = x.shape[0]
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    perm = rng.permutation(len(u))
    nv, nt = int(0.05 * len(u)), int(0.10 * len(u))
    te, va, tr = perm[:nt], perm[nt:nt + nv], perm[nt + nv:]
    edges = lambda idx: torch.tensor(np.stack([u[idx], v[idx]]), dtype=torch.long)
    tr_e, va_e, te_e = edges(tr), edges(va), edges(te)
    everything = to_undirected(torch.tensor(np.stack([u, v]), dtype=torch.long))
    va_n, te_n = negative_sampling(everything, n, nv), negative_sampling(everything, n, nt)
    mp = to_undirected(tr_e)
    c1, c2 = GCNConv(x.shape[1], 32), GCNConv(32, 16)
    opt = torch.optim.Adam(list(c1.parameters()) + list(c2.parameters()), lr=0.01)
    encode = lambda: c2(c1(x, mp).relu(), mp)

    def evaluate(pos, neg):
        z = encode()
        s = torch.cat([(z[pos[0]] * z[pos[1]]).sum(1), (z[neg[0]] * z[neg[1]]).sum(1)])
        y = np.r_[np.ones(pos.shape[1]), np.zeros(neg.shape[1])]
        s = s.sigmoid().detach().numpy()
        return roc_auc_score(y, s), average_precision_score(y, s)

    label = None
    batch_k = int(args.mode[len("batchfull"):]) if args.mode.startswith("batchfull") else None
    if args.mode in ("full", "fullns") or batch_k is not None:
        label = torch.zeros(n, n)
        label[mp[0], mp[1]] = 1
        if args.mode == "full":
            label += torch.eye(n)
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    best = (-1.0, None)
    for _ in range(args.epochs):
        opt.zero_grad()
        z = encode()
        if label is not None:
            sub, zs = label, z
            if batch_k is not None:  # the batch's nodes: the training edges' ends, k negatives
                keep = torch.unique(torch.cat([mp.flatten(), torch.randint(0, n, (batch_k,))]))
                sub, zs = label[keep][:, keep], z[keep]
            m, e = sub.shape[0], sub.sum()
            pos_weight = (m * m - e) / e
            norm = m * m / float(2 * (m * m - e))
            loss = norm * bce(zs @ zs.T, sub, pos_weight=pos_weight)
        else:
            flip = torch.rand(tr_e.shape[1]) < 0.5  # each positive oriented at random
            src = torch.where(flip, tr_e[1], tr_e[0])
            dst = torch.where(flip, tr_e[0], tr_e[1])
            pos = (z[src] * z[dst]).sum(1)
            mode = args.mode
            if mode.startswith("self"):
                pos = torch.cat([pos, (z * z).sum(1)])
                mode = mode[len("self"):]
            neg = negatives(mode, z, src, dst, mp, n)
            loss = bce(pos, torch.ones_like(pos)) + bce(neg, torch.zeros_like(neg))
        loss.backward()
        opt.step()
        if args.report == "best":
            with torch.no_grad():
                valid_auc, _ = evaluate(va_e, va_n)
                if valid_auc > best[0]:
                    best = (valid_auc, evaluate(te_e, te_n))
    with torch.no_grad():
        return best[1] if args.report == "best" else evaluate(te_e, te_n)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode")
    p.add_argument("epochs", type=int)
    p.add_argument("norm", choices=["none", "row"])
    p.add_argument("report", choices=["last", "best"])
    p.add_argument("seeds", type=int, nargs="?", default=10)
    p.add_argument("--cora", default="../shared/datasets/cora.npz")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    x, u, v = load_cora(args.cora)
    if args.norm == "row":
        x = x / x.sum(1, keepdim=True).clamp(min=1)
    res = np.array([run(s, x, u, v, args) for s in range(args.seeds)])
    auc, ap = 100 * res.mean(0)
    print(f"{args.mode} {args.epochs} epochs, {args.norm} features, {args.report}: "
          f"test AUC {auc:.2f} AP {ap:.2f} ({args.seeds} seeds)")


if __name__ == "__main__":
    main()
