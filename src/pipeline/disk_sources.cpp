#include "skiff/pipeline/disk_sources.h"

namespace skiff::pipeline {
namespace {
std::vector<std::shared_ptr<const storage::PartitionPin>> NoPins(const BufferedGraph& graph) {
  return std::vector<std::shared_ptr<const storage::PartitionPin>>(graph.source().num_partitions());
}
}  // namespace

DiskGraphSource::DiskGraphSource(const BufferedGraph& graph) : graph_(graph), none_(NoPins(graph)) {
  SKIFF_CHECK_MSG(graph.mode() == SamplingMode::kExact, "disk sources read exact rows");
}

Status DiskGraphSource::Neighbors(int64_t v, std::vector<int64_t>* out) const {
  std::vector<int64_t> indptr;
  const int64_t node[1] = {v};
  return graph_.Neighbors(none_, node, &indptr, out);
}

Status DiskGraphSource::NeighborsAt(int64_t v, std::span<const int64_t> positions,
                                    int64_t* out) const {
  std::vector<int64_t> row;
  SKIFF_RETURN_IF_ERROR(Neighbors(v, &row));
  for (size_t i = 0; i < positions.size(); ++i) {
    SKIFF_CHECK(positions[i] >= 0 && positions[i] < static_cast<int64_t>(row.size()));
    out[i] = row[positions[i]];
  }
  return Status::Ok();
}

DiskFeatureSource::DiskFeatureSource(const BufferedGraph& graph)
    : graph_(graph), none_(NoPins(graph)) {
  SKIFF_CHECK_MSG(graph.mode() == SamplingMode::kExact, "disk sources read exact rows");
}

Status DiskFeatureSource::Gather(std::span<const int64_t> nodes, float* out) const {
  return graph_.Features(none_, nodes, out);
}

}  // namespace skiff::pipeline
