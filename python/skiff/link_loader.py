"""skiff.LinkLoader: link-prediction batches (pairs, negatives, their sampled neighbourhoods)
streamed from disk within a memory budget, in the conventions of PyG's LinkNeighborLoader."""

import math

import numpy as np

from . import _skiff
from ._arrays import want_torch
from .dataset import Dataset
from .loader import _PassLoader, _memory_bytes, _pin

_SPLITS = ("train", "valid", "test")
_MODES = ("binary", "triplet")


def _negative_sampling(neg_sampling):
    """(mode, amount) of `neg_sampling`: None, "binary" / "triplet" (amount 1), a dict with "mode"
    and "amount", or a torch_geometric NegativeSampling (without node weights)."""
    if neg_sampling is None:
        return None, 0
    if isinstance(neg_sampling, str):
        mode, amount = neg_sampling, 1
    elif isinstance(neg_sampling, dict):
        mode, amount = neg_sampling.get("mode"), neg_sampling.get("amount", 1)
    elif hasattr(neg_sampling, "mode") and hasattr(neg_sampling, "amount"):
        if (getattr(neg_sampling, "src_weight", None) is not None
                or getattr(neg_sampling, "dst_weight", None) is not None):
            raise ValueError("neg_sampling with node weights is not supported: use "
                             "negative_sampler='degree' for negatives drawn by degree")
        mode, amount = getattr(neg_sampling.mode, "value", neg_sampling.mode), neg_sampling.amount
    else:
        raise ValueError(f"neg_sampling={neg_sampling!r} is not None, 'binary', 'triplet', a dict "
                         "or a NegativeSampling")
    if mode not in _MODES:
        raise ValueError(f"neg_sampling mode {mode!r} is not 'binary' or 'triplet'")
    if isinstance(amount, bool) or not isinstance(amount, (int, float, np.integer, np.floating)) \
            or not amount > 0:
        raise ValueError(f"neg_sampling amount {amount!r} is not a number > 0")
    if mode == "triplet" and amount != math.ceil(amount):
        raise ValueError(f"neg_sampling amount {amount!r} is not a whole number (triplet mode)")
    return mode, float(amount)


def _pairs(edge_label_index):
    """int64 [2, E], C-contiguous."""
    if hasattr(edge_label_index, "cpu"):
        edge_label_index = edge_label_index.cpu().numpy()
    pairs = np.asarray(edge_label_index)
    if pairs.ndim != 2 or pairs.shape[0] != 2:
        raise ValueError(f"edge_label_index has shape {list(pairs.shape)}, not [2, E]")
    if pairs.size and not np.issubdtype(pairs.dtype, np.integer):
        raise ValueError(f"edge_label_index holds {pairs.dtype}, not integer node IDs")
    return np.ascontiguousarray(pairs, dtype=np.int64)


def _labels(edge_label, num_pairs, binary):
    """float32 [num_pairs] (empty: the loader's own), shifted by one when binary mode must keep 0
    for its negatives (PyG's rule)."""
    if edge_label is None:
        return np.empty(0, dtype=np.float32)
    if hasattr(edge_label, "cpu"):
        edge_label = edge_label.cpu().numpy()
    labels = np.asarray(edge_label, dtype=np.float32).reshape(-1)
    if len(labels) != num_pairs:
        raise ValueError(f"edge_label has {len(labels)} entries for {num_pairs} pairs")
    if binary and len(labels) and labels.min() == 0:
        labels = labels + 1  # 0 now marks the drawn negatives
    return np.ascontiguousarray(labels)


