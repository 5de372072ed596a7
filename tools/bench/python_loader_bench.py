#!/usr/bin/env python3
"""skiff.NodeLoader feeding a PyG GraphSAGE, one or more epochs: samples/s, accuracy, peak RSS.

    python tools/bench/python_loader_bench.py DATASET [--memory 25%|300MiB] [--epochs 1]

The model and loop are those of tools/bench/pyg_loader_peer.py (the PyG NeighborLoader peer):
2 x SAGEConv (mean), hidden 256, ReLU, dropout 0.5, Adam lr 0.003, batch 1024, --num-neighbors
in PyG's order (seed hop first; 10,15 is `skiff train --fanouts 15,10`), torch on --threads.
Prints one JSON line per epoch (train seconds, samples/s, loss, the loader's stage report) and a
final line with validation/test accuracy and the memory figures. Before the loader exists, one
training step on a synthetic batch of the expected size (--warmup-nodes rows, --warmup-edges) loads
torch's kernels and thread pools and measures the model's own working memory (the growth of the
peak RSS over that step, `model_step_bytes`); the baseline is the RSS after it, and the peak
(VmHWM, reset after the baseline) runs to the end: the promise is memory + 96 MiB + baseline, with
the model's working memory inside `memory` only up to --model-memory.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

import skiff

# The model and evaluation of examples/pyg_sage.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from pyg_sage import Sage, evaluate  # noqa: E402


def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))


def warm_up(model, opt, ds, nodes, edges, device):
    """One training step on random data of a batch's size; the growth of the peak RSS."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = status("VmRSS:")
    x = torch.randn(nodes, ds.feature_dim, device=device)
    edge_index = torch.randint(0, nodes, (2, edges), device=device)
    y = torch.randint(0, ds.num_classes, (1024,), device=device)
    opt.zero_grad()
    F.cross_entropy(model(x, edge_index)[:1024], y).backward()
    opt.zero_grad()
    del x, edge_index, y
    return status("VmHWM:") - before


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("dataset")
    p.add_argument("--memory", default=None, help="a size, or N%% of the dataset's bytes")
    p.add_argument("--model-memory", default=None)
    p.add_argument("--num-neighbors", default="10,15")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--no-eval", action="store_true")
    p.add_argument("--pin-memory", action="store_true", help="page-lock each batch's rows")
    p.add_argument("--warmup-nodes", type=int, default=94500,
                   help="rows of the warm-up batch (the 2M-node bar's batches: ~94k)")
    p.add_argument("--warmup-edges", type=int, default=105500,
                   help="edges of the warm-up batch (the bar's: ~105k)")
    args = p.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    ds = skiff.open(args.dataset)
    memory = args.memory
    if memory is not None and memory.endswith("%"):
        memory = int(ds.num_bytes * float(memory[:-1]) / 100)
    fanouts = [int(n) for n in args.num_neighbors.split(",")]
    model = Sage(ds.feature_dim, args.hidden, ds.num_classes, len(fanouts), 0.5).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=0.003)
    model_step = warm_up(model, opt, ds, args.warmup_nodes, args.warmup_edges, device)
    baseline = status("VmRSS:")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    common = dict(num_neighbors=fanouts, memory=memory, threads=args.threads, seed=args.seed,
                  model_memory=args.model_memory)
    loader = skiff.NodeLoader(ds, batch_size=args.batch_size, pin_memory=args.pin_memory, **common)
    print(json.dumps({"loader": loader.describe(), "memory": memory,
                      "plan": loader.memory_plan()}), flush=True)
    for epoch in range(args.epochs):
        model.train()
        start, seeds, total = time.perf_counter(), 0, 0.0
        for batch in loader:
            x = batch.x.to(device, non_blocking=True)
            y = batch.y.to(device, non_blocking=True)
            opt.zero_grad()
            out = model(x, batch.edge_index.to(device, non_blocking=True))[:batch.batch_size]
            loss = F.cross_entropy(out, y)
            loss.backward()
            opt.step()
            total += loss.item() * batch.batch_size
            seeds += batch.batch_size
        seconds = time.perf_counter() - start
        report = loader.report()
        stages = {k: (round(v["busy_seconds"], 2), round(v["stall_seconds"], 2))
                  for k, v in report["stages"].items()}
        print(json.dumps({"epoch": epoch, "train_seconds": round(seconds, 3),
                          "samples_per_second": round(seeds / seconds, 1),
                          "loss": round(total / seeds, 4), "stages_busy_stall": stages,
                          "bytes_read": report["bytes_read"],
                          "read_amplification": round(report["read_amplification"], 2)}),
              flush=True)
    del batch
    loader.close()
    result = {"baseline_rss": baseline, "peak_rss_after_baseline": status("VmHWM:"),
              "model_step_bytes": model_step}
    if not args.no_eval:
        # Evaluation batches of 4096 need more than a small budget holds: the training size then.
        ev = dict(common, batch_size=4096 if memory is None else args.batch_size, shuffle=False)
        result["valid_acc"] = evaluate(model, skiff.NodeLoader(ds, input_nodes="valid", **ev),
                                       device)
        result["test_acc"] = evaluate(model, skiff.NodeLoader(ds, input_nodes="test", **ev),
                                      device)
    if memory is not None:
        budget = skiff.parse_bytes(memory) if isinstance(memory, str) else memory
        result["promise"] = budget + (96 << 20) + baseline
        result["model_memory"] = loader.model_memory
        result["within"] = result["peak_rss_after_baseline"] <= result["promise"]
        # The model's working memory beyond what the budget kept for it comes on top.
        excess = max(model_step - loader.model_memory, 0)
        result["within_with_model_excess"] = (result["peak_rss_after_baseline"]
                                              <= result["promise"] + excess)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
