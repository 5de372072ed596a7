"""PyG adapters: a skiff.Batch as a torch_geometric.data.Data."""


def to_pyg(batch):
    """The batch as PyG's NeighborLoader would give it: x, edge_index, y, n_id, batch_size
    (the seeds are the first batch_size nodes). Shares the batch's memory."""
    import torch
    from torch_geometric.data import Data

    def tensor(a):
        return a if isinstance(a, torch.Tensor) else torch.from_numpy(a)

    return Data(x=tensor(batch.x), edge_index=tensor(batch.edge_index), y=tensor(batch.y),
                n_id=tensor(batch.n_id), batch_size=batch.batch_size)
