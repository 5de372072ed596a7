// Largest connected component (see include/skiff/convert/largest_component.h).
#include "skiff/convert/largest_component.h"

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "skiff/convert/id_map.h"
#include "skiff/progress.h"
#include "skiff/units.h"

namespace skiff::convert {
namespace {

using format::ChecksummedFileReader;
using format::ChecksummedFileWriter;
using format::DType;

// Streaming chunk sizes: nodes of graph.offsets / labels / splits, and neighbours, per read.
constexpr int64_t kChunkNodes = int64_t{1} << 16;
constexpr int64_t kChunkEdges = int64_t{1} << 20;
constexpr uint64_t kFeatureBufferBytes = uint64_t{4} << 20;
constexpr int64_t kWideNodes = int64_t{1} << 31;

// Reads `count` integers of `dtype` (int32 or int64) from element `first` of `file`, widened.
Status ReadInts(const ChecksummedFileReader& file, DType dtype, int64_t first, int64_t count,
                std::vector<int64_t>* out) {
  out->resize(static_cast<size_t>(count));
  if (count == 0) return Status::Ok();
  if (dtype == DType::kInt64) {
    return file.ReadAt(static_cast<uint64_t>(first) * 8, static_cast<uint64_t>(count) * 8,
                       out->data());
  }
  std::vector<int32_t> narrow(static_cast<size_t>(count));
  SKIFF_RETURN_IF_ERROR(file.ReadAt(static_cast<uint64_t>(first) * 4,
                                    static_cast<uint64_t>(count) * 4, narrow.data()));
  std::copy(narrow.begin(), narrow.end(), out->begin());
  return Status::Ok();
}

// Appends IDs to a file as int32 or int64.
class IdWriter {
 public:
  IdWriter(ChecksummedFileWriter* file, bool wide) : file_(file), wide_(wide) {}
  Status Append(std::span<const int64_t> ids) {
    if (wide_) return file_->Append(ids.data(), ids.size() * 8);
    narrow_.assign(ids.begin(), ids.end());
    return file_->Append(narrow_.data(), narrow_.size() * 4);
  }

 private:
  ChecksummedFileWriter* file_;
  const bool wide_;
  std::vector<int32_t> narrow_;
};

// Offsets [first, first + count] of the source: ascending, from 0, within [0, num_edges], ending
// at num_edges. The union-find and the rewrite index with them.
Status ReadOffsets(const format::Dataset& ds, int64_t first, int64_t count,
                   std::vector<int64_t>* offsets) {
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* file, ds.File(format::kOffsetsFile));
  SKIFF_RETURN_IF_ERROR(ReadInts(*file, DType::kInt64, first, count + 1, offsets));
  const auto& o = *offsets;
  const int64_t e = ds.manifest().num_edges;
  const bool last = first + count == ds.manifest().num_nodes;
  bool ok = (first != 0 || o[0] == 0) && o.back() <= e && (!last || o.back() == e);
  for (size_t i = 0; ok && i + 1 < o.size(); ++i) ok = o[i] <= o[i + 1];
  if (!ok) {
    return Status::Corruption(file->path() + ": offsets of nodes " + std::to_string(first) + ".." +
                              std::to_string(first + count) +
                              " decrease or leave [0, num_edges = " + std::to_string(e) + "]");
  }
  return Status::Ok();
}

// Streams the source's edges in file order as runs (src, its neighbours), reading at most
// kChunkEdges neighbours at a time (a longer row comes as several runs); checks that every
// neighbour lies in [0, N). `progress` advances by edges.
template <typename Visit>
Status ForEachEdgeRun(const format::Dataset& ds, Progress& progress, Visit visit) {
  const int64_t n = ds.manifest().num_nodes;
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* file, ds.File(format::kNeighborsFile));
  std::vector<int64_t> offsets, neighbors;
  for (int64_t first = 0; first < n; first += kChunkNodes) {
    const int64_t count = std::min(kChunkNodes, n - first);
    SKIFF_RETURN_IF_ERROR(ReadOffsets(ds, first, count, &offsets));
    size_t row = 0;
    for (int64_t begin = offsets[0]; begin < offsets.back();) {
      const int64_t end = std::min(begin + kChunkEdges, offsets.back());
      SKIFF_RETURN_IF_ERROR(
          ReadInts(*file, ds.manifest().neighbor_dtype, begin, end - begin, &neighbors));
      for (size_t k = 0; k < neighbors.size(); ++k) {
        if (neighbors[k] < 0 || neighbors[k] >= n) {
          return Status::Corruption(file->path() + ": edge " + std::to_string(begin + k) +
                                    " leads to node " + std::to_string(neighbors[k]) +
                                    ", outside [0, " + std::to_string(n) + ")");
        }
      }
      for (int64_t e = begin; e < end;) {
        while (offsets[row + 1] <= e) ++row;
        const int64_t run_end = std::min(offsets[row + 1], end);
        SKIFF_RETURN_IF_ERROR(visit(first + static_cast<int64_t>(row),
                                    std::span<const int64_t>(neighbors.data() + (e - begin),
                                                             static_cast<size_t>(run_end - e))));
        e = run_end;
      }
      progress.Set(static_cast<uint64_t>(end));
      begin = end;
    }
  }
  return Status::Ok();
}

