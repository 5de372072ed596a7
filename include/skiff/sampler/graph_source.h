// GraphSource: adjacency access for the neighbour sampler.
//
// The sampler never touches a CSR array directly; it asks a GraphSource for a node's degree and for
// the neighbours at chosen positions of its row. The in-memory implementation (InMemoryGraph) holds
// the dataset's CSR; an out-of-core implementation serves the same calls from resident partitions
// and fine-grained reads, so sampling code is shared by both.
//
// Thread safety: implementations must allow concurrent const calls from many sampler threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/prefetch.h"
#include "skiff/sampler/csr_source.h"
#include "skiff/status.h"

namespace skiff::sampler {

// What the sampler is about to read of one batch (GraphSource::WillExpand).
struct ExpandRequest {
  // The nodes are first expanded at this hop (0: the seeds); their rows are read for blocks
  // 0 .. fanouts.size()-1-hop. hop == fanouts.size(): the outermost hop, never expanded, whose
  // degrees alone are asked for (the sampler records degrees for GCN).
  int hop = 0;
  uint64_t draw_key = 0;           // NodeDrawKey of the batch (skiff/neighbor_draw.h)
  std::span<const int> fanouts;    // the sampler's, input layer first
  std::span<const int64_t> nodes;  // global IDs, distinct
};

class GraphSource {
 public:
  virtual ~GraphSource() = default;
  virtual int64_t num_nodes() const = 0;
  // Number of (out-)neighbours of v; v must be in [0, num_nodes()).
  virtual int64_t Degree(int64_t v) const = 0;
  // Writes the neighbours at `positions` (each in [0, Degree(v)), ascending) of v's row into
  // out[0 .. positions.size()). IOError / Corruption from a backing store.
  virtual Status NeighborsAt(int64_t v, std::span<const int64_t> positions, int64_t* out) const = 0;
  // Writes v's whole row into *out (resized to Degree(v)).
  virtual Status Neighbors(int64_t v, std::vector<int64_t>* out) const;
  // A hint from the sampler: it is about to build hop `hop` of a batch (0 = expanding the seeds),
  // asking again for the rows of nodes of earlier hops, and nodes it is handed from now on that it
  // has not seen before belong to hop `hop` + 1. Sources that batch their reads by hop use it; the
  // default ignores it.
  virtual void BeginHop(int hop) const { (void)hop; }
  // Called by the sampler, for every batch, before it asks for the degrees and rows of the nodes
  // first expanded at each hop (even when there are none) and, when it records degrees, once more
  // for the outermost hop's degrees: a source whose rows live elsewhere fetches them here
  // (train/exchange_graph.h, which makes every rank of a job take part; so every rank samples the
  // same sequence of batches, one at a time). Errors end the batch. The default does nothing.
  virtual Status WillExpand(const ExpandRequest& request) const {
    (void)request;
    return Status::Ok();
  }
  // A hint from the sampler: it will soon ask for v's degree (`row` false) or, having asked for
  // its degree, its row (`row` true). Sources in memory start loading it (PrefetchRead); the
  // default ignores it.
  virtual void Prefetch(int64_t v, bool row) const {
    (void)v;
    (void)row;
  }
};

// The whole CSR in memory; also read range by range as a CsrSource.
class InMemoryGraph final : public GraphSource, public CsrSource {
 public:
  // Takes ownership of a CSR: offsets (size N+1, non-decreasing, offsets[0] == 0) and neighbors
  // (size offsets[N], each in [0, N)). InvalidArgument when malformed.
  static Result<std::unique_ptr<InMemoryGraph>> FromCsr(std::vector<int64_t> offsets,
                                                        std::vector<int64_t> neighbors);
  // Loads graph.offsets / graph.neighbors of an opened dataset (checksums verified).
  static Result<std::unique_ptr<InMemoryGraph>> Load(const format::Dataset& dataset);

  int64_t num_nodes() const override { return static_cast<int64_t>(offsets_.size()) - 1; }
  int64_t Degree(int64_t v) const override { return offsets_[v + 1] - offsets_[v]; }
  void Prefetch(int64_t v, bool row) const override {
    PrefetchRead(row ? static_cast<const void*>(neighbors_.data() + offsets_[v])
                     : static_cast<const void*>(offsets_.data() + v));
  }
  Status NeighborsAt(int64_t v, std::span<const int64_t> positions, int64_t* out) const override;
  Status Neighbors(int64_t v, std::vector<int64_t>* out) const override;
  uint64_t MemoryBytes() const { return (offsets_.size() + neighbors_.size()) * sizeof(int64_t); }
  // CsrSource (FromCsr checked the arrays).
  int64_t num_edges() const override { return static_cast<int64_t>(neighbors_.size()); }
  Status ReadOffsets(int64_t first, int64_t count, int64_t* out) const override;
  Status ReadNeighbors(int64_t first, int64_t count, int64_t* out) const override;
  std::string Describe() const override { return "an in-memory graph"; }

 private:
  InMemoryGraph(std::vector<int64_t> offsets, std::vector<int64_t> neighbors)
      : offsets_(std::move(offsets)), neighbors_(std::move(neighbors)) {}
  std::vector<int64_t> offsets_;
  std::vector<int64_t> neighbors_;
};

}  // namespace skiff::sampler
