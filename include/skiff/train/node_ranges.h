// NodeRanges: which rank of an owned-partition job owns which node. Rank r owns the contiguous node
// IDs [begin(r), end(r)): a range of the dataset's GREM partitions (partition order on disk, so a
// range of IDs), cut where the training nodes are closest to balanced (PartitionOwners in
// train/ownership_traffic.h). The owner stores the node's adjacency list and feature row and
// trains the training seeds it owns (docs/distributed.md, "Owned partitions").
//
// Thread safety: a value type, immutable after construction.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/status.h"

namespace skiff::train {

class NodeRanges {
 public:
  // Ranks' first nodes: first[r] for r in [0, W], first[0] == 0, non-decreasing, first[W] = N.
  // InvalidArgument otherwise.
  static Result<NodeRanges> FromBoundaries(std::vector<int64_t> first);
  // `ranks` ranges of the dataset's partitions balanced by the training nodes `train`
  // (ascending). InvalidArgument, saying what to do, for an unpartitioned dataset or one with fewer
  // partitions than ranks.
  static Result<NodeRanges> ForDataset(const format::Dataset& dataset,
                                       std::span<const int64_t> train, int ranks);

  int size() const { return static_cast<int>(first_.size()) - 1; }
  int64_t num_nodes() const { return first_.back(); }
  int64_t begin(int rank) const { return first_[static_cast<size_t>(rank)]; }
  int64_t end(int rank) const { return first_[static_cast<size_t>(rank) + 1]; }
  // The rank that owns node v (in [0, num_nodes())).
  int OwnerOf(int64_t v) const;
  const std::vector<int64_t>& first() const { return first_; }

 private:
  explicit NodeRanges(std::vector<int64_t> first) : first_(std::move(first)) {}
  std::vector<int64_t> first_;
};

}  // namespace skiff::train
