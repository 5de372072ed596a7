"""skiff.NodeLoader: exact neighbour-sampled batches streamed from disk within a memory budget."""

import json
import math
import weakref

import numpy as np

from . import _skiff
from ._arrays import want_torch
from .dataset import Dataset

# The random streams of `skiff train` (include/skiff/train/batch_plan.h): a loader over the
# training nodes draws the batches `skiff train` draws for the same seed.
_STREAMS = {"train": 1, "valid": 3, "test": 4}


def _memory_bytes(memory, name="memory") -> int:
    if memory is None:
        return 0
    if isinstance(memory, str):
        try:
            return _skiff.parse_bytes(memory)
        except ValueError as e:
            raise ValueError(f"{name}={memory!r}: {e}") from None
    if isinstance(memory, (int, np.integer)) and not isinstance(memory, bool) and memory > 0:
        return int(memory)
    raise ValueError(f"{name}={memory!r} is not a size: None, a byte count > 0, or e.g. '4GiB'")


def _pin(owner, x):
    """Page-locks x's memory (cudaHostRegister) until `owner` is collected, so that
    x.to("cuda", non_blocking=True) is an asynchronous DMA copy."""
    import torch
    cudart = torch.cuda.cudart()
    ptr, size = x.data_ptr(), x.numel() * x.element_size()
    if size == 0:
        return
    err = cudart.cudaHostRegister(ptr, size, 0)
    if int(err) != 0:
        raise RuntimeError(f"cudaHostRegister of a batch's rows ({size} bytes) failed: {err}")
    weakref.finalize(owner, cudart.cudaHostUnregister, ptr)


class Batch:
    """One sampled batch, in PyG's conventions.

    x           float32 [len(n_id), feature_dim]: the input rows (a view of Skiff's buffer)
    n_id        int64 [N]: the batch's node IDs, the seeds first
    batch_size  the number of seeds (n_id[:batch_size])
    y           int64 [batch_size]: the seeds' labels (-1: unlabelled), so y[:batch_size] works
                as with PyG's NeighborLoader
    edge_index  int64 [2, E]: source -> target over local IDs (positions in n_id), each node's
                sampled neighbours once, seeds' edges first -- what NeighborLoader gives for the
                same num_neighbors
    adjs        per-layer blocks for layer-wise models, input layer first: (edge_index, (num_src,
                num_dst)), destinations a prefix of sources

    Arrays are torch tensors (or NumPy arrays without torch) that share Skiff's memory; the batch's
    buffers go back to the loader when the last of them is dropped.
    """

    def __init__(self, handle, as_torch, pin_memory=False):
        self._handle = handle
        self._torch = as_torch
        arrays = handle.arrays(as_torch)
        self.x = arrays["x"]
        if pin_memory:
            _pin(self, self.x)
        self.n_id = arrays["n_id"]
        self.y = arrays["y"]
        self.edge_index = arrays["edge_index"]
        self.batch_size = handle.batch_size
        self._adjs = None

    @property
    def index(self) -> int:
        """The batch's position in its epoch."""
        return self._handle.index

    @property
    def num_layers(self) -> int:
        return self._handle.num_layers

    @property
    def adjs(self):
        if self._adjs is None:
            self._adjs = []
            for layer in range(self._handle.num_layers):
                edge_index, num_src, num_dst = self._handle.block(layer, self._torch)
                self._adjs.append((edge_index, (num_src, num_dst)))
        return self._adjs

    def to_pyg(self):
        """The batch as a torch_geometric.data.Data (x, edge_index, y, n_id, batch_size)."""
        from .pyg import to_pyg  # needs torch_geometric
        return to_pyg(self)

    def __repr__(self):
        return (f"skiff.Batch(index={self.index}, batch_size={self.batch_size}, "
                f"nodes={len(self.n_id)}, edges={self.edge_index.shape[1]})")


class _PassLoader:
    """What NodeLoader and LinkLoader share: one pass of the engine's batches at a time (self._pass,
    started by __iter__), pulled with the GIL released, and the last complete pass's report.
    Subclasses set self._loader, self._poll_ms, self._pass = self._report = None, and
    _make_batch(handle)."""

    def _batches(self, pass_):
        try:
            while True:
                handle = pass_.next(self._poll_ms)
                if handle is None:
                    break
                yield self._make_batch(handle)
            report_json, report_text = pass_.report()
            self._report = json.loads(report_json)
            self._report["text"] = report_text
        finally:
            pass_.close()  # an abandoned iteration stops its threads

    def close(self) -> None:
        """Stops the current epoch's threads (batches handed out stay valid)."""
        if self._pass is not None:
            self._pass.close()
            self._pass = None

    def report(self) -> dict:
        """The last complete epoch's per-stage report, as ``skiff train`` prints it: busy and
        stall seconds per stage (io, plan, sample, gather, and compute -- the time your loop spent
        between batches), bytes read, read amplification; ``report()["text"]`` is the printed
        form. None before an epoch has ended."""
        return self._report

    def memory_plan(self) -> list:
        """How the budget is split: (what, bytes) pairs."""
        return self._loader.memory_plan()

    def describe(self) -> str:
        return self._loader.describe()