// Disjoint sets over [0, n) in one array: parent[v] >= 0 links v towards its root, and a root
// holds minus the size of its set. Relabel() then turns the array into old ID -> new ID.
template <typename Id>
class DisjointSets {
 public:
  explicit DisjointSets(int64_t n) : parent_(static_cast<size_t>(n), Id{-1}) {}

  // Path halving: every other node on the way up is linked to its grandparent.
  Id Find(Id v) {
    while (parent_[v] >= 0) {
      const Id up = parent_[v];
      if (parent_[up] >= 0) parent_[v] = parent_[up];
      v = parent_[v];
    }
    return v;
  }
  // Union by size: the smaller set's root goes under the larger's.
  void Union(Id a, Id b) {
    a = Find(a);
    b = Find(b);
    if (a == b) return;
    if (parent_[a] > parent_[b]) std::swap(a, b);  // a is the larger set
    parent_[a] += parent_[b];
    parent_[b] = a;
  }

  struct Largest {
    int64_t num_components = 0;
    int64_t size = 0;
  };
  // Picks the largest set (ties: the one holding the smallest ID) and rewrites the array in
  // place: parent[v] = v's rank among that set's members (increasing v), or -1.
  Largest Relabel() {
    const auto n = static_cast<Id>(parent_.size());
    Largest largest;
    Id best = 0;
    for (Id v = 0; v < n; ++v) {
      if (parent_[v] >= 0) {
        parent_[v] = Find(v);  // every node now points at its root directly
      } else {
        ++largest.num_components;
      }
      const Id root = parent_[v] < 0 ? v : parent_[v];
      if (-static_cast<int64_t>(parent_[root]) > largest.size) {
        largest.size = -static_cast<int64_t>(parent_[root]);
        best = root;
      }
    }
    // Only entry v is written at step v, and later nodes compare their own entry with `best`.
    Id next = 0;
    for (Id v = 0; v < n; ++v) {
      const Id root = parent_[v] < 0 ? v : parent_[v];
      parent_[v] = root == best ? next++ : Id{-1};
    }
    return largest;
  }

  const std::vector<Id>& table() const { return parent_; }

 private:
  std::vector<Id> parent_;
};

