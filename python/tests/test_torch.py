"""torch and PyG: tensors without copies, a PyG model trained from the loader, to_pyg, and the
memory promise while Python holds batches."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import skiff
from conftest import LARGE_BUDGET, MEDIUM_BUDGET, MEDIUM_MODEL_MEMORY

torch = pytest.importorskip("torch")  # tools/python-tests.sh installs it where the disk allows
torch_geometric = pytest.importorskip("torch_geometric")


def test_tensors_share_the_engines_buffers(small):
    loader = skiff.NodeLoader(skiff.open(small), num_neighbors=[3, 3], batch_size=64)
    batch = next(iter(loader))
    assert isinstance(batch.x, torch.Tensor) and batch.x.dtype == torch.float32
    assert batch.edge_index.dtype == torch.int64 and batch.y.dtype == torch.int64
    assert batch.x.shape == (len(batch.n_id), 16)
    # A view: the same memory as the NumPy view of the same batch.
    x_np = batch._handle.arrays(False)["x"]
    assert batch.x.data_ptr() == x_np.__array_interface__["data"][0]
    rows = skiff.open(small).read_rows(batch.n_id)
    assert torch.equal(batch.x, rows)
    data = batch.to_pyg()
    assert data.batch_size == batch.batch_size and data.num_nodes == len(batch.n_id)
    assert torch.equal(data.edge_index, batch.edge_index)
    loader.close()


def test_a_pyg_sage_model_learns_from_the_loader(medium):
    from torch_geometric.nn import SAGEConv
    torch.manual_seed(0)
    ds = skiff.open(medium)

    class Sage(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList([SAGEConv(ds.feature_dim, 32),
                                              SAGEConv(32, ds.num_classes)])

        def forward(self, x, edge_index):
            x = self.convs[0](x, edge_index).relu()
            return self.convs[1](x, edge_index)

    model = Sage()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loader = skiff.NodeLoader(ds, num_neighbors=[5, 5], batch_size=256, memory=MEDIUM_BUDGET,
                              model_memory=MEDIUM_MODEL_MEMORY)
    losses = []
    for epoch in range(3):
        total = 0.0
        for batch in loader:
            opt.zero_grad()
            out = model(batch.x, batch.edge_index)[:batch.batch_size]
            loss = torch.nn.functional.cross_entropy(out, batch.y[:batch.batch_size])
            loss.backward()
            opt.step()
            total += loss.item()
        losses.append(total)
    assert losses[-1] < 0.8 * losses[0], losses
    correct = count = 0
    model.eval()
    with torch.no_grad():
        for batch in skiff.NodeLoader(ds, num_neighbors=[5, 5], batch_size=1024,
                                      input_nodes="test", shuffle=False):
            pred = model(batch.x, batch.edge_index)[:batch.batch_size].argmax(-1)
            correct += int((pred == batch.y).sum())
            count += batch.batch_size
    assert correct / count > 2.0 / ds.num_classes  # well above chance


def test_peak_rss_within_the_budget_while_batches_are_held(large):
    # A process that imports torch and measures its resident memory (the baseline), resets its
    # peak (VmHWM), then trains two epochs out of core -- each batch bound before the previous one
    # is dropped, as a for loop does -- and reads its peak at the end: at most budget + the fixed
    # overhead + the baseline. The dataset is larger than budget + overhead.
    assert skiff.open(large).num_bytes > skiff.parse_bytes(LARGE_BUDGET) + (96 << 20)
    script = textwrap.dedent(f"""
        import json
        import numpy, torch, skiff
        from torch_geometric.nn import SAGEConv
        torch.set_num_threads(1)

        def status(key):
            with open("/proc/self/status") as f:
                return next(int(l.split()[1]) * 1024 for l in f if l.startswith(key))

        ds = skiff.open({large!r})
        model = SAGEConv(ds.feature_dim, ds.num_classes)
        opt = torch.optim.Adam(model.parameters())
        baseline = status("VmRSS:")
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # the peak (VmHWM) starts again from here
        loader = skiff.NodeLoader(ds, num_neighbors=[5, 5], batch_size=512,
                                  memory={LARGE_BUDGET!r}, model_memory="16MiB")
        assert not loader._loader.fully_resident
        for epoch in range(2):
            for batch in loader:
                loss = model(batch.x, batch.edge_index)[:batch.batch_size].logsumexp(-1).mean()
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
    budget = skiff.parse_bytes(LARGE_BUDGET)
    print(f"peak {got['peak'] >> 20} MiB, baseline {got['baseline'] >> 20} MiB, budget "
          f"{budget >> 20} MiB + {overhead >> 20} MiB")
    assert got["peak"] <= budget + overhead + got["baseline"], got