class LinkBatch:
    """One link-prediction batch, in PyG's LinkNeighborLoader conventions (positions in n_id).

    x                float32 [len(n_id), feature_dim]: the input rows (a view of Skiff's buffer)
    n_id             int64 [N]: the batch's nodes; its seeds (every pair's endpoints and the
                     negatives, each once, sources first) come first
    edge_index       int64 [2, E]: sampled edges, source -> target over positions in n_id
    edge_label_index int64 [2, L]: the batch's pairs (positions in n_id), then in binary mode the
                     negative pairs
    edge_label       float32 [L]: each pair's label (1, or the loader's edge_label), 0 for negative
                     pairs
    input_id         int64 [num_pairs]: the pairs' indices in the loader's edge_label_index
    src_index, dst_pos_index   int64 [num_pairs]: the pairs' endpoints (triplet mode's names)
    dst_neg_index    int64 [num_pairs] (amount 1) or [num_pairs, amount]: each pair's negative
                     destinations -- the batch's shared negatives (a broadcast view)
    neg_index        int64 [num_negatives]: the shared negatives' positions in n_id

    Arrays share Skiff's memory; the batch's buffers go back to the loader when the last of them is
    dropped.
    """

    def __init__(self, handle, mode, as_torch, pin_memory=False):
        self._handle = handle
        self.mode = mode
        arrays = handle.arrays(as_torch)
        self.x = arrays["x"]
        if pin_memory:
            _pin(self, self.x)
        self.n_id = arrays["n_id"]
        self.edge_index = arrays["edge_index"]
        self.edge_label_index = arrays["edge_label_index"]
        self.edge_label = arrays["edge_label"]
        self.input_id = arrays["input_id"]
        self.neg_index = arrays["neg_index"]
        self.num_pairs = handle.num_pairs
        self.num_negatives = handle.num_negatives
        self.batch_size = handle.batch_size  # seeds: n_id[:batch_size]

    @property
    def index(self) -> int:
        """The batch's position in its epoch."""
        return self._handle.index

    @property
    def src_index(self):
        return self.edge_label_index[0][:self.num_pairs]

    @property
    def dst_pos_index(self):
        return self.edge_label_index[1][:self.num_pairs]

    @property
    def dst_neg_index(self):
        shape = (self.num_pairs, self.num_negatives)
        if hasattr(self.neg_index, "expand"):
            neg = self.neg_index.unsqueeze(0).expand(*shape)
        else:
            neg = np.broadcast_to(self.neg_index[None, :], shape)
        return neg[:, 0] if self.num_negatives == 1 else neg

    def to_pyg(self):
        """A torch_geometric.data.Data as LinkNeighborLoader gives it: x, edge_index, n_id,
        input_id, and edge_label_index / edge_label, or (triplet) src_index, dst_pos_index,
        dst_neg_index. Shares the batch's memory."""
        from .pyg import link_to_pyg  # needs torch_geometric
        return link_to_pyg(self)

    def __repr__(self):
        return (f"skiff.LinkBatch(index={self.index}, pairs={self.num_pairs}, "
                f"negatives={self.num_negatives}, nodes={len(self.n_id)}, "
                f"edges={self.edge_index.shape[1]})")


