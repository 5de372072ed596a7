#include "skiff/partition/graph_source.h"

#include <algorithm>
#include <functional>
#include <string>

namespace skiff::partition {

InMemoryGraphSource::InMemoryGraphSource(const std::vector<int64_t>& offsets,
                                         const std::vector<int64_t>& neighbors)
    : offsets_(offsets), neighbors_(neighbors) {
  SKIFF_CHECK(!offsets_.empty());
  SKIFF_CHECK(offsets_.front() == 0);
  SKIFF_CHECK(offsets_.back() == static_cast<int64_t>(neighbors_.size()));
}

Status InMemoryGraphSource::ReadRows(std::span<const int64_t> vertices, RowChunk* chunk) const {
  chunk->vertices.assign(vertices.begin(), vertices.end());
  chunk->row_begin.resize(vertices.size() + 1);
  chunk->neighbors.clear();
  chunk->row_begin[0] = 0;
  const int64_t n = num_nodes();
  for (size_t i = 0; i < vertices.size(); ++i) {
    const int64_t v = vertices[i];
    SKIFF_CHECK(v >= 0 && v < n);
    chunk->neighbors.insert(chunk->neighbors.end(), neighbors_.begin() + offsets_[v],
                            neighbors_.begin() + offsets_[v + 1]);
    chunk->row_begin[i + 1] = static_cast<int64_t>(chunk->neighbors.size());
  }
  return Status::Ok();
}

Result<size_t> GraphSource::RowsWithin(std::span<const int64_t> vertices, int64_t max_edges) const {
  if (vertices.empty()) return size_t{0};
  std::vector<int64_t> degrees;
  SKIFF_RETURN_IF_ERROR(ReadDegrees(vertices, &degrees));
  size_t count = 0;
  int64_t edges = 0;
  while (count < degrees.size() && (count == 0 || edges + degrees[count] <= max_edges)) {
    edges += degrees[count++];
  }
  return count;
}

Status InMemoryGraphSource::ReadDegrees(std::span<const int64_t> vertices,
                                        std::vector<int64_t>* degrees) const {
  degrees->resize(vertices.size());
  for (size_t i = 0; i < vertices.size(); ++i) {
    (*degrees)[i] = offsets_[vertices[i] + 1] - offsets_[vertices[i]];
  }
  return Status::Ok();
}

namespace {

class DatasetGraphSource final : public GraphSource {
 public:
  DatasetGraphSource(const format::ChecksummedFileReader* offsets,
                     const format::ChecksummedFileReader* neighbors, int64_t num_nodes,
                     int64_t num_edges, bool wide)
      : offsets_(offsets),
        neighbors_(neighbors),
        num_nodes_(num_nodes),
        num_edges_(num_edges),
        wide_(wide) {}

  int64_t num_nodes() const override { return num_nodes_; }
  int64_t num_edges() const override { return num_edges_; }

 protected:
  Status ReadDegrees(std::span<const int64_t> vertices,
                     std::vector<int64_t>* degrees) const override {
    degrees->resize(vertices.size());
    return ForEachRun(vertices, [&](size_t i, std::span<const int64_t> offs) {
      for (size_t r = 0; r + 1 < offs.size(); ++r) (*degrees)[i + r] = offs[r + 1] - offs[r];
      return Status::Ok();
    });
  }

 public:
  Status ReadRows(std::span<const int64_t> vertices, RowChunk* chunk) const override {
    chunk->vertices.assign(vertices.begin(), vertices.end());
    chunk->row_begin.resize(vertices.size() + 1);
    chunk->neighbors.clear();
    chunk->row_begin[0] = 0;
    std::vector<int32_t> narrow;
    return ForEachRun(vertices, [&](size_t i, std::span<const int64_t> offs) -> Status {
      const auto count = static_cast<int64_t>(offs.size()) - 1;
      const int64_t e0 = offs[0];
      const int64_t e1 = offs[count];
      const size_t base = chunk->neighbors.size();
      chunk->neighbors.resize(base + static_cast<size_t>(e1 - e0));
      if (e1 > e0) {
        if (wide_) {
          SKIFF_RETURN_IF_ERROR(neighbors_->ReadAt(static_cast<uint64_t>(e0) * 8,
                                                   static_cast<uint64_t>(e1 - e0) * 8,
                                                   chunk->neighbors.data() + base));
        } else {
          narrow.resize(static_cast<size_t>(e1 - e0));
          SKIFF_RETURN_IF_ERROR(neighbors_->ReadAt(
              static_cast<uint64_t>(e0) * 4, static_cast<uint64_t>(e1 - e0) * 4, narrow.data()));
          for (size_t t = 0; t < narrow.size(); ++t) chunk->neighbors[base + t] = narrow[t];
        }
      }
      for (int64_t t = 0; t < e1 - e0; ++t) {
        const int64_t u = chunk->neighbors[base + t];
        if (u < 0 || u >= num_nodes_) {
          return Status::Corruption(neighbors_->path() + ": byte offset " +
                                    std::to_string((e0 + t) * (wide_ ? 8 : 4)) + ": neighbour ID " +
                                    std::to_string(u) + " is outside [0, " +
                                    std::to_string(num_nodes_) + ")");
        }
      }
      for (int64_t r = 0; r < count; ++r) {
        chunk->row_begin[i + r + 1] = static_cast<int64_t>(base) + offs[r + 1] - e0;
      }
      return Status::Ok();
    });
  }

