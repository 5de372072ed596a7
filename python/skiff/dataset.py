"""skiff.Dataset: a Skiff dataset directory (made by `skiff convert`, `generate`, `partition`)."""

import numpy as np

from . import _skiff
from ._arrays import want_torch


class Dataset:
    """An opened dataset. Counts are attributes; arrays come as NumPy arrays (``split``,
    ``labels``), feature rows as torch tensors when torch is installed (``as_torch``)."""

    def __init__(self, path):
        self._ds = _skiff.Dataset.open(str(path))

    path = property(lambda self: self._ds.path)
    name = property(lambda self: self._ds.name)
    num_nodes = property(lambda self: self._ds.num_nodes)
    num_edges = property(lambda self: self._ds.num_edges, doc="stored (directed) edges")
    feature_dim = property(lambda self: self._ds.feature_dim)
    feature_dtype = property(lambda self: self._ds.feature_dtype, doc="on disk: float32 or float16")
    num_classes = property(lambda self: self._ds.num_classes)
    undirected = property(lambda self: self._ds.undirected)
    num_partitions = property(lambda self: self._ds.num_partitions, doc="0: not partitioned")
    partition_algorithm = property(lambda self: self._ds.partition_algorithm)
    has_id_map = property(lambda self: self._ds.has_id_map)

    @property
    def num_bytes(self) -> int:
        """Bytes of the dataset's files (what a memory budget is compared with)."""
        return self._ds.files_bytes()

    def partition_boundaries(self) -> np.ndarray:
        """int64[k+1]: partition p owns node IDs [b[p], b[p+1])."""
        return self._ds.partition_boundaries()

    def split(self, name: str) -> np.ndarray:
        """The node IDs (int64, ascending) of "train", "valid" or "test"."""
        return self._ds.split(name)

    def csr(self):
        """(offsets int64[N+1], neighbors int64[E]): row v lists the nodes whose messages v
        receives -- the whole graph in memory, checksums verified."""
        return self._ds.csr()

    def labels(self) -> np.ndarray:
        """int32[num_nodes]; -1 marks an unlabelled node."""
        return self._ds.labels()

    def read_rows(self, ids, as_torch=None):
        """Feature rows of `ids` (any order) as float32 [len(ids), feature_dim]; every block read
        is checked against its checksum. For a few rows: the loader is the fast path."""
        ids = np.ascontiguousarray(np.asarray(ids, dtype=np.int64).reshape(-1))
        return self._ds.read_rows(ids, want_torch(as_torch))

    def raw_ids(self, ids) -> list:
        """The raw IDs (as in the converted input, through any relabelling) of dense `ids`."""
        ids = np.ascontiguousarray(np.asarray(ids, dtype=np.int64).reshape(-1))
        return self._ds.raw_ids(ids)

    def verify(self) -> None:
        """Reads every block of every file and checks checksums and consistency (skiff info
        --verify); raises skiff.Error naming the file and block on a mismatch."""
        self._ds.verify()

    def __repr__(self):
        return (f"skiff.Dataset({self.path!r}: {self.num_nodes} nodes, {self.num_edges} edges, "
                f"{self.feature_dim} {self.feature_dtype} features, {self.num_classes} classes, "
                f"{self.num_partitions} partitions)")


def open(path) -> Dataset:  # noqa: A001 - the package's entry point, as in skiff.open(path)
    """Opens a Skiff dataset directory."""
    return Dataset(path)
