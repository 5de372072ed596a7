// GraphSource: read access to a CSR graph by rows, the only way the partitioner sees a graph.
//
// The partitioner streams a graph in chunks of rows and never holds the whole edge array, so the
// same code runs on an in-memory CSR (unit tests, small graphs) and on a dataset on disk whose
// graph.offsets / graph.neighbors are read piecewise through ChecksummedFileReader::ReadAt (every
// block verified). Rows may be requested in any order; consecutive vertex IDs in a request are
// coalesced into one read.
//
// Thread safety: ReadRows is const and may be called from several threads at once (each with its
// own RowChunk).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/status.h"

namespace skiff::partition {

// Rows of a set of vertices: row i belongs to vertices[i] and holds
// neighbors[row_begin[i] .. row_begin[i+1]).
struct RowChunk {
  std::vector<int64_t> vertices;
  std::vector<int64_t> row_begin;  // size vertices.size() + 1
  std::vector<int64_t> neighbors;

  size_t size() const { return vertices.size(); }
  std::span<const int64_t> Row(size_t i) const {
    return {neighbors.data() + row_begin[i], neighbors.data() + row_begin[i + 1]};
  }
  uint64_t MemoryBytes() const {
    return (vertices.capacity() + row_begin.capacity() + neighbors.capacity()) * sizeof(int64_t);
  }
};

class GraphSource {
 public:
  virtual ~GraphSource() = default;
  virtual int64_t num_nodes() const = 0;
  virtual int64_t num_edges() const = 0;  // stored (directed) edges
  // Replaces `chunk` with the rows of `vertices` (each in [0, num_nodes)), in the given order.
  // Returns Corruption (naming the file and byte offset) when offsets are not monotone or a
  // neighbour ID is out of range, IOError / Corruption from the underlying reads.
  virtual Status ReadRows(std::span<const int64_t> vertices, RowChunk* chunk) const = 0;

  // Returns how many leading vertices of `vertices` (at least one, when not empty) have rows
  // holding at most `max_edges` edges together, so callers can size chunks by edges on skewed
  // graphs. Reads offsets only. Errors as ReadRows.
  Result<size_t> RowsWithin(std::span<const int64_t> vertices, int64_t max_edges) const;

 protected:
  // Degree of each vertex (offsets only).
  virtual Status ReadDegrees(std::span<const int64_t> vertices,
                             std::vector<int64_t>* degrees) const = 0;
};

// A CSR held in memory. The vectors are borrowed and must outlive the source; offsets has size
// N+1, offsets[0] == 0, offsets[N] == neighbors.size().
class InMemoryGraphSource final : public GraphSource {
 public:
  InMemoryGraphSource(const std::vector<int64_t>& offsets, const std::vector<int64_t>& neighbors);
  int64_t num_nodes() const override { return static_cast<int64_t>(offsets_.size()) - 1; }
  int64_t num_edges() const override { return static_cast<int64_t>(neighbors_.size()); }
  Status ReadRows(std::span<const int64_t> vertices, RowChunk* chunk) const override;

 protected:
  Status ReadDegrees(std::span<const int64_t> vertices,
                     std::vector<int64_t>* degrees) const override;

 private:
  const std::vector<int64_t>& offsets_;
  const std::vector<int64_t>& neighbors_;
};

// The CSR of an opened dataset (graph.offsets / graph.neighbors), read on demand. `dataset` must
// outlive the source. Returns NotFound if the dataset lacks the graph files; InvalidArgument for a
// shard (format/shard.h), which holds one rank's rows.
Result<std::unique_ptr<GraphSource>> OpenDatasetGraphSource(const format::Dataset& dataset);

// The CSR held in a pair of checksummed files (int64 offsets; int32 or int64 neighbours when
// `wide_neighbors`). The readers are borrowed and must outlive the source.
std::unique_ptr<GraphSource> MakeFileGraphSource(const format::ChecksummedFileReader* offsets,
                                                 const format::ChecksummedFileReader* neighbors,
                                                 int64_t num_nodes, int64_t num_edges,
                                                 bool wide_neighbors);

}  // namespace skiff::partition