 private:
  // Calls fn(i, offs) for each run vertices[i .. i + n) of consecutive IDs, with the run's n + 1
  // row offsets (read with one request, and checked: non-decreasing,
  // within [0, num_edges], starting at 0 for node 0).
  Status ForEachRun(
      std::span<const int64_t> vertices,
      const std::function<Status(size_t i, std::span<const int64_t> offs)>& fn) const {
    std::vector<int64_t> offs;
    size_t i = 0;
    while (i < vertices.size()) {
      size_t j = i + 1;
      while (j < vertices.size() && vertices[j] == vertices[j - 1] + 1) ++j;
      const int64_t first = vertices[i];
      const auto count = static_cast<int64_t>(j - i);
      SKIFF_CHECK(first >= 0 && first + count <= num_nodes_);
      offs.resize(static_cast<size_t>(count + 1));
      SKIFF_RETURN_IF_ERROR(offsets_->ReadAt(static_cast<uint64_t>(first) * 8,
                                             static_cast<uint64_t>(count + 1) * 8, offs.data()));
      SKIFF_RETURN_IF_ERROR(CheckOffsets(first, offs));
      SKIFF_RETURN_IF_ERROR(fn(i, offs));
      i = j;
    }
    return Status::Ok();
  }
  // Corruption naming the offsets file and the byte offset of the first bad row offset.
  Status CheckOffsets(int64_t first, std::span<const int64_t> offs) const {
    for (size_t r = 0; r + 1 < offs.size(); ++r) {
      if (offs[r] < 0 || offs[r] > offs[r + 1] || offs[r + 1] > num_edges_) {
        return Status::Corruption(offsets_->path() + ": byte offset " +
                                  std::to_string((first + static_cast<int64_t>(r) + 1) * 8) +
                                  ": row offsets must be non-decreasing and within [0, " +
                                  std::to_string(num_edges_) + "], found " +
                                  std::to_string(offs[r]) + " then " + std::to_string(offs[r + 1]));
      }
    }
    if (first == 0 && offs[0] != 0) {
      return Status::Corruption(offsets_->path() + ": byte offset 0: first row offset must be 0");
    }
    return Status::Ok();
  }

  const format::ChecksummedFileReader* offsets_;
  const format::ChecksummedFileReader* neighbors_;
  const int64_t num_nodes_;
  const int64_t num_edges_;
  const bool wide_;
};

}  // namespace

Result<std::unique_ptr<GraphSource>> OpenDatasetGraphSource(const format::Dataset& dataset) {
  SKIFF_RETURN_IF_ERROR(dataset.RequireWhole("reading the whole graph"));
  SKIFF_ASSIGN_OR_RETURN(const format::ChecksummedFileReader* offsets,
                         dataset.File(format::kOffsetsFile));
  SKIFF_ASSIGN_OR_RETURN(const format::ChecksummedFileReader* neighbors,
                         dataset.File(format::kNeighborsFile));
  const auto& m = dataset.manifest();
  if (m.neighbor_dtype != format::DType::kInt32 && m.neighbor_dtype != format::DType::kInt64) {
    return Status::Corruption(dataset.dir() +
                              "/manifest.json: neighbor_dtype must be int32 or int64");
  }
  return MakeFileGraphSource(offsets, neighbors, m.num_nodes, m.num_edges,
                             m.neighbor_dtype == format::DType::kInt64);
}

std::unique_ptr<GraphSource> MakeFileGraphSource(const format::ChecksummedFileReader* offsets,
                                                 const format::ChecksummedFileReader* neighbors,
                                                 int64_t num_nodes, int64_t num_edges,
                                                 bool wide_neighbors) {
  return std::make_unique<DatasetGraphSource>(offsets, neighbors, num_nodes, num_edges,
                                              wide_neighbors);
}

}  // namespace skiff::partition
