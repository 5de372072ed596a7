// skiff._skiff.Dataset: an opened dataset directory (format::Dataset) -- its counts, splits,
// labels, feature rows by node ID (every block read is checked against its checksum) and raw IDs.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <string>

#include "arrays.h"
#include "bindings.h"
#include "handles.h"
#include "skiff/train/export.h"

namespace nb = nanobind;

namespace skiff::python {
namespace {

using Ids = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

std::shared_ptr<DatasetHandle> Open(const std::string& path) {
  Result<std::unique_ptr<format::Dataset>> opened = Status::Internal("not opened");
  {
    nb::gil_scoped_release released;
    opened = format::Dataset::Open(path);
  }
  auto handle = std::make_shared<DatasetHandle>();
  handle->dataset = ValueOrThrow(std::move(opened));
  handle->pid = getpid();
  return handle;
}

const format::Dataset& Get(const DatasetHandle& h) {
  CheckSameProcess(h.pid, "this skiff.Dataset");
  return *h.dataset;
}

nb::object Split(const DatasetHandle& h, const std::string& name) {
  const format::Dataset& d = Get(h);
  std::string file;
  if (name == "train") file = format::kTrainFile;
  if (name == "valid") file = format::kValidFile;
  if (name == "test") file = format::kTestFile;
  if (file.empty()) {
    ThrowIfError(
        Status::InvalidArgument("split '" + name + "' is not one of 'train', 'valid', 'test'"));
  }
  Result<std::vector<int64_t>> ids = Status::Internal("not read");
  {
    nb::gil_scoped_release released;
    ids = d.LoadSplit(file);
  }
  std::vector<int64_t> values = ValueOrThrow(std::move(ids));
  const size_t n = values.size();
  return Owned(std::move(values), {n});
}

nb::object Labels(const DatasetHandle& h) {
  const format::Dataset& d = Get(h);
  Result<std::vector<int32_t>> labels = Status::Internal("not read");
  {
    nb::gil_scoped_release released;
    labels = d.LoadLabels();
  }
  std::vector<int32_t> values = ValueOrThrow(std::move(labels));
  const size_t n = values.size();
  return Owned(std::move(values), {n});
}

// Rows of `ids` (any order, repeats allowed), read in runs of consecutive IDs.
Status ReadRows(const format::Dataset& d, std::span<const int64_t> ids, float* out) {
  const int64_t n = d.manifest().num_nodes;
  const auto dim = static_cast<size_t>(d.manifest().feature_dim);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= n) {
      return Status::InvalidArgument("ids[" + std::to_string(i) + "] = " + std::to_string(ids[i]) +
                                     " is not a node of " + d.dir() + " ([0, " + std::to_string(n) +
                                     "))");
    }
  }
  for (size_t i = 0; i < ids.size();) {
    size_t end = i + 1;
    while (end < ids.size() && ids[end] == ids[end - 1] + 1) ++end;
    SKIFF_RETURN_IF_ERROR(d.ReadFeatureRows(ids[i], static_cast<int64_t>(end - i), out + i * dim));
    i = end;
  }
  return Status::Ok();
}

nb::object ReadRowsOf(const DatasetHandle& h, Ids ids, bool torch) {
  const format::Dataset& d = Get(h);
  const auto dim = static_cast<size_t>(d.manifest().feature_dim);
  std::vector<float> rows(ids.shape(0) * dim);
  Status status;
  {
    nb::gil_scoped_release released;
    status = ReadRows(d, {ids.data(), ids.shape(0)}, rows.data());
  }
  ThrowIfError(status);
  const size_t n = ids.shape(0);
  return Owned(std::move(rows), {n, dim}, torch);
}

std::vector<std::string> RawIds(const DatasetHandle& h, Ids ids) {
  const format::Dataset& d = Get(h);
  Result<std::vector<std::string>> raw = Status::Internal("not read");
  {
    nb::gil_scoped_release released;
    raw = train::RawIdsOf(d, {ids.data(), ids.shape(0)});
  }
  return ValueOrThrow(std::move(raw));
}