class NodeLoader(_PassLoader):
    """An iterable of batches from Skiff's engine (buffer pool, exact sampling, the epoch plan of
    ``skiff train``), prepared ahead on C++ threads while your model trains.

    num_neighbors  neighbours per layer, seed hop first (PyG's order): [10, 15] gives each seed 10
                   neighbours and each of those 15 -- ``skiff train --fanouts 15,10``. -1: all.
    batch_size     seeds per batch
    memory         None: every partition resident; or a budget ("4GiB", bytes) for everything the
                   loader holds -- partitions, caches, batches in flight, the batches you keep
                   (`kept_batches`: a loop keeps the one it trains on) and `model_memory` for
                   your model
    input_nodes    "train", "valid", "test" or an array of node IDs
    shuffle        a new order every epoch (from seed and epoch); False: the given order
    seed           the run's seed (the same as ``skiff train --seed``)
    threads        sampler threads
    model_memory   bytes (or "512MiB") kept in the budget for your model's working memory;
                   None: twice the float32 rows of an expected batch
    rank, world_size  for torch.distributed: each rank iterates over a disjoint shard of the
                   seeds, reshuffled every epoch; every rank gets the same number (the remainder
                   of an epoch's permutation is left out)
    as_torch       True: torch tensors, False: NumPy arrays, None: torch when installed
    pin_memory     page-lock each batch's rows (cudaHostRegister) while the batch lives, so that
                   batch.x.to("cuda", non_blocking=True) copies asynchronously
    """

    def __init__(self, dataset, num_neighbors, batch_size=1024, memory=None,
                 input_nodes="train", shuffle=True, seed=0, threads=2, model_memory=None,
                 kept_batches=1, rank=0, world_size=1, as_torch=None, pin_memory=False,
                 direct_io=True, poll_seconds=0.1):
        if not isinstance(dataset, Dataset):
            dataset = Dataset(dataset)
        self.dataset = dataset
        self.num_neighbors = [int(n) for n in num_neighbors]
        if not self.num_neighbors:
            raise ValueError("num_neighbors needs at least one layer")
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size} is not >= 1")
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank={rank} is not in [0, world_size={world_size})")
        if isinstance(input_nodes, str):
            if input_nodes not in _STREAMS:
                raise ValueError(f"input_nodes={input_nodes!r} is not 'train', 'valid', 'test' "
                                 "or an array of node IDs")
            self._stream = _STREAMS[input_nodes]
            nodes = dataset.split(input_nodes)
        else:
            self._stream = _STREAMS["train"]
            nodes = np.asarray(input_nodes.cpu() if hasattr(input_nodes, "cpu") else input_nodes)
            if nodes.dtype == np.bool_:
                nodes = np.flatnonzero(nodes)
            nodes = nodes.astype(np.int64, copy=False).reshape(-1)
        self._nodes = np.ascontiguousarray(nodes)
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.rank, self.world_size = int(rank), int(world_size)
        self.memory_bytes = _memory_bytes(memory)
        self._torch = want_torch(as_torch)
        self.pin_memory = bool(pin_memory)
        if self.pin_memory and not self._torch:
            raise ValueError("pin_memory=True needs torch tensors (as_torch)")
        self._poll_ms = max(1, int(poll_seconds * 1000))
        model_bytes = 0 if model_memory is None else _memory_bytes(model_memory, "model_memory")
        # Skiff's sampler lists the input layer first.
        fanouts = list(reversed(self.num_neighbors))
        self._loader = _skiff.Loader(dataset._ds, fanouts, self.batch_size, self.memory_bytes,
                                     model_bytes, int(kept_batches), int(threads), self.seed,
                                     bool(direct_io))
        self._epoch = 0
        self._pass = None
        self._report = None

    @property
    def model_memory(self) -> int:
        """Bytes the budget keeps for your model."""
        return self._loader.model_bytes

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration runs (each iteration otherwise moves to the next)."""
        self._epoch = int(epoch)

    def _epoch_nodes(self, epoch):
        if self.world_size == 1:
            return self._nodes
        order = np.random.default_rng([self.seed, epoch]).permutation(len(self._nodes))
        per_rank = len(order) // self.world_size
        return np.ascontiguousarray(
            np.sort(self._nodes[order[self.rank * per_rank:(self.rank + 1) * per_rank]]))

    def __len__(self):
        return math.ceil(len(self._epoch_nodes(self._epoch)) / self.batch_size)

    def __iter__(self):
        self.close()
        epoch = self._epoch
        self._epoch += 1
        self._pass = self._loader.start(self._epoch_nodes(epoch), self.shuffle, self._stream,
                                        epoch)
        return self._batches(self._pass)

    def _make_batch(self, handle):
        return Batch(handle, self._torch, self.pin_memory)

    def __repr__(self):
        return f"skiff.NodeLoader({self.describe()})"
