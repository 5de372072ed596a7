"""skiff.NodeLoader: what its batches hold, checked against an independent reader of the dataset;
the same batches in memory and out of core; budgets, shards, errors, fork and interrupt."""

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import skiff
from conftest import MEDIUM_BUDGET, MEDIUM_MODEL_MEMORY
from skiff_dataset import SkiffDataset


def numpy_loader(path, **kw):
    kw.setdefault("as_torch", False)
    return skiff.NodeLoader(skiff.open(path), **kw)


def batches_of(loader):
    return [(b.n_id.copy(), b.edge_index.copy(), b.x.copy(), b.y.copy(), b.batch_size)
            for b in loader]


def test_batches_are_exact_samples_of_the_graph(small):
    ref = SkiffDataset(small)
    offsets, neighbors = ref.csr()
    features, labels = ref.features(), ref.labels()
    fanouts = [3, 5]  # seed hop first: seeds draw 3 neighbours, their neighbours 5
    loader = numpy_loader(small, num_neighbors=fanouts, batch_size=64, seed=11)
    train = skiff.open(small).split("train")
    seen = []
    for batch in loader:
        n_id, ei, bs = batch.n_id, batch.edge_index, batch.batch_size
        seeds = n_id[:bs]
        seen.append(seeds)
        assert len(np.unique(n_id)) == len(n_id)
        assert np.array_equal(batch.x, features[n_id])
        assert batch.y.dtype == np.int64 and np.array_equal(batch.y, labels[seeds])
        assert ei.dtype == np.int64 and ei.shape[0] == 2
        src, dst = n_id[ei[0]], n_id[ei[1]]
        # Every edge is a graph edge: src is a neighbour of dst.
        for s, d in zip(src, dst):
            lo, hi = offsets[d], offsets[d + 1]
            assert s in neighbors[lo:hi]
        # Exact sampling without replacement: each expanded node has min(fanout, degree)
        # distinct neighbours -- seeds 3, the nodes first reached from them 5.
        counts = np.bincount(ei[1], minlength=len(n_id))
        hop1 = np.setdiff1d(np.unique(ei[0][ei[1] < bs]), np.arange(bs))
        for local in range(bs):
            deg = offsets[n_id[local] + 1] - offsets[n_id[local]]
            assert counts[local] == min(3, deg)
        for local in hop1:
            deg = offsets[n_id[local] + 1] - offsets[n_id[local]]
            assert counts[local] == min(5, deg)
        for d in np.unique(ei[1]):
            assert len(np.unique(ei[0][ei[1] == d])) == counts[d]
    # Every training node is a seed exactly once per epoch.
    assert np.array_equal(np.sort(np.concatenate(seen)), train)


def test_blocks_for_layerwise_models(small):
    loader = numpy_loader(small, num_neighbors=[4, 6], batch_size=32)
    batch = next(iter(loader))
    (e0, (src0, dst0)), (e1, (src1, dst1)) = batch.adjs  # input layer first
    assert src0 == len(batch.n_id) and dst0 == src1 and dst1 == batch.batch_size
    assert e0[1].max() < dst0 and e0[0].max() < src0 and e1[1].max() < dst1
    # A node's picks in the seed block are among its picks in the input block.
    for d in range(dst1):
        assert set(e1[0][e1[1] == d]) <= set(e0[0][e0[1] == d])
    assert np.bincount(e1[1], minlength=dst1).max() <= 4
    assert np.bincount(e0[1], minlength=dst0).max() <= 6
    loader.close()


def test_epochs_reshuffle_and_seeds_repeat(small):
    a = numpy_loader(small, num_neighbors=[5, 5], batch_size=100, seed=3)
    first, second = batches_of(a), batches_of(a)
    assert not np.array_equal(first[0][0], second[0][0])
    b = numpy_loader(small, num_neighbors=[5, 5], batch_size=100, seed=3)
    again = batches_of(b)
    for x, y in zip(first, again):
        assert all(np.array_equal(u, v) for u, v in zip(x[:4], y[:4]))
    fixed = numpy_loader(small, num_neighbors=[5], batch_size=100, input_nodes="test",
                         shuffle=False)
    seeds = np.concatenate([b[0][:b[4]] for b in batches_of(fixed)])
    assert np.array_equal(seeds, skiff.open(small).split("test"))


