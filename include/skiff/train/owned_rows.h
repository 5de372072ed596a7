// OwnedRows: the adjacency lists and feature rows of the nodes one rank of an owned-partition job
// owns, [begin(), end()) (train/node_ranges.h), as the rank's exchange sources read them: for its
// own sampling and gathering, and to answer the other ranks (ExchangeGraph, ExchangeFeatures).
//
// Two implementations: InMemoryOwnedRows (below: the range loaded whole, the run without
// --memory) and pipeline::DiskOwnedRows (the range's partitions through a buffer pool within a
// --memory budget: those that fit pinned, the rest read at fine grain, O_DIRECT and checksummed).
// Both hand out the same values, so a job's batches do not depend on where its rows are.
//
// Thread safety: const calls from one thread at a time (the communicator's, which drives both
// exchange sources).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/status.h"

namespace skiff::train {

class OwnedRows {
 public:
  virtual ~OwnedRows() = default;
  virtual int64_t begin() const = 0;
  virtual int64_t end() const = 0;
  virtual int64_t feature_dim() const = 0;
  bool Owns(int64_t v) const { return v >= begin() && v < end(); }

  // The degree of an owned node (the offsets are always in memory).
  virtual int64_t Degree(int64_t v) const = 0;
  // Whether owned node v's list is in memory, so that NeighborsAt answers it without I/O.
  virtual bool ListInMemory(int64_t v) const = 0;
  // The neighbours at `positions` (ascending, each < Degree(v)) of v, whose list is in memory.
  virtual void NeighborsAt(int64_t v, std::span<const int64_t> positions, int64_t* out) const = 0;
  // The lists of the owned `nodes` as a CSR: (*indptr)[i] .. (*indptr)[i + 1] indexes *neighbors
  // (global IDs), reading what is not in memory. IOError / Corruption (naming the file) from disk.
  virtual Status Lists(std::span<const int64_t> nodes, std::vector<int64_t>* indptr,
                       std::vector<int64_t>* neighbors) const = 0;
  // The float32 feature rows of the owned `nodes`, after --feature-norm, row i to dst[i]
  // (feature_dim() floats each; dst.size() == nodes.size()): rows bound for several places are
  // read together (ExchangeFeatures: this rank's batch and its replies in one read). IOError /
  // Corruption from disk.
  virtual Status RowsTo(std::span<const int64_t> nodes, std::span<float* const> dst) const = 0;
  // From now on rows are scaled to sum 1 (`--feature-norm row`), as one process scales them. Call
  // before use.
  virtual void NormalizeRows() = 0;
};

class InMemoryOwnedRows final : public OwnedRows {
 public:
  // Nodes [begin, begin + offsets.size() - 1): their CSR (offsets from 0, neighbours global IDs)
  // and their feature rows (count x dim floats). InvalidArgument when the sizes disagree.
  static Result<std::unique_ptr<InMemoryOwnedRows>> FromRows(int64_t begin,
                                                             std::vector<int64_t> offsets,
                                                             std::vector<int64_t> neighbors,
                                                             std::vector<float> rows, int64_t dim);
  // Nodes [begin, end) of `dataset` (Dataset::LoadGraphRange, Dataset::ReadFeatureRows: that range
  // alone). The dataset's read errors (Corruption naming the file).
  static Result<std::unique_ptr<InMemoryOwnedRows>> Load(const format::Dataset& dataset,
                                                         int64_t begin, int64_t end);

  int64_t begin() const override { return begin_; }
  int64_t end() const override { return begin_ + static_cast<int64_t>(offsets_.size()) - 1; }
  int64_t feature_dim() const override { return dim_; }
  int64_t Degree(int64_t v) const override { return offsets_[Local(v) + 1] - offsets_[Local(v)]; }
  bool ListInMemory(int64_t) const override { return true; }
  void NeighborsAt(int64_t v, std::span<const int64_t> positions, int64_t* out) const override;
  Status Lists(std::span<const int64_t> nodes, std::vector<int64_t>* indptr,
               std::vector<int64_t>* neighbors) const override;
  Status RowsTo(std::span<const int64_t> nodes, std::span<float* const> dst) const override;
  void NormalizeRows() override;

 private:
  InMemoryOwnedRows(int64_t begin, std::vector<int64_t> offsets, std::vector<int64_t> neighbors,
                    std::vector<float> rows, int64_t dim)
      : begin_(begin),
        dim_(dim),
        offsets_(std::move(offsets)),
        neighbors_(std::move(neighbors)),
        rows_(std::move(rows)) {}
  size_t Local(int64_t v) const {
    SKIFF_CHECK_MSG(Owns(v), "a node this rank does not own");
    return static_cast<size_t>(v - begin_);
  }

  const int64_t begin_, dim_;
  std::vector<int64_t> offsets_;    // size count + 1, from 0
  std::vector<int64_t> neighbors_;  // global IDs
  std::vector<float> rows_;         // count x dim
};

}  // namespace skiff::train
