"""Read a Skiff dataset directory (docs/FORMAT.md) into NumPy arrays, for peer benchmarks.

Benchmark tooling only: Skiff itself never runs Python. Checksums are not verified here (the peers
read the same files Skiff verified when it wrote them); sizes are checked against the manifest.
"""

import json
import os

import numpy as np


class SkiffDataset:
    def __init__(self, path):
        self.path = path
        with open(os.path.join(path, "manifest.json")) as f:
            self.manifest = json.load(f)
        m = self.manifest
        self.num_nodes = int(m["num_nodes"])
        self.num_edges = int(m["num_edges"])
        self.num_classes = int(m["num_classes"])
        self.feature_dim = int(m["feature_dim"])

    def _file(self, name, dtype, count=None):
        data_bytes = int(self.manifest["files"][name]["data_bytes"])
        item = np.dtype(dtype).itemsize
        if count is None:
            count = data_bytes // item
        if count * item > data_bytes:
            raise ValueError(f"{self.path}/{name}: manifest says {data_bytes} bytes, "
                             f"need {count * item}")
        return np.fromfile(os.path.join(self.path, name), dtype=dtype, count=count)

    def csr(self):
        """(offsets int64[N+1], neighbors int32/int64[E])."""
        offsets = self._file("graph.offsets", np.int64, self.num_nodes + 1)
        ndtype = np.int32 if self.manifest.get("neighbor_dtype", "int32") == "int32" else np.int64
        neighbors = self._file("graph.neighbors", ndtype, int(offsets[-1]))
        return offsets, neighbors

    def features(self):
        """float32 [N, D], gathered from the per-partition extents."""
        dtype = np.float16 if self.manifest["feature_dtype"] == "float16" else np.float32
        row_items = self.feature_dim
        extents = self.manifest.get("feature_extent_offsets", [0])
        parts = self.manifest.get("partitions")
        bounds = parts["boundaries"] if parts else [0, self.num_nodes]
        raw = np.memmap(os.path.join(self.path, "features.bin"), dtype=np.uint8, mode="r")
        out = np.empty((self.num_nodes, row_items), dtype=np.float32)
        item = np.dtype(dtype).itemsize
        for p, offset in enumerate(extents):
            lo, hi = bounds[p], bounds[p + 1]
            nbytes = (hi - lo) * row_items * item
            rows = np.frombuffer(raw[offset:offset + nbytes], dtype=dtype)
            out[lo:hi] = rows.reshape(hi - lo, row_items)
        return out

    def labels(self):
        return self._file("labels.bin", np.int32, self.num_nodes)

    def split(self, name):
        """int64 node IDs of 'train', 'valid' or 'test'."""
        return self._file(f"{name}.idx", np.int64, int(self.manifest["splits"][name]))

    def edge_pairs(self, name):
        """int64 [count, 2] (src, dst) of the edge split's 'train', 'valid', 'test', 'valid_neg'
        or 'test_neg' pairs (link_<name>.edges)."""
        count = int(self.manifest["link_split"][name])
        return self._file(f"link_{name}.edges", np.int64, 2 * count).reshape(count, 2)

