// skiff._skiff.LinkLoader: pipeline::LinkLoader for Python. Its passes are skiff._skiff.Pass
// objects whose batches carry the link supervision (batch_arrays.h, MakeLinkLabels).
//
// Every call that works or waits (opening, planning and starting a pass) runs with the GIL
// released; taking batches is Pass.next (loader_binding.cpp).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <span>

#include "arrays.h"
#include "bindings.h"
#include "handles.h"
#include "skiff/enum_names.h"
#include "skiff/train/link_batches.h"

namespace nb = nanobind;

namespace skiff::python {
namespace {

using Pairs = nb::ndarray<const int64_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Labels = nb::ndarray<const float, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

struct LinkLoaderArgs {
  std::vector<int> fanouts;
  int64_t batch_size = 0;
  int negatives = 0;
  std::string negative_sampler;
  uint64_t memory_bytes = 0, model_bytes = 0;
  int kept_batches = 1, threads = 2;
  uint64_t seed = 0;
  bool direct_io = true;
};

Result<pipeline::LinkLoaderOptions> OptionsOf(const LinkLoaderArgs& a) {
  pipeline::LinkLoaderOptions o;
  o.loader.fanouts = a.fanouts;
  o.loader.batch_size = a.batch_size;
  o.loader.memory_bytes = a.memory_bytes;
  o.loader.model_bytes = a.model_bytes;
  o.loader.kept_batches = a.kept_batches;
  o.loader.threads = a.threads;
  o.loader.seed = a.seed;
  o.loader.direct_io = a.direct_io;
  o.negatives = a.negatives;
  SKIFF_ASSIGN_OR_RETURN(o.negative_sampler, ParseName(train::kNegativeSamplerNames,
                                                       "negative_sampler", a.negative_sampler));
  return o;
}

// The loader's pairs: split `split` of the dataset's edge split, or `pairs` ([2, E]: sources,
// then destinations) when `split` is empty.
Result<pipeline::LinkEdges> EdgesOf(const format::Dataset& dataset, const std::string& split,
                                    std::span<const int64_t> pairs) {
  if (!split.empty()) return pipeline::SplitEdges(dataset, split);
  const size_t n = pairs.size() / 2;
  std::vector<int64_t> interleaved(2 * n);
  for (size_t i = 0; i < n; ++i) {
    interleaved[2 * i] = pairs[i];
    interleaved[2 * i + 1] = pairs[n + i];
  }
  return pipeline::GivenEdges(std::move(interleaved));
}

// Each pair's label: `labels` when given (one per pair), else 1 for the positives and 0 for the
// stored non-edges of a held-out split.
Status FillLabels(const pipeline::LinkEdges& edges, std::span<const float> labels,
                  std::vector<float>* out) {
  const size_t n = edges.pairs.size() / 2;
  if (!labels.empty()) {
    if (labels.size() != n) {
      return Status::InvalidArgument("edge_label has " + std::to_string(labels.size()) +
                                     " entries for " + std::to_string(n) + " pairs");
    }
    out->assign(labels.begin(), labels.end());
    return Status::Ok();
  }
  out->assign(n, 0.0f);
  std::fill(out->begin(), out->begin() + edges.positives, 1.0f);
  return Status::Ok();
}

std::shared_ptr<LinkLoaderHandle> CreateLinkLoader(std::shared_ptr<DatasetHandle> dataset,
                                                   std::string split, Pairs pairs, Labels labels,
                                                   LinkLoaderArgs args) {
  CheckSameProcess(dataset->pid, "this skiff.Dataset");
  if (split.empty() && pairs.shape(0) != 2) {
    ThrowIfError(Status::InvalidArgument("edge_label_index has shape [" +
                                         std::to_string(pairs.shape(0)) + ", " +
                                         std::to_string(pairs.shape(1)) + "], not [2, E]"));
  }
  auto handle = std::make_shared<LinkLoaderHandle>();
  Status status;
  {
    nb::gil_scoped_release released;
    status = [&]() -> Status {
      SKIFF_ASSIGN_OR_RETURN(pipeline::LinkLoaderOptions options, OptionsOf(args));
      SKIFF_ASSIGN_OR_RETURN(
          pipeline::LinkEdges edges,
          EdgesOf(*dataset->dataset, split, {pairs.data(), pairs.shape(0) * pairs.shape(1)}));
      SKIFF_RETURN_IF_ERROR(FillLabels(edges, {labels.data(), labels.shape(0)}, &handle->labels));
      SKIFF_ASSIGN_OR_RETURN(handle->loader,
                             pipeline::LinkLoader::Create(dataset->dataset.get(), std::move(edges),
                                                          std::move(options)));
      return Status::Ok();
    }();
  }
  ThrowIfError(status);
  handle->dataset = std::move(dataset);
  handle->pid = getpid();
  return handle;
}

// Starts the pass of `epoch`; in binary mode a batch of n pairs lists ceil(n x negative_ratio)
// negative pairs (0: none).
std::shared_ptr<PassHandle> StartLink(std::shared_ptr<LinkLoaderHandle> loader, bool shuffle,
                                      uint64_t epoch, double negative_ratio) {
  CheckSameProcess(loader->pid, "this skiff.LinkLoader");
  Result<pipeline::LinkPass> started = Status::Internal("not started");
  {
    nb::gil_scoped_release released;
    started = loader->loader->Start(shuffle, epoch);
  }
  ThrowIfError(started.status());
  auto handle = std::make_shared<PassHandle>();
  handle->stream = std::move(started->stream);
  handle->feature_dim = loader->loader->feature_dim();
  handle->link = std::make_unique<LinkPassData>();
  handle->link->edges = std::move(started->edges);
  handle->link->labels = &loader->labels;
  handle->link->negative_ratio = negative_ratio;
  handle->loader = std::move(loader);
  handle->pid = getpid();
  return handle;
}

// The pairs (as [2, E]: sources, then destinations) and their labels.
nb::tuple PairsOf(const LinkLoaderHandle& h, bool torch) {
  const std::vector<int64_t>& interleaved = h.loader->edges().pairs;
  const size_t n = interleaved.size() / 2;
  std::vector<int64_t> pairs(2 * n);
  for (size_t i = 0; i < n; ++i) {
    pairs[i] = interleaved[2 * i];
    pairs[n + i] = interleaved[2 * i + 1];
  }
  std::vector<float> labels = h.labels;
  return nb::make_tuple(Owned(std::move(pairs), {2, n}, torch),
                        Owned(std::move(labels), {n}, torch));
}

}  // namespace

void BindLinkLoader(nb::module_& m) {
  nb::class_<LinkLoaderHandle>(m, "LinkLoader")
      .def(nb::new_([](std::shared_ptr<DatasetHandle> dataset, std::string split, Pairs pairs,
                       Labels labels, std::vector<int> fanouts, int64_t batch_size, int negatives,
                       std::string negative_sampler, uint64_t memory_bytes, uint64_t model_bytes,
                       int kept_batches, int threads, uint64_t seed, bool direct_io) {
             return CreateLinkLoader(std::move(dataset), std::move(split), pairs, labels,
                                     {.fanouts = std::move(fanouts),
                                      .batch_size = batch_size,
                                      .negatives = negatives,
                                      .negative_sampler = std::move(negative_sampler),
                                      .memory_bytes = memory_bytes,
                                      .model_bytes = model_bytes,
                                      .kept_batches = kept_batches,
                                      .threads = threads,
                                      .seed = seed,
                                      .direct_io = direct_io});
           }),
           nb::arg("dataset"), nb::arg("split"), nb::arg("pairs"), nb::arg("labels"),
           nb::arg("fanouts"), nb::arg("batch_size"), nb::arg("negatives"),
           nb::arg("negative_sampler"), nb::arg("memory_bytes"), nb::arg("model_bytes"),
           nb::arg("kept_batches"), nb::arg("threads"), nb::arg("seed"), nb::arg("direct_io"))
      .def("start", &StartLink, nb::arg("shuffle"), nb::arg("epoch"), nb::arg("negative_ratio"))
      .def("pairs", &PairsOf, nb::arg("torch") = false)
      .def("describe", [](const LinkLoaderHandle& h) { return h.loader->Describe(); })
      .def("memory_plan",
           [](const LinkLoaderHandle& h) { return MemoryPlanItems(h.loader->memory_plan()); })
      .def_prop_ro("model_bytes", [](const LinkLoaderHandle& h) { return h.loader->model_bytes(); })
      .def_prop_ro("num_batches", [](const LinkLoaderHandle& h) { return h.loader->num_batches(); })
      .def_prop_ro("num_pairs", [](const LinkLoaderHandle& h) { return h.loader->num_pairs(); })
      .def_prop_ro("positives",
                   [](const LinkLoaderHandle& h) { return h.loader->edges().positives; })
      .def_prop_ro("fully_resident", [](const LinkLoaderHandle& h) {
        return h.loader->memory_plan().fully_resident;
      });
}

}  // namespace skiff::python
