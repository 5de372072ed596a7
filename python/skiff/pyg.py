"""PyG adapters: a skiff.Batch as a torch_geometric.data.Data, and a PyG remote backend over a Skiff
dataset (FeatureStore, GraphStore and a sampler), so that code written against PyG's
remote-backend API trains from disk without the graph or the features in memory:

    import skiff, skiff.pyg
    from torch_geometric.loader import NodeLoader
    ds = skiff.open("data/built-in/small")
    feature_store, graph_store = skiff.pyg.remote_backend(ds)
    sampler = skiff.pyg.SkiffSampler(ds, num_neighbors=[10, 15])
    loader = NodeLoader((feature_store, graph_store), node_sampler=sampler,
                        input_nodes=torch.from_numpy(ds.split("train")), batch_size=1024,
                        shuffle=True)

PyG's LinkNeighborLoader (or LinkLoader) takes the same stores and sampler for link prediction,
with edge_label_index=(None, pairs) -- the remote backend's one edge type is None:

    loader = LinkNeighborLoader((feature_store, graph_store), num_neighbors=[10, 15],
                                edge_label_index=(None, pairs), neighbor_sampler=sampler,
                                neg_sampling=NegativeSampling("binary", amount=2),
                                batch_size=512, shuffle=True)

PyG's loader then asks the sampler for each batch on its own thread (or workers) and fetches x and
y from the feature store; skiff.NodeLoader and skiff.LinkLoader, which prepare batches ahead on
Skiff's threads within a budget, are the faster paths for the same model.
"""

import itertools
import math

import numpy as np
import torch
from torch_geometric.data import Data, EdgeAttr, FeatureStore, GraphStore, TensorAttr
from torch_geometric.sampler import BaseSampler, NegativeSampling, SamplerOutput

from . import _skiff
from .dataset import Dataset
from .loader import _memory_bytes


def to_pyg(batch):
    """The batch as PyG's NeighborLoader would give it: x, edge_index, y, n_id, batch_size
    (the seeds are the first batch_size nodes). Shares the batch's memory."""

    def tensor(a):
        return a if isinstance(a, torch.Tensor) else torch.from_numpy(a)

    return Data(x=tensor(batch.x), edge_index=tensor(batch.edge_index), y=tensor(batch.y),
                n_id=tensor(batch.n_id), batch_size=batch.batch_size)


def link_to_pyg(batch):
    """A skiff.LinkBatch as PyG's LinkNeighborLoader gives it: x, edge_index, n_id, input_id and
    edge_label_index / edge_label -- or, in triplet mode, src_index, dst_pos_index and
    dst_neg_index. Shares the batch's memory."""

    def tensor(a):
        return a if isinstance(a, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(a))

    data = Data(x=tensor(batch.x), edge_index=tensor(batch.edge_index), n_id=tensor(batch.n_id),
                input_id=tensor(batch.input_id))
    if batch.mode == "triplet":
        data.src_index = tensor(batch.src_index)
        data.dst_pos_index = tensor(batch.dst_pos_index)
        data.dst_neg_index = tensor(batch.dst_neg_index)
    else:
        data.edge_label_index = tensor(batch.edge_label_index)
        data.edge_label = tensor(batch.edge_label)
    return data


def _engine(dataset, num_neighbors, memory, threads, seed):
    """A Skiff engine (buffer pool, hot row cache) over `dataset` for synchronous calls."""
    if not isinstance(dataset, Dataset):
        dataset = Dataset(dataset)
    fanouts = list(reversed([int(n) for n in num_neighbors]))
    return dataset, _skiff.Loader(dataset._ds, fanouts, 1024, _memory_bytes(memory), 0, 1,
                                  int(threads), int(seed), True)


def _index(index):
    if index is None:
        return None
    if isinstance(index, slice):
        raise NotImplementedError
    ids = index.cpu().numpy() if isinstance(index, torch.Tensor) else np.asarray(index)
    return np.ascontiguousarray(ids.astype(np.int64, copy=False).reshape(-1))


