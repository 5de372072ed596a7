#include "skiff/sampler/graph_source.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace skiff::sampler {

Status GraphSource::Neighbors(int64_t v, std::vector<int64_t>* out) const {
  std::vector<int64_t> positions(Degree(v));
  std::iota(positions.begin(), positions.end(), int64_t{0});
  out->resize(positions.size());
  return NeighborsAt(v, positions, out->data());
}

Result<std::unique_ptr<InMemoryGraph>> InMemoryGraph::FromCsr(std::vector<int64_t> offsets,
                                                              std::vector<int64_t> neighbors) {
  if (offsets.empty() || offsets[0] != 0) {
    return Status::InvalidArgument("CSR offsets must be non-empty and start at 0");
  }
  const int64_t n = static_cast<int64_t>(offsets.size()) - 1;
  for (int64_t v = 0; v < n; ++v) {
    if (offsets[v + 1] < offsets[v]) {
      return Status::InvalidArgument("CSR offsets decrease at node " + std::to_string(v));
    }
  }
  if (offsets[n] != static_cast<int64_t>(neighbors.size())) {
    return Status::InvalidArgument("CSR offsets end at " + std::to_string(offsets[n]) +
                                   " but there are " + std::to_string(neighbors.size()) +
                                   " neighbours");
  }
  for (size_t i = 0; i < neighbors.size(); ++i) {
    if (neighbors[i] < 0 || neighbors[i] >= n) {
      return Status::InvalidArgument("CSR neighbour " + std::to_string(i) + " = " +
                                     std::to_string(neighbors[i]) + " is not a node in [0, " +
                                     std::to_string(n) + ")");
    }
  }
  return std::unique_ptr<InMemoryGraph>(
      new InMemoryGraph(std::move(offsets), std::move(neighbors)));
}

Result<std::unique_ptr<InMemoryGraph>> InMemoryGraph::Load(const format::Dataset& dataset) {
  SKIFF_ASSIGN_OR_RETURN(auto offsets, dataset.LoadOffsets());
  SKIFF_ASSIGN_OR_RETURN(auto neighbors, dataset.LoadNeighbors());
  auto g = FromCsr(std::move(offsets), std::move(neighbors));
  if (!g.ok()) return g.status().WithContext("graph of dataset " + dataset.dir());
  return g;
}

Status InMemoryGraph::NeighborsAt(int64_t v, std::span<const int64_t> positions,
                                  int64_t* out) const {
  const int64_t* row = neighbors_.data() + offsets_[v];
  const int64_t degree = offsets_[v + 1] - offsets_[v];
  for (size_t i = 0; i < positions.size(); ++i) {
    SKIFF_CHECK(positions[i] >= 0 && positions[i] < degree);
    out[i] = row[positions[i]];
  }
  return Status::Ok();
}

Status InMemoryGraph::ReadOffsets(int64_t first, int64_t count, int64_t* out) const {
  SKIFF_CHECK(first >= 0 && count >= 0 && first + count <= num_nodes() + 1);
  std::copy_n(offsets_.begin() + first, count, out);
  return Status::Ok();
}

Status InMemoryGraph::ReadNeighbors(int64_t first, int64_t count, int64_t* out) const {
  SKIFF_CHECK(first >= 0 && count >= 0 && first + count <= num_edges());
  std::copy_n(neighbors_.begin() + first, count, out);
  return Status::Ok();
}

Status InMemoryGraph::Neighbors(int64_t v, std::vector<int64_t>* out) const {
  out->assign(neighbors_.begin() + offsets_[v], neighbors_.begin() + offsets_[v + 1]);
  return Status::Ok();
}

}  // namespace skiff::sampler