// graph.offsets and graph.neighbors of the kept nodes, renumbered. Returns the edges kept.
template <typename Id>
Result<int64_t> WriteGraph(const format::Dataset& ds, const std::vector<Id>& new_id, bool wide,
                           format::DatasetWriter& out) {
  const int64_t n = ds.manifest().num_nodes;
  SKIFF_ASSIGN_OR_RETURN(auto offsets_file, out.CreateFile(format::kOffsetsFile));
  std::vector<int64_t> offsets, kept_offsets{0};
  int64_t edges_kept = 0;
  for (int64_t first = 0; first < n; first += kChunkNodes) {
    const int64_t count = std::min(kChunkNodes, n - first);
    SKIFF_RETURN_IF_ERROR(ReadOffsets(ds, first, count, &offsets));
    for (int64_t i = 0; i < count; ++i) {
      if (new_id[static_cast<size_t>(first + i)] < 0) continue;
      edges_kept += offsets[static_cast<size_t>(i) + 1] - offsets[static_cast<size_t>(i)];
      kept_offsets.push_back(edges_kept);
    }
    SKIFF_RETURN_IF_ERROR(offsets_file->Append(kept_offsets.data(), kept_offsets.size() * 8));
    kept_offsets.clear();
  }
  SKIFF_RETURN_IF_ERROR(out.FinishFile(*offsets_file));

  SKIFF_ASSIGN_OR_RETURN(auto neighbors_file, out.CreateFile(format::kNeighborsFile));
  IdWriter writer(neighbors_file.get(), wide);
  std::vector<int64_t> row;
  int64_t written = 0;
  Progress progress("rewrite component", static_cast<uint64_t>(ds.manifest().num_edges), "edges");
  SKIFF_RETURN_IF_ERROR(
      ForEachEdgeRun(ds, progress, [&](int64_t src, std::span<const int64_t> dsts) -> Status {
        if (new_id[static_cast<size_t>(src)] < 0) return Status::Ok();
        row.resize(dsts.size());
        for (size_t k = 0; k < dsts.size(); ++k) {
          row[k] = new_id[static_cast<size_t>(dsts[k])];
          SKIFF_CHECK_MSG(row[k] >= 0, "an edge leaves the component");
        }
        written += static_cast<int64_t>(row.size());
        return writer.Append(row);
      }));
  progress.Finish();
  SKIFF_CHECK(written == edges_kept);
  SKIFF_RETURN_IF_ERROR(out.FinishFile(*neighbors_file));
  return edges_kept;
}

// features.bin rows of the kept nodes, in their stored dtype; contiguous kept rows are read in one
// request, through a buffer of about kFeatureBufferBytes.
template <typename Id>
Status WriteFeatures(const format::Dataset& ds, const std::vector<Id>& new_id,
                     format::DatasetWriter& out) {
  const uint64_t row_bytes = ds.manifest().feature_row_bytes();
  if (row_bytes == 0) return out.WriteFile(format::kFeaturesFile, nullptr, 0);
  const int64_t n = ds.manifest().num_nodes;
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* in, ds.File(format::kFeaturesFile));
  SKIFF_ASSIGN_OR_RETURN(auto file, out.CreateFile(format::kFeaturesFile));
  const auto batch_rows =
      static_cast<int64_t>(std::max<uint64_t>(1, kFeatureBufferBytes / row_bytes));
  std::vector<char> buf(static_cast<size_t>(batch_rows) * row_bytes);
  auto kept = [&](int64_t v) { return new_id[static_cast<size_t>(v)] >= 0; };
  for (int64_t first = 0; first < n; first += batch_rows) {
    const int64_t last = std::min(n, first + batch_rows);
    uint64_t filled = 0;
    for (int64_t v = first; v < last;) {
      if (!kept(v)) {
        ++v;
        continue;
      }
      const uint64_t start = ds.FeatureRowOffset(v);
      int64_t w = v + 1;
      while (w < last && kept(w) && ds.FeatureRowOffset(w) == start + (w - v) * row_bytes) ++w;
      const uint64_t bytes = static_cast<uint64_t>(w - v) * row_bytes;
      SKIFF_RETURN_IF_ERROR(in->ReadAt(start, bytes, buf.data() + filled));
      filled += bytes;
      v = w;
    }
    SKIFF_RETURN_IF_ERROR(file->Append(buf.data(), filled));
  }
  return out.FinishFile(*file);
}

// labels.bin of the kept nodes; returns them (for drawing splits).
template <typename Id>
Result<std::vector<int32_t>> WriteLabels(const format::Dataset& ds, const std::vector<Id>& new_id,
                                         int64_t kept, format::DatasetWriter& out) {
  const int64_t n = ds.manifest().num_nodes;
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* in, ds.File(format::kLabelsFile));
  std::vector<int32_t> labels;
  labels.reserve(static_cast<size_t>(kept));
  std::vector<int32_t> chunk;
  for (int64_t first = 0; first < n; first += kChunkNodes) {
    const int64_t count = std::min(kChunkNodes, n - first);
    chunk.resize(static_cast<size_t>(count));
    SKIFF_RETURN_IF_ERROR(in->ReadAt(static_cast<uint64_t>(first) * 4,
                                     static_cast<uint64_t>(count) * 4, chunk.data()));
    for (int64_t i = 0; i < count; ++i) {
      if (new_id[static_cast<size_t>(first + i)] >= 0)
        labels.push_back(chunk[static_cast<size_t>(i)]);
    }
  }
  SKIFF_RETURN_IF_ERROR(
      out.WriteFile(format::kLabelsFile, labels.data(), labels.size() * sizeof(int32_t)));
  return labels;
}

