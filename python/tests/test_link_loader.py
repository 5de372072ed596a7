"""skiff.LinkLoader: batches in LinkNeighborLoader's conventions, checked against an independent
reader of the dataset (pairs, held-out edges, sampled edges, rows); every training pair once an
epoch; the same batches within a small budget; determinism; errors; Ctrl-C; the memory promise;
and a PyG encoder with a dot decoder that learns to tell held-out edges from non-edges."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import skiff
from conftest import LARGE_BUDGET, MEDIUM_BUDGET, MEDIUM_MODEL_MEMORY
from skiff_dataset import SkiffDataset


def numpy_loader(path, **kw):
    kw.setdefault("as_torch", False)
    return skiff.LinkLoader(skiff.open(path), **kw)


def arrays_of(batch):
    return [np.array(a, copy=True) for a in (batch.n_id, batch.edge_index, batch.x,
                                             batch.edge_label_index, batch.edge_label,
                                             batch.input_id, batch.neg_index)]


def same_batches(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert all(np.array_equal(u, v) for u, v in zip(x, y))


def undirected_keys(pairs, n):
    """Each pair of [E, 2] as one key, whichever way round."""
    lo, hi = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
    return lo * n + hi


def test_batches_follow_link_neighbor_loaders_conventions(communities):
    ref = SkiffDataset(communities)
    offsets, neighbors = ref.csr()
    features = ref.features()
    n = len(offsets) - 1
    train = ref.edge_pairs("train")
    held_out = np.concatenate([ref.edge_pairs("valid"), ref.edge_pairs("test")])
    held_out_keys = set(undirected_keys(held_out, n).tolist())
    graph_keys = set()
    loader = numpy_loader(communities, num_neighbors=[3, 2], batch_size=64,
                          neg_sampling=dict(mode="binary", amount=3), seed=4)
    assert loader.num_negatives == 3 and len(loader) == -(-len(train) // 64)
    epoch_ids = []
    for batch in loader:
        n_id, ei, eli, label = batch.n_id, batch.edge_index, batch.edge_label_index, batch.edge_label
        pairs, k = batch.num_pairs, batch.num_negatives
        assert len(np.unique(n_id)) == len(n_id)
        assert np.array_equal(batch.x, features[n_id])
        # The pairs and the negatives are the batch's seeds: the first batch_size nodes of n_id.
        assert eli.shape == (2, pairs * (1 + k)) and eli.max() < batch.batch_size
        assert np.array_equal(label, np.r_[np.ones(pairs), np.zeros(pairs * k)])
        # Each positive is its training pair (either way round: undirected pairs are reoriented).
        got = n_id[eli[:, :pairs]].T
        want = train[batch.input_id]
        assert np.array_equal(np.sort(got, axis=1), np.sort(want, axis=1))
        # Negative pairs: every pair's source with the first shared negative, then the second...
        for j in range(k):
            block = eli[:, pairs * (1 + j):pairs * (2 + j)]
            assert np.array_equal(block[0], eli[0, :pairs])
            assert np.all(block[1] == batch.neg_index[j])
        # Sampled edges are graph edges, and no held-out edge is among them.
        src, dst = n_id[ei[0]], n_id[ei[1]]
        for s, d in zip(src, dst):
            assert s in neighbors[offsets[d]:offsets[d + 1]]
        keys = undirected_keys(np.stack([src, dst], 1), n)
        assert not held_out_keys & set(keys.tolist())
        graph_keys |= set(keys.tolist())
        epoch_ids.append(batch.input_id.copy())
    # Every training pair exactly once an epoch.
    assert np.array_equal(np.sort(np.concatenate(epoch_ids)), np.arange(len(train)))
    assert len(graph_keys) > 1000  # the check above saw many edges


def test_triplet_mode_and_to_pyg(communities):
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    loader = skiff.LinkLoader(skiff.open(communities), num_neighbors=[4], batch_size=50,
                              neg_sampling="triplet")
    batch = next(iter(loader))
    assert isinstance(batch.x, torch.Tensor) and batch.edge_label_index.dtype == torch.int64
    assert batch.dst_neg_index.shape == (50,)  # amount 1: one negative per pair, as PyG's
    data = batch.to_pyg()
    assert set(data.keys()) >= {"x", "edge_index", "n_id", "input_id", "src_index",
                                "dst_pos_index", "dst_neg_index"}
    assert "edge_label_index" not in data
    assert torch.equal(data.src_index, batch.edge_label_index[0])
    loader.close()

    from torch_geometric.sampler import NegativeSampling
    loader = skiff.LinkLoader(skiff.open(communities), num_neighbors=[4], batch_size=50,
                              neg_sampling=NegativeSampling("triplet", amount=4))
    batch = next(iter(loader))
    assert batch.dst_neg_index.shape == (50, 4)
    assert torch.equal(batch.dst_neg_index[7], batch.neg_index)
    loader.close()
    binary = skiff.LinkLoader(skiff.open(communities), num_neighbors=[4], batch_size=50,
                              neg_sampling="binary")
    batch = next(iter(binary))
    data = batch.to_pyg()
    assert data.edge_label_index.shape == (2, 100) and data.edge_label.sum() == 50
    assert data.x.data_ptr() == batch.x.data_ptr()  # the batch's memory, not a copy
    binary.close()


def test_held_out_splits_come_with_their_non_edges(communities):
    ref = SkiffDataset(communities)
    loader = numpy_loader(communities, num_neighbors=[2], edge_label_index="test",
                          batch_size=40, shuffle=False)
    pairs, labels = [], []
    for batch in loader:
        assert batch.num_negatives == 0
        pairs.append(batch.n_id[batch.edge_label_index].T)
        labels.append(batch.edge_label.copy())
    test, non_edges = ref.edge_pairs("test"), ref.edge_pairs("test_neg")
    assert np.array_equal(np.concatenate(pairs), np.concatenate([test, non_edges]))
    assert np.array_equal(np.concatenate(labels),
                          np.r_[np.ones(len(test)), np.zeros(len(non_edges))])
    given, given_labels = loader.edge_label_index()
    assert np.array_equal(given.T, np.concatenate([test, non_edges]))


def test_given_pairs_and_labels(communities):
    pairs = np.array([[0, 5, 9, 12], [1, 6, 10, 13]])
    loader = numpy_loader(communities, num_neighbors=[2], edge_label_index=pairs,
                          edge_label=[0, 1, 1, 0], batch_size=4, shuffle=False,
                          neg_sampling="binary")
    batch = next(iter(loader))
    assert np.array_equal(batch.n_id[batch.edge_label_index[:, :4]], pairs)
    # Binary mode keeps 0 for the drawn negatives: given labels that use 0 move up by one.
    assert np.array_equal(batch.edge_label, [1, 2, 2, 1, 0, 0, 0, 0])
    assert np.array_equal(batch.input_id, np.arange(4))


def test_a_seed_repeats_its_batches_and_epochs_differ(communities):
    kw = dict(num_neighbors=[3, 3], batch_size=128, neg_sampling=dict(mode="binary", amount=2),
              negative_sampler="degree", seed=9)
    a = numpy_loader(communities, **kw)
    first, second = [arrays_of(b) for b in a], [arrays_of(b) for b in a]
    assert not np.array_equal(first[0][5], second[0][5])
    b = numpy_loader(communities, **kw)
    same_batches(first, [arrays_of(x) for x in b])
    b.set_epoch(1)
    same_batches(second, [arrays_of(x) for x in b])
    other = numpy_loader(communities, **dict(kw, seed=10))
    assert not np.array_equal(first[0][5], arrays_of(next(iter(other)))[5])


def test_out_of_core_gives_the_in_memory_batches(medium_link):
    kw = dict(num_neighbors=[4, 4], batch_size=100, neg_sampling="binary", seed=2,
              edge_label_index=np.ascontiguousarray(
                  SkiffDataset(medium_link).edge_pairs("train")[:3000].T))
    in_memory = numpy_loader(medium_link, **kw)
    assert in_memory._loader.fully_resident
    ooc = numpy_loader(medium_link, memory=MEDIUM_BUDGET, model_memory=MEDIUM_MODEL_MEMORY,
                       direct_io=True, **kw)
    assert not ooc._loader.fully_resident
    assert skiff.open(medium_link).num_bytes > 2 * skiff.parse_bytes(MEDIUM_BUDGET)
    for epoch in range(2):
        same_batches([arrays_of(b) for b in in_memory], [arrays_of(b) for b in ooc])
    report = ooc.report()
    assert report["batches"] == len(ooc) and report["fine_bytes_read"] > 0
    assert dict(ooc.memory_plan())["the caller's model and its working memory"] == 1 << 20


def test_errors_carry_the_engines_message(small, communities):
    with pytest.raises(ValueError, match="has no edge split for link prediction"):
        skiff.LinkLoader(skiff.open(small), num_neighbors=[2])
    ds = skiff.open(communities)
    with pytest.raises(ValueError, match="edge_label_index='everything'"):
        skiff.LinkLoader(ds, num_neighbors=[2], edge_label_index="everything")
    with pytest.raises(ValueError, match=r"shape \[3, 2\], not \[2, E\]"):
        skiff.LinkLoader(ds, num_neighbors=[2], edge_label_index=np.zeros((3, 2), np.int64))
    with pytest.raises(ValueError, match=f"pair 1 has node {ds.num_nodes}, not in"):
        skiff.LinkLoader(ds, num_neighbors=[2], edge_label_index=[[0, 1], [2, ds.num_nodes]])
    with pytest.raises(ValueError, match="at least one pair"):
        skiff.LinkLoader(ds, num_neighbors=[2], edge_label_index=np.zeros((2, 0), np.int64))
    with pytest.raises(ValueError, match="mode 'ternary'"):
        skiff.LinkLoader(ds, num_neighbors=[2], neg_sampling="ternary")
    with pytest.raises(ValueError, match="amount 0 is not a number > 0"):
        skiff.LinkLoader(ds, num_neighbors=[2], neg_sampling=dict(mode="binary", amount=0))
    with pytest.raises(ValueError, match="not a whole number"):
        skiff.LinkLoader(ds, num_neighbors=[2], neg_sampling=dict(mode="triplet", amount=1.5))
    with pytest.raises(ValueError, match="unknown negative_sampler 'zipf'"):
        skiff.LinkLoader(ds, num_neighbors=[2], negative_sampler="zipf")
    with pytest.raises(ValueError, match="edge_label has 1 entries for 2 pairs"):
        skiff.LinkLoader(ds, num_neighbors=[2], edge_label_index=[[0, 1], [2, 3]],
                         edge_label=[1])
    with pytest.raises(ValueError, match="triplet"):
        skiff.LinkLoader(ds, num_neighbors=[2], edge_label_index=[[0, 1], [2, 3]],
                         edge_label=[1, 1], neg_sampling="triplet")
    with pytest.raises(ValueError, match="fanout -3"):
        skiff.LinkLoader(ds, num_neighbors=[-3])
    with pytest.raises(ValueError, match="batch_size=0"):
        skiff.LinkLoader(ds, num_neighbors=[2], batch_size=0)
    with pytest.raises(MemoryError, match="too small for one batch"):
        skiff.LinkLoader(ds, num_neighbors=[10, 10], memory="64KiB")


def test_ctrl_c_interrupts_a_waiting_loop(medium_link):
    script = textwrap.dedent(f"""
        import os, signal, sys, threading
        import skiff
        pairs = [list(range(0, 200, 2)), list(range(1, 200, 2))]
        loader = skiff.LinkLoader(skiff.open({medium_link!r}), num_neighbors=[-1, -1, -1],
                                  edge_label_index=pairs, batch_size=1, threads=1,
                                  as_torch=False)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            for epoch in range(1000):
                for batch in loader:
                    pass
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(0)
        sys.exit(3)
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "interrupted" in run.stdout