class LinkLoader(_PassLoader):
    """An iterable of link-prediction batches from Skiff's engine, prepared ahead on C++ threads.
    See docs/python.md, "Link prediction".

    num_neighbors    neighbours per layer, seed hop first (PyG's order); -1: all
    edge_label_index "train", "valid" or "test" (the dataset's edge split: a held-out split comes
                     with its stored non-edges, labelled 0), or int64 [2, E] node pairs
    edge_label       one label per given pair (None: 1); binary mode shifts labels that use 0
    batch_size       pairs per batch
    neg_sampling     None, "binary", "triplet", {"mode": ..., "amount": a} or PyG's
                     NegativeSampling: ceil(a) negatives are drawn per batch and shared by its
                     pairs (``skiff train --negatives``); binary mode lists ceil(a x pairs)
                     negative pairs, each pair's source with the first negative, then the second..
    negative_sampler "uniform" or "degree" (proportional to degree)
    memory, model_memory, kept_batches, shuffle, seed, threads, as_torch, pin_memory, direct_io:
                     as skiff.NodeLoader's
    """

    def __init__(self, dataset, num_neighbors, edge_label_index="train", edge_label=None,
                 batch_size=1024, neg_sampling=None, negative_sampler="uniform", memory=None,
                 shuffle=True, seed=0, threads=2, model_memory=None, kept_batches=1,
                 as_torch=None, pin_memory=False, direct_io=True, poll_seconds=0.1):
        if not isinstance(dataset, Dataset):
            dataset = Dataset(dataset)
        self.dataset = dataset
        self.num_neighbors = [int(n) for n in num_neighbors]
        if not self.num_neighbors:
            raise ValueError("num_neighbors needs at least one layer")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
                or batch_size < 1:
            raise ValueError(f"batch_size={batch_size!r} is not an integer >= 1")
        self.neg_mode, self.neg_amount = _negative_sampling(neg_sampling)
        if self.neg_mode == "triplet" and edge_label is not None:
            raise ValueError("edge_label cannot be given with triplet negative sampling (PyG's "
                             "rule): its batches are src_index, dst_pos_index, dst_neg_index")
        if isinstance(edge_label_index, str):
            if edge_label_index not in _SPLITS:
                raise ValueError(f"edge_label_index={edge_label_index!r} is not 'train', 'valid', "
                                 "'test' or an int64 [2, E] array of node pairs")
            if edge_label is not None:
                raise ValueError("edge_label is for given pairs: a split's pairs are labelled "
                                 "by the split")
            split, pairs = edge_label_index, np.empty((2, 0), dtype=np.int64)
            labels = np.empty(0, dtype=np.float32)
        else:
            split, pairs = "", _pairs(edge_label_index)
            labels = _labels(edge_label, pairs.shape[1], self.neg_mode == "binary")
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.memory_bytes = _memory_bytes(memory)
        self._torch = want_torch(as_torch)
        self.pin_memory = bool(pin_memory)
        if self.pin_memory and not self._torch:
            raise ValueError("pin_memory=True needs torch tensors (as_torch)")
        self._poll_ms = max(1, int(poll_seconds * 1000))
        model_bytes = 0 if model_memory is None else _memory_bytes(model_memory, "model_memory")
        negatives = math.ceil(self.neg_amount) if self.neg_mode else 0
        # Skiff's sampler lists the input layer first.
        fanouts = list(reversed(self.num_neighbors))
        self._loader = _skiff.LinkLoader(
            dataset._ds, split, pairs, labels, fanouts, self.batch_size, negatives,
            str(negative_sampler), self.memory_bytes, model_bytes, int(kept_batches),
            int(threads), self.seed, bool(direct_io))
        self._negative_ratio = self.neg_amount if self.neg_mode == "binary" else 0.0
        self._epoch = 0
        self._pass = None
        self._report = None

    @property
    def num_negatives(self) -> int:
        """Negatives drawn per batch, shared by its pairs."""
        return math.ceil(self.neg_amount) if self.neg_mode else 0

    @property
    def model_memory(self) -> int:
        """Bytes the budget keeps for your model."""
        return self._loader.model_bytes

    def edge_label_index(self, as_torch=None):
        """(pairs int64 [2, E], labels float32 [E]) the loader goes over: input_id indexes them."""
        return self._loader.pairs(want_torch(as_torch) if as_torch is not None else self._torch)

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration runs (each iteration otherwise moves to the next)."""
        self._epoch = int(epoch)

    def __len__(self):
        return self._loader.num_batches

    def __iter__(self):
        self.close()
        epoch = self._epoch
        self._epoch += 1
        self._pass = self._loader.start(self.shuffle, epoch, self._negative_ratio)
        return self._batches(self._pass)

    def _make_batch(self, handle):
        return LinkBatch(handle, self.neg_mode, self._torch, self.pin_memory)

    def __repr__(self):
        return f"skiff.LinkLoader({self.describe()})"