// One split file of the source, restricted to kept nodes and renumbered (it stays ascending: the
// renumbering keeps order). Returns the number of IDs written.
template <typename Id>
Result<int64_t> FilterSplit(const format::Dataset& ds, const std::string& name,
                            const std::vector<Id>& new_id, format::DatasetWriter& out) {
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* in, ds.File(name));
  SKIFF_ASSIGN_OR_RETURN(auto file, out.CreateFile(name));
  const auto total = static_cast<int64_t>(in->info().data_bytes / 8);
  const int64_t n = ds.manifest().num_nodes;
  std::vector<int64_t> ids;
  int64_t written = 0;
  for (int64_t first = 0; first < total; first += kChunkNodes) {
    SKIFF_RETURN_IF_ERROR(
        ReadInts(*in, DType::kInt64, first, std::min(kChunkNodes, total - first), &ids));
    size_t kept = 0;
    for (const int64_t v : ids) {
      if (v < 0 || v >= n) {
        return Status::Corruption(in->path() + ": node ID " + std::to_string(v) +
                                  " is outside [0, " + std::to_string(n) + ")");
      }
      if (new_id[static_cast<size_t>(v)] >= 0) ids[kept++] = new_id[static_cast<size_t>(v)];
    }
    SKIFF_RETURN_IF_ERROR(file->Append(ids.data(), kept * 8));
    written += static_cast<int64_t>(kept);
  }
  SKIFF_RETURN_IF_ERROR(out.FinishFile(*file));
  return written;
}

template <typename Id>
Status WriteSplitsOfComponent(const format::Dataset& ds, const std::vector<Id>& new_id,
                              const std::vector<int32_t>& labels, const ComponentOptions& options,
                              format::DatasetWriter& out) {
  auto& m = out.manifest();
  if (!options.keep_splits) {
    SKIFF_ASSIGN_OR_RETURN(Splits splits, MakeSplits(options.split, labels, m.num_classes));
    return WriteSplits(out, splits);
  }
  SKIFF_ASSIGN_OR_RETURN(m.train_count, FilterSplit(ds, format::kTrainFile, new_id, out));
  SKIFF_ASSIGN_OR_RETURN(m.valid_count, FilterSplit(ds, format::kValidFile, new_id, out));
  SKIFF_ASSIGN_OR_RETURN(m.test_count, FilterSplit(ds, format::kTestFile, new_id, out));
  return Status::Ok();
}

// idmap/ of the kept nodes: new dense -> raw from the source's dense keys in order (kept ones get
// new IDs in that same order), raw -> new dense from its raw keys in byte order.
template <typename Id>
Status WriteIdMap(const format::Dataset& ds, const std::vector<Id>& new_id, int64_t kept,
                  format::DatasetWriter& out) {
  const std::string source_dir = ds.dir() + "/" + format::kIdMapDir;
  SKIFF_ASSIGN_OR_RETURN(auto map, IdMap::OpenReadOnly(source_dir));
  SKIFF_ASSIGN_OR_RETURN(
      auto load, IdMapBulkLoad::Create(out.temp_dir() + "/" + format::kIdMapDir, out.temp_dir()));
  const auto n = static_cast<int64_t>(new_id.size());
  int64_t expected = 0;
  SKIFF_RETURN_IF_ERROR(map->ForEachDense([&](int64_t dense, std::string_view raw) -> Status {
    if (dense != expected++ || dense >= n) {
      return Status::Corruption("ID map " + source_dir + ": dense ID " + std::to_string(dense) +
                                " where " + std::to_string(expected - 1) +
                                " was expected (IDs must be 0.." + std::to_string(n - 1) + ")");
    }
    return new_id[static_cast<size_t>(dense)] >= 0 ? load->AddDense(raw) : Status::Ok();
  }));
  SKIFF_RETURN_IF_ERROR(map->ForEachRaw([&](std::string_view raw, int64_t dense) -> Status {
    if (dense < 0 || dense >= n) {
      return Status::Corruption("ID map " + source_dir + ": a raw ID maps to " +
                                std::to_string(dense) + ", outside [0, " + std::to_string(n) + ")");
    }
    const int64_t id = new_id[static_cast<size_t>(dense)];
    return id >= 0 ? load->AddRaw(raw, id) : Status::Ok();
  }));
  if (load->dense_count() != kept) {
    return Status::Corruption("ID map " + source_dir + ": holds " +
                              std::to_string(load->dense_count()) +
                              " of the component's nodes, expected " + std::to_string(kept));
  }
  SKIFF_RETURN_IF_ERROR(load->Finish());
  return map->Close();
}