def auc(pos, neg):
    """The probability that a positive outscores a negative (ties count half)."""
    scores = np.concatenate([pos, neg])
    ranks = np.empty(len(scores))
    order = np.argsort(scores, kind="mergesort")
    ranks[order] = np.arange(1, len(scores) + 1)
    for value in np.unique(scores):  # average ranks of ties
        tied = scores == value
        ranks[tied] = ranks[tied].mean()
    return (ranks[:len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def test_a_sage_encoder_with_a_dot_decoder_learns(communities):
    torch = pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    from torch_geometric.nn import SAGEConv
    torch.manual_seed(0)
    ds = skiff.open(communities)

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = SAGEConv(ds.feature_dim, 32), SAGEConv(32, 16)

        def forward(self, x, edge_index):
            return self.conv2(self.conv1(x, edge_index).relu(), edge_index)

    def valid_auc(model):
        model.eval()
        pos, neg = [], []
        with torch.no_grad():
            for batch in skiff.LinkLoader(ds, num_neighbors=[5, 5], edge_label_index="valid",
                                          batch_size=256, shuffle=False):
                h = model(batch.x, batch.edge_index)
                s, d = batch.edge_label_index
                score = (h[s] * h[d]).sum(-1)
                pos.append(score[batch.edge_label == 1].numpy())
                neg.append(score[batch.edge_label == 0].numpy())
        model.train()
        return auc(np.concatenate(pos), np.concatenate(neg))

    model = Encoder()
    before = valid_auc(model)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loader = skiff.LinkLoader(ds, num_neighbors=[5, 5], batch_size=256,
                              neg_sampling=dict(mode="binary", amount=2))
    for epoch in range(4):
        for batch in loader:
            h = model(batch.x, batch.edge_index)
            s, d = batch.edge_label_index
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                (h[s] * h[d]).sum(-1), batch.edge_label)
            opt.zero_grad()
            loss.backward()
            opt.step()
    after = valid_auc(model)
    print(f"valid AUC {before:.3f} untrained, {after:.3f} after 4 epochs")
    # Measured: 0.57 untrained, 0.81 trained (15% of the edges join random communities).
    assert after > 0.7 and after > before + 0.15, (before, after)


def test_peak_rss_within_the_budget_while_batches_are_held(large):
    # As test_torch.py's promise for NodeLoader: a child that imports torch, measures its
    # baseline, resets its peak and trains a link model out of core for two epochs over pairs it
    # gives, on a dataset larger than budget + overhead.
    pytest.importorskip("torch")
    pytest.importorskip("torch_geometric")
    budget = LARGE_BUDGET
    assert skiff.open(large).num_bytes > skiff.parse_bytes(budget) + (96 << 20)
    script = textwrap.dedent(f"""
        import json
        import numpy, torch, skiff
        from torch_geometric.nn import SAGEConv
        torch.set_num_threads(1)

        def status(key):
            with open("/proc/self/status") as f:
                return next(int(l.split()[1]) * 1024 for l in f if l.startswith(key))

        ds = skiff.open({large!r})
        model = SAGEConv(ds.feature_dim, 16)
        opt = torch.optim.Adam(model.parameters())
        pairs = numpy.ascontiguousarray(
            numpy.stack([numpy.arange(0, 40000, 2), numpy.arange(1, 40000, 2)]))
        baseline = status("VmRSS:")
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        loader = skiff.LinkLoader(ds, num_neighbors=[5, 5], edge_label_index=pairs,
                                  batch_size=256, neg_sampling="binary", memory={budget!r},
                                  model_memory="4MiB")
        assert not loader._loader.fully_resident
        for epoch in range(2):
            for batch in loader:
                h = model(batch.x, batch.edge_index)
                s, d = batch.edge_label_index
                loss = torch.nn.functional.binary_cross_entropy_with_logits(
                    (h[s] * h[d]).sum(-1), batch.edge_label)
                opt.zero_grad()
                loss.backward()
                opt.step()
        del batch, loader
        print(json.dumps({{"baseline": baseline, "peak": status("VmHWM:")}}))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    overhead = 96 << 20  # kFixedOverheadBytes (docs/python.md)
    print(f"peak {got['peak'] >> 20} MiB, baseline {got['baseline'] >> 20} MiB")
    assert got["peak"] <= skiff.parse_bytes(budget) + overhead + got["baseline"], got
