#include "skiff/sampler/feature_source.h"

#include <cstring>
#include <string>

namespace skiff::sampler {

Result<std::unique_ptr<InMemoryFeatures>> InMemoryFeatures::FromMatrix(std::vector<float> features,
                                                                       int64_t dim) {
  if (dim <= 0 || features.size() % static_cast<size_t>(dim) != 0) {
    return Status::InvalidArgument("feature matrix of " + std::to_string(features.size()) +
                                   " values is not a whole number of rows of dimension " +
                                   std::to_string(dim));
  }
  return std::unique_ptr<InMemoryFeatures>(new InMemoryFeatures(std::move(features), dim));
}

Result<std::unique_ptr<InMemoryFeatures>> InMemoryFeatures::Load(const format::Dataset& dataset) {
  SKIFF_ASSIGN_OR_RETURN(auto features, dataset.LoadFeatures());
  return FromMatrix(std::move(features), dataset.manifest().feature_dim);
}

Status InMemoryFeatures::Gather(std::span<const int64_t> nodes, float* out) const {
  const size_t row_bytes = static_cast<size_t>(dim_) * sizeof(float);
  for (size_t i = 0; i < nodes.size(); ++i) {
    SKIFF_CHECK(nodes[i] >= 0 && nodes[i] < num_nodes_);
    std::memcpy(out + i * dim_, features_.data() + nodes[i] * dim_, row_bytes);
  }
  return Status::Ok();
}

void NormalizeRowsToSumOne(float* rows, int64_t count, int64_t dim) {
  for (int64_t v = 0; v < count; ++v) {
    float* row = rows + v * dim;
    double sum = 0;
    for (int64_t k = 0; k < dim; ++k) sum += row[k];
    if (sum == 0) continue;
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t k = 0; k < dim; ++k) row[k] *= inv;
  }
}

}  // namespace skiff::sampler