template <typename Id>
Result<ComponentSummary> Run(const format::Dataset& ds, format::DatasetWriter& out,
                             const ComponentOptions& options) {
  const auto& src = ds.manifest();
  DisjointSets<Id> sets(src.num_nodes);
  {
    Progress progress("find components", static_cast<uint64_t>(src.num_edges), "edges");
    SKIFF_RETURN_IF_ERROR(
        ForEachEdgeRun(ds, progress, [&](int64_t node, std::span<const int64_t> dsts) -> Status {
          for (const int64_t dst : dsts) sets.Union(static_cast<Id>(node), static_cast<Id>(dst));
          return Status::Ok();
        }));
    progress.Finish();
  }
  const auto largest = sets.Relabel();
  const std::vector<Id>& new_id = sets.table();
  ComponentSummary s;
  s.num_components = largest.num_components;
  s.nodes_kept = largest.size;
  s.nodes_dropped = src.num_nodes - largest.size;
  auto& m = out.manifest();
  m.num_nodes = s.nodes_kept;
  m.undirected = src.undirected;
  m.neighbor_dtype = s.nodes_kept >= kWideNodes ? DType::kInt64 : DType::kInt32;
  m.feature_dim = src.feature_dim;
  m.feature_dtype = src.feature_dtype;
  m.num_classes = src.num_classes;  // class numbers are kept, so their range is too
  SKIFF_ASSIGN_OR_RETURN(s.edges_kept,
                         WriteGraph(ds, new_id, m.neighbor_dtype == DType::kInt64, out));
  s.edges_dropped = src.num_edges - s.edges_kept;
  m.num_edges = s.edges_kept;
  SKIFF_RETURN_IF_ERROR(WriteFeatures(ds, new_id, out));
  SKIFF_ASSIGN_OR_RETURN(auto labels, WriteLabels(ds, new_id, s.nodes_kept, out));
  SKIFF_RETURN_IF_ERROR(WriteSplitsOfComponent(ds, new_id, labels, options, out));
  if (src.has_id_map) SKIFF_RETURN_IF_ERROR(WriteIdMap(ds, new_id, s.nodes_kept, out));
  m.has_id_map = src.has_id_map;
  return s;
}

}  // namespace

uint64_t ComponentBytesPerNode(int64_t num_nodes) {
  return (num_nodes < kWideNodes ? 4 : 8) + sizeof(int32_t);
}

Result<ComponentSummary> WriteLargestComponent(const format::Dataset& source,
                                               format::DatasetWriter& out,
                                               const ComponentOptions& options) {
  if (source.manifest().link_split) {
    // Dropping nodes would drop held-out pairs with them; the split belongs after the component.
    return Status::InvalidArgument(
        source.dir() +
        " has an edge split; take the largest component first and split its edges afterwards");
  }
  const int64_t n = source.manifest().num_nodes;
  const uint64_t per_node = ComponentBytesPerNode(n);
  const uint64_t need = static_cast<uint64_t>(n) * per_node;
  if (need > options.memory_bytes) {
    return Status::ResourceExhausted(
        "--largest-component: the components of " + std::to_string(n) + " nodes need " +
        FormatBytes(need) + " (" + std::to_string(per_node) +
        " bytes per node: the union-find table and the labels), more than the --memory budget "
        "of " +
        FormatBytes(options.memory_bytes) + "; raise --memory");
  }
  if (n < kWideNodes) return Run<int32_t>(source, out, options);
  return Run<int64_t>(source, out, options);
}

}  // namespace skiff::convert
