"""skiff.pyg: PyG's NodeLoader over Skiff's remote backend (FeatureStore, GraphStore, sampler)."""

import numpy as np
import pytest

import skiff
from skiff_dataset import SkiffDataset

torch = pytest.importorskip("torch")  # tools/python-tests.sh installs it where the disk allows
pytest.importorskip("torch_geometric")
import skiff.pyg  # noqa: E402
from torch_geometric.loader import NodeLoader  # noqa: E402


def test_pyg_node_loader_over_the_remote_backend(small):
    ds = skiff.open(small)
    ref = SkiffDataset(small)
    offsets, neighbors = ref.csr()
    features, labels = ref.features(), ref.labels().astype(np.int64)
    feature_store, graph_store = skiff.pyg.remote_backend(ds)
    sampler = skiff.pyg.SkiffSampler(ds, num_neighbors=[3, 5], seed=4)
    train = torch.from_numpy(ds.split("train"))
    loader = NodeLoader((feature_store, graph_store), node_sampler=sampler, input_nodes=train,
                        batch_size=200, shuffle=True)
    seen = []
    for data in loader:
        n_id, ei, bs = data.n_id.numpy(), data.edge_index.numpy(), data.batch_size
        seen.append(n_id[:bs])
        assert np.array_equal(data.x.numpy(), features[n_id])
        assert np.array_equal(data.y.numpy(), labels[n_id])
        assert sum(data.num_sampled_nodes) == len(n_id)
        assert sum(data.num_sampled_edges) == ei.shape[1]
        counts = np.bincount(ei[1], minlength=len(n_id))
        for local in range(bs):
            v = n_id[local]
            assert counts[local] == min(3, offsets[v + 1] - offsets[v])
        for s, d in zip(n_id[ei[0]][:500], n_id[ei[1]][:500]):
            assert s in neighbors[offsets[d]:offsets[d + 1]]
    assert np.array_equal(np.sort(np.concatenate(seen)), ds.split("train"))


def test_stores_answer_as_pyg_expects(small):
    ds = skiff.open(small)
    ref = SkiffDataset(small)
    feature_store, graph_store = skiff.pyg.remote_backend(ds)
    ids = torch.tensor([4, 1, 2999, 4])
    assert torch.equal(feature_store[None, "x", ids], torch.from_numpy(ref.features()[ids]))
    assert torch.equal(feature_store[None, "y", ids],
                       torch.from_numpy(ref.labels()[ids].astype(np.int64)))
    assert feature_store.get_tensor_size(attr_name="x", group_name=None) == (3000, 16)
    (attr,) = graph_store.get_all_edge_attrs()
    row, colptr = graph_store.get_edge_index(attr)
    offsets, neighbors = ref.csr()
    assert np.array_equal(colptr.numpy(), offsets) and np.array_equal(row.numpy(), neighbors)
    with pytest.raises(NotImplementedError, match="read-only"):
        feature_store.put_tensor(torch.zeros(3000, 16), group_name=None, attr_name="x", index=None)


def test_a_model_trains_through_pyg_s_loader(small):
    from torch_geometric.nn import SAGEConv
    torch.manual_seed(1)
    ds = skiff.open(small)
    fs, gs = skiff.pyg.remote_backend(ds)
    loader = NodeLoader((fs, gs), node_sampler=skiff.pyg.SkiffSampler(ds, num_neighbors=[5, 5]),
                        input_nodes=torch.from_numpy(ds.split("train")), batch_size=128,
                        shuffle=True)
    convs = torch.nn.ModuleList([SAGEConv(16, 32), SAGEConv(32, ds.num_classes)])
    opt = torch.optim.Adam(convs.parameters(), lr=0.01)
    losses = []
    for epoch in range(3):
        total = 0.0
        for data in loader:
            out = convs[1](convs[0](data.x, data.edge_index).relu(), data.edge_index)
            loss = torch.nn.functional.cross_entropy(out[:data.batch_size],
                                                     data.y[:data.batch_size])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        losses.append(total)
    assert losses[-1] < 0.8 * losses[0], losses


def test_a_seed_outside_the_graph_is_a_value_error(small):
    from torch_geometric.sampler import NodeSamplerInput
    sampler = skiff.pyg.SkiffSampler(skiff.open(small), num_neighbors=[2])
    with pytest.raises(ValueError, match="seed node 3000 .*is not in"):
        sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=torch.tensor([5, 3000])))
    with pytest.raises(ValueError, match="repeated"):
        sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=torch.tensor([5, 5])))