class SkiffFeatureStore(FeatureStore):
    """Read-only node features ("x", float32) and labels ("y", int64) of a Skiff dataset: rows come
    through the buffer pool and its hot row cache (checksums verified), labels from memory."""

    def __init__(self, dataset, memory=None):
        super().__init__()
        self.dataset, self._engine = _engine(dataset, [1], memory, 1, 0)
        self._labels = torch.from_numpy(self.dataset.labels().astype(np.int64))

    def _get_tensor(self, attr):
        ids = _index(attr.index)
        if attr.attr_name == "x":
            if ids is None:
                ids = np.arange(self.dataset.num_nodes, dtype=np.int64)
            return self._engine.read_rows(ids, True)
        if attr.attr_name == "y":
            return self._labels if ids is None else self._labels[torch.from_numpy(ids)]
        return None

    def _get_tensor_size(self, attr):
        if attr.attr_name == "x":
            return (self.dataset.num_nodes, self.dataset.feature_dim)
        if attr.attr_name == "y":
            return (self.dataset.num_nodes,)
        return None

    def get_all_tensor_attrs(self):
        return [TensorAttr(group_name=None, attr_name="x"),
                TensorAttr(group_name=None, attr_name="y")]

    def _put_tensor(self, tensor, attr):
        raise NotImplementedError("a Skiff dataset is read-only (skiff convert writes one)")

    def _remove_tensor(self, attr):
        raise NotImplementedError("a Skiff dataset is read-only")


class SkiffGraphStore(GraphStore):
    """The graph of a Skiff dataset as PyG's GraphStore: one edge type stored by target, i.e. PyG's
    CSC (row v of Skiff's CSR lists the sources of v's messages). It is read from disk, whole,
    only when asked for -- SkiffSampler never asks: it samples from the dataset itself; PyG's own
    samplers do (they hold the graph in memory)."""

    def __init__(self, dataset):
        super().__init__()
        self.dataset = dataset if isinstance(dataset, Dataset) else Dataset(dataset)

    def get_all_edge_attrs(self):
        n = self.dataset.num_nodes
        return [EdgeAttr(edge_type=None, layout="csc", is_sorted=True, size=(n, n))]

    def _get_edge_index(self, edge_attr):
        if edge_attr.layout.value != "csc":
            return None
        offsets, neighbors = self.dataset._ds.csr()
        return torch.from_numpy(neighbors), torch.from_numpy(offsets)  # (row, colptr)

    def _put_edge_index(self, edge_index, edge_attr):
        raise NotImplementedError("a Skiff dataset is read-only (skiff convert writes one)")

    def _remove_edge_index(self, edge_attr):
        raise NotImplementedError("a Skiff dataset is read-only")