def test_out_of_core_gives_the_in_memory_batches(medium):
    in_memory = numpy_loader(medium, num_neighbors=[4, 8], batch_size=200, seed=2)
    assert in_memory._loader.fully_resident
    ooc = numpy_loader(medium, num_neighbors=[4, 8], batch_size=200, seed=2,
                       memory=MEDIUM_BUDGET, model_memory=MEDIUM_MODEL_MEMORY)
    assert not ooc._loader.fully_resident
    assert skiff.open(medium).num_bytes > 2 * skiff.parse_bytes(MEDIUM_BUDGET)
    for epoch in range(2):
        a, b = batches_of(in_memory), batches_of(ooc)
        assert len(a) == len(b) == len(ooc)
        for x, y in zip(a, b):
            assert all(np.array_equal(u, v) for u, v in zip(x[:4], y[:4]))
    report = ooc.report()
    assert set(report["stages"]) == {"io", "plan", "sample", "gather", "compute"}
    assert report["batches"] == len(ooc) and report["fine_bytes_read"] > 0
    assert "read amplification" in report["text"]
    plan = dict(ooc.memory_plan())
    assert plan["the caller's model and its working memory"] == 1 << 20


def test_kept_batches_do_not_hang_the_loader(medium):
    ds = skiff.open(medium)
    loader = numpy_loader(medium, num_neighbors=[4, 4], batch_size=256, memory=MEDIUM_BUDGET,
                          model_memory=MEDIUM_MODEL_MEMORY)
    kept = list(loader)  # every batch kept: the pipeline goes on one batch at a time
    assert len(kept) == len(loader)
    assert sum(b.batch_size for b in kept) == len(ds.split("train"))
    # The kept batches are intact: their rows are the file's.
    ref = SkiffDataset(medium).features()
    for b in kept[::7]:
        assert np.array_equal(b.x, ref[b.n_id])


def test_shards_for_distributed_training(small):
    train = skiff.open(small).split("train")
    shards = []
    for rank in range(3):
        loader = numpy_loader(small, num_neighbors=[2], batch_size=64, rank=rank, world_size=3)
        loader.set_epoch(4)
        shards.append(np.concatenate([b[0][:b[4]] for b in batches_of(loader)]))
    assert len({len(s) for s in shards}) == 1 and len(shards[0]) == len(train) // 3
    union = np.concatenate(shards)
    assert len(np.unique(union)) == len(union) and np.all(np.isin(union, train))


def test_errors_carry_the_engines_message(small):
    ds = skiff.open(small)
    with pytest.raises(MemoryError, match="too small for one batch"):
        skiff.NodeLoader(ds, num_neighbors=[10, 10], memory="64KiB")
    with pytest.raises(ValueError, match="fanout -3"):
        skiff.NodeLoader(ds, num_neighbors=[-3])
    with pytest.raises(ValueError, match="input_nodes='everything'"):
        skiff.NodeLoader(ds, num_neighbors=[2], input_nodes="everything")
    loader = skiff.NodeLoader(ds, num_neighbors=[2], input_nodes=[0, 1, ds.num_nodes])
    with pytest.raises(ValueError, match=f"node {ds.num_nodes} is not in"):
        next(iter(loader))
    with pytest.raises(ValueError, match="memory='a lot': 'a lot' is not a size"):
        skiff.NodeLoader(ds, num_neighbors=[2], memory="a lot")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_use_after_fork_is_a_clear_error(small):
    loader = numpy_loader(small, num_neighbors=[2], batch_size=100)
    it = iter(loader)
    next(it)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            next(iter(loader))
        except RuntimeError as e:
            code = 0 if "after fork" in str(e) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert sum(1 for _ in it) == len(loader) - 1  # the parent's loader goes on


def test_ctrl_c_interrupts_a_waiting_loop(small):
    # A loader whose batches take long (every neighbour of three hops, one thread): SIGINT during
    # the wait must end the loop with KeyboardInterrupt, not hang.
    script = textwrap.dedent(f"""
        import os, signal, sys, threading, time
        import skiff
        loader = skiff.NodeLoader(skiff.open({small!r}), num_neighbors=[-1, -1, -1],
                                  batch_size=1, threads=1, as_torch=False)
        # Python's own handler, whatever this process inherited: a shell's background job starts
        # with SIGINT ignored, and Python then leaves it ignored.
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
