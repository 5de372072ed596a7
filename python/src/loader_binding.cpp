// skiff._skiff.Loader / Pass / Batch: pipeline::NodeLoader and its PassStreams for Python (Pass and
// Batch serve the LinkLoader's passes too: link_loader_binding.cpp).
//
// Every wait (opening, starting a pass, taking a batch, closing) runs with the GIL released.
// Pass.next() waits in slices of `poll_ms` and checks for signals between them, so Ctrl-C
// interrupts a waiting loop: the pass is cancelled and KeyboardInterrupt raised.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "arrays.h"
#include "batch_arrays.h"
#include "bindings.h"
#include "handles.h"

namespace nb = nanobind;

namespace skiff::python {

PassHandle::~PassHandle() {
  if (stream == nullptr) return;
  if (getpid() != pid) {
    (void)stream.release();  // a forked child: the parent's threads are not here to join
    return;
  }
  nb::gil_scoped_release released;
  stream.reset();
}

BatchHandle::~BatchHandle() {
  if (pass != nullptr && pass->stream != nullptr && getpid() == pass->pid) {
    pass->stream->Release(std::move(prepared));
  }
}

namespace {

using Ids = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

std::shared_ptr<LoaderHandle> CreateLoader(std::shared_ptr<DatasetHandle> dataset,
                                           std::vector<int> fanouts, int64_t batch_size,
                                           uint64_t memory_bytes, uint64_t model_bytes,
                                           int kept_batches, int threads, uint64_t seed,
                                           bool direct_io) {
  CheckSameProcess(dataset->pid, "this skiff.Dataset");
  pipeline::NodeLoaderOptions options;
  options.fanouts = std::move(fanouts);
  options.batch_size = batch_size;
  options.memory_bytes = memory_bytes;
  options.model_bytes = model_bytes;
  options.kept_batches = kept_batches;
  options.threads = threads;
  options.seed = seed;
  options.direct_io = direct_io;
  Result<std::unique_ptr<pipeline::NodeLoader>> loader = Status::Internal("not created");
  {
    nb::gil_scoped_release released;
    loader = pipeline::NodeLoader::Create(dataset->dataset.get(), std::move(options));
  }
  auto handle = std::make_shared<LoaderHandle>();
  handle->loader = ValueOrThrow(std::move(loader));
  handle->dataset = std::move(dataset);
  handle->pid = getpid();
  return handle;
}

std::shared_ptr<PassHandle> Start(std::shared_ptr<LoaderHandle> loader, Ids nodes, bool shuffle,
                                  uint64_t stream, uint64_t epoch) {
  CheckSameProcess(loader->pid, "this skiff.NodeLoader");
  Result<std::unique_ptr<pipeline::PassStream>> started = Status::Internal("not started");
  {
    nb::gil_scoped_release released;
    started = loader->loader->Start({nodes.data(), nodes.shape(0)}, shuffle, stream, epoch);
  }
  auto handle = std::make_shared<PassHandle>();
  handle->stream = ValueOrThrow(std::move(started));
  handle->feature_dim = loader->loader->feature_dim();
  handle->loader = std::move(loader);
  handle->pid = getpid();
  return handle;
}

// The arrays Python gets besides the batch's own, counted with it: PyG's edge_index, and the
// labels of a node batch or the supervision of a link batch.
void DeriveArrays(const PassHandle& pass, pipeline::PassStream& stream,
                  pipeline::PreparedBatch* prepared, BatchHandle* batch) {
  batch->edge_index = PygEdgeIndex(prepared->batch);
  uint64_t bytes = batch->edge_index.capacity() * 8;
  if (pass.link == nullptr) {
    batch->y.assign(prepared->batch.labels.begin(), prepared->batch.labels.end());
    bytes += batch->y.capacity() * 8;
  } else {
    const LinkPassData& link = *pass.link;
    const auto b = static_cast<size_t>(prepared->index);
    const train::EdgeBatch& edges = link.edges.batches[b];
    const auto pairs = static_cast<int64_t>(edges.pos_src.size());
    const auto wanted =
        static_cast<int64_t>(std::ceil(static_cast<double>(pairs) * link.negative_ratio));
    const int64_t negative_pairs =
        std::min<int64_t>(wanted, pairs * static_cast<int64_t>(edges.neg_dst.size()));
    batch->link = MakeLinkLabels(edges, link.edges.pair_ids[b], *link.labels, negative_pairs);
    bytes += batch->link.bytes();
  }
  stream.Account(prepared, bytes);
}

// The next batch, or None after the last one; polls for signals every `poll_ms`.
std::unique_ptr<BatchHandle> Next(std::shared_ptr<PassHandle> pass, int poll_ms) {
  CheckSameProcess(pass->pid, "this skiff.NodeLoader");
  pipeline::PassStream& stream = *pass->stream;
  Result<std::optional<pipeline::PreparedBatch>> next = std::optional<pipeline::PreparedBatch>();
  auto batch = std::make_unique<BatchHandle>();
  while (true) {
    bool timed_out = false;
    {
      nb::gil_scoped_release released;
      next = stream.Next(std::chrono::milliseconds(std::max(poll_ms, 1)), &timed_out);
      if (next.ok() && next->has_value()) DeriveArrays(*pass, stream, &**next, batch.get());
    }
    if (!timed_out) break;
    if (PyErr_CheckSignals() != 0) {
      nb::gil_scoped_release released;
      stream.Cancel(Status::Aborted("interrupted"));
      stream.Close();
      throw nb::python_error();
    }
  }
  ThrowIfError(next.status());
  if (!next->has_value()) return nullptr;
  batch->prepared = std::move(**next);
  batch->pass = std::move(pass);
  return batch;
}

nb::dict Arrays(BatchHandle& b, bool torch) {
  nb::handle owner = nb::find(&b);
  const sampler::MiniBatch& mb = b.prepared.batch;
  const size_t n = mb.input_nodes.size();
  const auto dim = static_cast<size_t>(b.pass->feature_dim);
  nb::dict out;
  out["x"] = View(b.prepared.features.data(), {n, dim}, owner, torch);
  out["n_id"] = View(const_cast<int64_t*>(mb.input_nodes.data()), {n}, owner, torch);
  out["edge_index"] = View(b.edge_index.data(), {2, b.edge_index.size() / 2}, owner, torch);
  if (b.pass->link == nullptr) {
    out["y"] = View(b.y.data(), {b.y.size()}, owner, torch);
    return out;
  }
  LinkLabelArrays& link = b.link;
  out["edge_label_index"] =
      View(link.edge_label_index.data(), {2, link.edge_label.size()}, owner, torch);
  out["edge_label"] = View(link.edge_label.data(), {link.edge_label.size()}, owner, torch);
  out["input_id"] = View(link.input_id.data(), {link.input_id.size()}, owner, torch);
  out["neg_index"] = View(link.neg_index.data(), {link.neg_index.size()}, owner, torch);
  return out;
}

nb::tuple Block(BatchHandle& b, size_t layer, bool torch) {
  const std::vector<sampler::Block>& blocks = b.prepared.batch.blocks;
  if (layer >= blocks.size()) {
    ThrowIfError(Status::InvalidArgument("layer " + std::to_string(layer) + " of a batch of " +
                                         std::to_string(blocks.size()) + " layers"));
  }
  std::vector<int64_t> edges = BlockEdgeIndex(blocks[layer]);
  const size_t e = edges.size() / 2;
  return nb::make_tuple(Owned(std::move(edges), {2, e}, torch), blocks[layer].num_src,
                        blocks[layer].num_dst);
}

// One batch of `seeds` sampled now (NodeLoader::SampleNow): n_id, edge_index, y and the per-hop
// counts, as PyG's SamplerOutput wants them.
nb::dict SampleNow(const LoaderHandle& h, Ids seeds, uint64_t rng_seed, bool torch) {
  CheckSameProcess(h.pid, "this skiff.NodeLoader");
  sampler::MiniBatch batch;
  std::vector<int64_t> edges, hop_edges, y;
  Status status;
  {
    nb::gil_scoped_release released;
    status = h.loader->SampleNow({seeds.data(), seeds.shape(0)}, rng_seed, &batch);
    if (status.ok()) {
      edges = PygEdgeIndex(batch, &hop_edges);
      y.assign(batch.labels.begin(), batch.labels.end());
    }
  }
  ThrowIfError(status);
  nb::dict out;
  const size_t n = batch.input_nodes.size(), e = edges.size() / 2, bs = y.size();
  out["num_sampled_nodes"] = HopNodes(batch);
  out["num_sampled_edges"] = hop_edges;
  out["n_id"] = Owned(std::move(batch.input_nodes), {n}, torch);
  out["edge_index"] = Owned(std::move(edges), {2, e}, torch);
  out["y"] = Owned(std::move(y), {bs}, torch);
  return out;
}

nb::object ReadRows(const LoaderHandle& h, Ids nodes, bool torch) {
  CheckSameProcess(h.pid, "this skiff.NodeLoader");
  const auto dim = static_cast<size_t>(h.loader->feature_dim());
  std::vector<float> rows(nodes.shape(0) * dim);
  Status status;
  {
    nb::gil_scoped_release released;
    status = h.loader->ReadRows({nodes.data(), nodes.shape(0)}, rows.data());
  }
  ThrowIfError(status);
  const size_t n = nodes.shape(0);
  return Owned(std::move(rows), {n, dim}, torch);
}

// The pass's report (EpochReport) as JSON text and as the CLI's lines, once every batch is taken.
std::pair<std::string, std::string> Report(PassHandle& pass) {
  Result<pipeline::EpochReport> report = pass.stream->Finish();
  ThrowIfError(report.status());
  return {report->ToJson().dump(), report->Describe()};
}

}  // namespace

std::vector<std::pair<std::string, uint64_t>> MemoryPlanItems(const pipeline::MemoryPlan& plan) {
  std::vector<std::pair<std::string, uint64_t>> items;
  for (const pipeline::MemoryItem& item : plan.items) items.emplace_back(item.name, item.bytes);
  items.emplace_back("buffer pool (" + std::to_string(plan.pool_slots) + " partition slots)",
                     plan.pool_bytes);
  return items;
}

void BindLoader(nb::module_& m) {
  nb::class_<LoaderHandle>(m, "Loader")
      .def(nb::new_(&CreateLoader), nb::arg("dataset"), nb::arg("fanouts"), nb::arg("batch_size"),
           nb::arg("memory_bytes"), nb::arg("model_bytes"), nb::arg("kept_batches"),
           nb::arg("threads"), nb::arg("seed"), nb::arg("direct_io"))
      .def("start", &Start, nb::arg("nodes"), nb::arg("shuffle"), nb::arg("stream"),
           nb::arg("epoch"))
      .def("sample", &SampleNow, nb::arg("seeds"), nb::arg("rng_seed"), nb::arg("torch") = false)
      .def("read_rows", &ReadRows, nb::arg("nodes"), nb::arg("torch") = false)
      .def("describe", [](const LoaderHandle& h) { return h.loader->Describe(); })
      .def("memory_plan",
           [](const LoaderHandle& h) { return MemoryPlanItems(h.loader->memory_plan()); })
      .def_prop_ro("model_bytes", [](const LoaderHandle& h) { return h.loader->model_bytes(); })
      .def_prop_ro("fully_resident",
                   [](const LoaderHandle& h) { return h.loader->memory_plan().fully_resident; });

  nb::class_<PassHandle>(m, "Pass")
      .def("next", &Next, nb::arg("poll_ms") = 100)
      .def("close",
           [](PassHandle& p) {
             CheckSameProcess(p.pid, "this skiff.NodeLoader");
             nb::gil_scoped_release released;
             p.stream->Close();
           })
      .def("report", &Report)
      .def_prop_ro("num_batches", [](const PassHandle& p) { return p.stream->num_batches(); })
      .def_prop_ro("delivered", [](const PassHandle& p) { return p.stream->delivered(); });

  nb::class_<BatchHandle>(m, "Batch")
      .def("arrays", &Arrays, nb::arg("torch") = false)
      .def("block", &Block, nb::arg("layer"), nb::arg("torch") = false)
      .def_prop_ro("index", [](const BatchHandle& b) { return b.prepared.index; })
      .def_prop_ro("sample_seed", [](const BatchHandle& b) { return b.prepared.sample_seed; })
      .def_prop_ro("batch_size", [](const BatchHandle& b) { return b.prepared.batch.seeds.size(); })
      .def_prop_ro("num_negatives", [](const BatchHandle& b) { return b.link.neg_index.size(); })
      .def_prop_ro("num_pairs", [](const BatchHandle& b) { return b.link.input_id.size(); })
      .def_prop_ro("num_layers",
                   [](const BatchHandle& b) { return b.prepared.batch.blocks.size(); })
      .def_prop_ro("held_bytes", [](const BatchHandle& b) { return b.prepared.held_bytes; });
}

}  // namespace skiff::python
