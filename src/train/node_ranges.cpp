#include "skiff/train/node_ranges.h"

#include <algorithm>
#include <string>

#include "skiff/train/ownership_traffic.h"

namespace skiff::train {

Result<NodeRanges> NodeRanges::FromBoundaries(std::vector<int64_t> first) {
  if (first.size() < 2 || first.front() != 0) {
    return Status::InvalidArgument("node ranges must start at node 0 and name at least one rank");
  }
  for (size_t r = 1; r < first.size(); ++r) {
    if (first[r] < first[r - 1]) {
      return Status::InvalidArgument("node ranges decrease at rank " + std::to_string(r));
    }
  }
  return NodeRanges(std::move(first));
}

Result<NodeRanges> NodeRanges::ForDataset(const format::Dataset& dataset,
                                          std::span<const int64_t> train, int ranks) {
  const auto& partitions = dataset.manifest().partitions;
  if (!partitions.has_value()) {
    return Status::InvalidArgument(
        "--ownership partitions gives each rank a range of the dataset's partitions, and " +
        dataset.dir() + " is not partitioned: run skiff partition -k K (K >= the number of ranks)");
  }
  std::vector<int> first_partition;
  SKIFF_RETURN_IF_ERROR(
      PartitionOwners(partitions->boundaries, train, ranks, &first_partition).status());
  std::vector<int64_t> first;
  for (int p : first_partition) first.push_back(partitions->boundaries[static_cast<size_t>(p)]);
  return FromBoundaries(std::move(first));
}

int NodeRanges::OwnerOf(int64_t v) const {
  SKIFF_CHECK(v >= 0 && v < num_nodes());
  // The last rank whose first node is <= v (empty ranges are skipped: their first is the next's).
  const auto it = std::upper_bound(first_.begin(), first_.end() - 1, v);
  return static_cast<int>(it - first_.begin()) - 1;
}

}  // namespace skiff::train