void Verify(const DatasetHandle& h) {
  const format::Dataset& d = Get(h);
  Status status;
  {
    nb::gil_scoped_release released;
    status = d.VerifyAll();
  }
  ThrowIfError(status);
}

// The whole CSR (offsets, neighbours widened to int64), verified.
nb::tuple Csr(const DatasetHandle& h) {
  const format::Dataset& d = Get(h);
  Result<std::vector<int64_t>> offsets = Status::Internal("not read");
  Result<std::vector<int64_t>> neighbors = Status::Internal("not read");
  {
    nb::gil_scoped_release released;
    offsets = d.LoadOffsets();
    if (offsets.ok()) neighbors = d.LoadNeighbors();
  }
  std::vector<int64_t> o = ValueOrThrow(std::move(offsets));
  std::vector<int64_t> v = ValueOrThrow(std::move(neighbors));
  const size_t no = o.size(), nv = v.size();
  return nb::make_tuple(Owned(std::move(o), {no}), Owned(std::move(v), {nv}));
}

nb::object Boundaries(const DatasetHandle& h) {
  const format::Manifest& m = Get(h).manifest();
  std::vector<int64_t> b =
      m.partitions ? m.partitions->boundaries : std::vector<int64_t>{0, m.num_nodes};
  const size_t n = b.size();
  return Owned(std::move(b), {n});
}

}  // namespace

void BindDataset(nb::module_& m) {
  nb::class_<DatasetHandle>(m, "Dataset")
      .def_static("open", &Open, nb::arg("path"),
                  "Opens a Skiff dataset directory (manifest and checksummed files).")
      .def_prop_ro("path", [](const DatasetHandle& h) { return Get(h).dir(); })
      .def_prop_ro("name", [](const DatasetHandle& h) { return Get(h).manifest().name; })
      .def_prop_ro("num_nodes", [](const DatasetHandle& h) { return Get(h).manifest().num_nodes; })
      .def_prop_ro("num_edges", [](const DatasetHandle& h) { return Get(h).manifest().num_edges; })
      .def_prop_ro("feature_dim",
                   [](const DatasetHandle& h) { return Get(h).manifest().feature_dim; })
      .def_prop_ro("feature_dtype",
                   [](const DatasetHandle& h) {
                     return std::string(format::DTypeName(Get(h).manifest().feature_dtype));
                   })
      .def_prop_ro("num_classes",
                   [](const DatasetHandle& h) { return Get(h).manifest().num_classes; })
      .def_prop_ro("undirected",
                   [](const DatasetHandle& h) { return Get(h).manifest().undirected; })
      .def_prop_ro("has_id_map",
                   [](const DatasetHandle& h) { return Get(h).manifest().has_id_map; })
      .def_prop_ro("num_partitions",
                   [](const DatasetHandle& h) {
                     const format::Manifest& m = Get(h).manifest();
                     return m.partitions ? m.partitions->num_partitions : 0u;
                   })
      .def_prop_ro("partition_algorithm",
                   [](const DatasetHandle& h) {
                     const format::Manifest& m = Get(h).manifest();
                     return m.partitions ? m.partitions->algorithm : std::string();
                   })
      .def("partition_boundaries", &Boundaries)
      .def("csr", &Csr)
      .def("split", &Split, nb::arg("name"))
      .def("labels", &Labels)
      .def("read_rows", &ReadRowsOf, nb::arg("ids"), nb::arg("torch") = false)
      .def("raw_ids", &RawIds, nb::arg("ids"))
      .def("verify", &Verify)
      .def("files_bytes", [](const DatasetHandle& h) {
        uint64_t bytes = 0;
        for (const auto& [name, info] : Get(h).manifest().files) bytes += info.data_bytes;
        return bytes;
      });
}

}  // namespace skiff::python
