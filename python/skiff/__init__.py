"""Skiff from Python: datasets on disk and the out-of-core batch stream for your own models.

    import skiff
    ds = skiff.open("data/built-in/small")
    loader = skiff.NodeLoader(ds, num_neighbors=[5, 10], batch_size=1024, memory="256MiB")
    for batch in loader:          # batch.x, batch.y, batch.edge_index, batch.batch_size, ...
        ...
    links = skiff.LinkLoader(ds, num_neighbors=[5, 10], edge_label_index="train",
                             neg_sampling="binary", batch_size=512)

See docs/python.md.
"""

from ._skiff import Error, format_bytes, parse_bytes
from .dataset import Dataset, open
from .link_loader import LinkBatch, LinkLoader
from .loader import Batch, NodeLoader

__all__ = ["Batch", "Dataset", "Error", "LinkBatch", "LinkLoader", "NodeLoader", "format_bytes",
           "open", "parse_bytes"]
__version__ = "0.1.0"