class SkiffSampler(BaseSampler):
    """PyG's BaseSampler over Skiff's exact neighbour sampler, for PyG's NodeLoader
    (sample_from_nodes) and LinkNeighborLoader / LinkLoader (sample_from_edges). Both sample the
    seeds of one batch with num_neighbors (seed hop first, as PyG) and return PyG's SamplerOutput
    (n_id with the seeds first, edge_index as row = source and col = target, per-hop counts) with
    the metadata PyG's NeighborSampler gives. Neighbour lists come through the buffer pool within
    `memory` (None: no budget). Each call draws from its own random stream, numbered from `seed`
    in call order: the neighbourhoods and, for edges, the negatives."""

    def __init__(self, dataset, num_neighbors, seed=0, memory=None, threads=1):
        super().__init__()
        self.dataset, self._engine = _engine(dataset, num_neighbors, memory, threads, seed)
        self.num_neighbors = list(num_neighbors)
        self._calls = itertools.count()
        self._seed = int(seed)

    def _next_stream(self):
        return (self._seed * 0x9E3779B97F4A7C15 + next(self._calls)) % (1 << 64)

    def _sample(self, seeds, rng_seed, metadata):
        out = self._engine.sample(_index(seeds), rng_seed, True)
        return SamplerOutput(node=out["n_id"], row=out["edge_index"][0],
                             col=out["edge_index"][1], edge=None,
                             num_sampled_nodes=out["num_sampled_nodes"],
                             num_sampled_edges=out["num_sampled_edges"], metadata=metadata)

    def sample_from_nodes(self, index, **kwargs):
        return self._sample(index.node, self._next_stream(), (index.input_id, index.time))

    def sample_from_edges(self, index, neg_sampling=None):
        """One batch of node pairs (PyG's EdgeSamplerInput: row, col, input_id, label), as
        torch_geometric.sampler.neighbor_sampler.edge_sample lays it out (disjoint=False):
        negatives drawn by `neg_sampling` (binary: ceil(amount x pairs) random pairs, labelled 0,
        given labels first; triplet: `amount` random destinations per pair), uniform or by
        src_weight / dst_weight; the pairs' endpoints and the negatives, each once and in
        ascending order, are the seeds (n_id's first num_sampled_nodes[0] nodes); metadata
        (input_id, edge_label_index, edge_label, None) in binary mode or without negatives,
        (input_id, src_index, dst_pos_index, dst_neg_index, None) in triplet mode, every index
        a position in n_id."""
        if index.input_type is not None:
            raise ValueError(f"a Skiff dataset has one edge type (None), not {index.input_type}: "
                             "give LinkNeighborLoader edge_label_index=(None, pairs)")
        if index.time is not None:
            raise ValueError("SkiffSampler does not sample by time: leave edge_label_time out")
        neg_sampling = NegativeSampling.cast(neg_sampling)
        rng_seed = self._next_stream()
        src, dst = index.row.to(torch.long), index.col.to(torch.long)
        edge_label = index.label
        num_pos = src.numel()
        if neg_sampling is not None:
            num_neg = math.ceil(num_pos * neg_sampling.amount)
            src_neg, dst_neg = self._negatives(neg_sampling, num_neg, rng_seed)
            dst = torch.cat([dst, dst_neg])
            if neg_sampling.is_binary():
                src = torch.cat([src, src_neg])
                if edge_label is None:
                    edge_label = torch.ones(num_pos)
                edge_label = torch.cat(
                    [edge_label, edge_label.new_zeros((num_neg,) + edge_label.size()[1:])])
        seeds, inverse = torch.cat([src, dst]).unique(return_inverse=True)
        if neg_sampling is not None and neg_sampling.is_triplet():
            dst_neg_index = inverse[2 * num_pos:].view(num_pos, -1).squeeze(-1)
            metadata = (index.input_id, inverse[:num_pos], inverse[num_pos:2 * num_pos],
                        dst_neg_index, None)
        else:
            metadata = (index.input_id, inverse.view(2, -1), edge_label, None)
        return self._sample(seeds, rng_seed, metadata)

    def _negatives(self, neg_sampling, num_neg, rng_seed):
        """(source, destination) negatives of one batch, drawn by PyG's own
        NegativeSampling.sample (uniform over the nodes, or multinomial by src_weight /
        dst_weight) from torch's CPU generator seeded for this call; the generator's state is
        put back afterwards, so the caller's random draws (PyG's shuffle) are not disturbed.
        Binary mode draws sources then destinations, as PyG; triplet mode destinations only."""
        num_nodes = self.dataset.num_nodes
        state = torch.get_rng_state()
        try:
            torch.default_generator.manual_seed(_splitmix64(rng_seed))
            src_neg = (neg_sampling.sample(num_neg, "src", num_nodes)
                       if neg_sampling.is_binary() else None)
            dst_neg = neg_sampling.sample(num_neg, "dst", num_nodes)
        finally:
            torch.set_rng_state(state)
        return src_neg, dst_neg

    @property
    def edge_permutation(self):
        return None


def _splitmix64(x):
    """A 64-bit mix of x (SplitMix64's finaliser): the negatives' seed, apart from the
    neighbourhoods' stream of the same call."""
    x = (x + 0x9E3779B97F4A7C15) % (1 << 64)
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) % (1 << 64)
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) % (1 << 64)
    return x ^ (x >> 31)


def remote_backend(dataset, memory=None):
    """(SkiffFeatureStore, SkiffGraphStore) over `dataset`, for PyG's loaders."""
    if not isinstance(dataset, Dataset):
        dataset = Dataset(dataset)
    return SkiffFeatureStore(dataset, memory=memory), SkiffGraphStore(dataset)
