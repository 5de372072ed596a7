#include "skiff/train/owned_rows.h"

#include <cstring>
#include <string>

#include "skiff/sampler/feature_source.h"

namespace skiff::train {

Result<std::unique_ptr<InMemoryOwnedRows>> InMemoryOwnedRows::FromRows(
    int64_t begin, std::vector<int64_t> offsets, std::vector<int64_t> neighbors,
    std::vector<float> rows, int64_t dim) {
  const auto count = static_cast<int64_t>(offsets.size()) - 1;
  if (begin < 0 || count < 0 || offsets.front() != 0 ||
      offsets.back() != static_cast<int64_t>(neighbors.size())) {
    return Status::InvalidArgument("the rows of nodes from " + std::to_string(begin) + ": " +
                                   std::to_string(offsets.size()) + " offsets for " +
                                   std::to_string(neighbors.size()) + " neighbours");
  }
  if (dim < 1 || static_cast<int64_t>(rows.size()) != count * dim) {
    return Status::InvalidArgument(std::to_string(count) + " nodes from " + std::to_string(begin) +
                                   " but " + std::to_string(rows.size()) +
                                   " feature values of width " + std::to_string(dim));
  }
  return std::unique_ptr<InMemoryOwnedRows>(
      new InMemoryOwnedRows(begin, std::move(offsets), std::move(neighbors), std::move(rows), dim));
}

Result<std::unique_ptr<InMemoryOwnedRows>> InMemoryOwnedRows::Load(const format::Dataset& dataset,
                                                                   int64_t begin, int64_t end) {
  std::vector<int64_t> offsets, neighbors;
  SKIFF_RETURN_IF_ERROR(dataset.LoadGraphRange(begin, end - begin, &offsets, &neighbors));
  const int64_t dim = dataset.manifest().feature_dim;
  std::vector<float> rows(static_cast<size_t>((end - begin) * dim));
  SKIFF_RETURN_IF_ERROR(dataset.ReadFeatureRows(begin, end - begin, rows.data()));
  return FromRows(begin, std::move(offsets), std::move(neighbors), std::move(rows), dim);
}

void InMemoryOwnedRows::NeighborsAt(int64_t v, std::span<const int64_t> positions,
                                    int64_t* out) const {
  const int64_t* row = neighbors_.data() + offsets_[Local(v)];
  for (size_t i = 0; i < positions.size(); ++i) out[i] = row[positions[i]];
}

Status InMemoryOwnedRows::Lists(std::span<const int64_t> nodes, std::vector<int64_t>* indptr,
                                std::vector<int64_t>* neighbors) const {
  indptr->assign(1, 0);
  neighbors->clear();
  for (int64_t v : nodes) {
    const size_t at = Local(v);
    neighbors->insert(neighbors->end(), neighbors_.begin() + offsets_[at],
                      neighbors_.begin() + offsets_[at + 1]);
    indptr->push_back(static_cast<int64_t>(neighbors->size()));
  }
  return Status::Ok();
}

Status InMemoryOwnedRows::RowsTo(std::span<const int64_t> nodes,
                                 std::span<float* const> dst) const {
  SKIFF_CHECK(dst.size() == nodes.size());
  const auto width = static_cast<size_t>(dim_);
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::memcpy(dst[i], rows_.data() + Local(nodes[i]) * width, width * sizeof(float));
  }
  return Status::Ok();
}

void InMemoryOwnedRows::NormalizeRows() {
  sampler::NormalizeRowsToSumOne(rows_.data(), end() - begin_, dim_);
}

}  // namespace skiff::train
