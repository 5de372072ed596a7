#include "skiff/model/model.h"

#include <algorithm>

namespace skiff::model {

const char* ModelKindName(ModelKind kind) {
  switch (kind) {
    case ModelKind::kSage:
      return "sage";
    case ModelKind::kGcn:
      return "gcn";
    case ModelKind::kGat:
      return "gat";
  }
  return "unknown";
}

Result<ModelKind> ParseModelKind(const std::string& name) {
  if (name == "sage") return ModelKind::kSage;
  if (name == "gcn") return ModelKind::kGcn;
  if (name == "gat") return ModelKind::kGat;
  return Status::InvalidArgument("unknown model '" + name + "': expected sage, gcn or gat");
}

void Model::ZeroGrad() {
  for (const Parameter& p : Parameters()) std::fill(p.grad, p.grad + p.size(), 0.0f);
}

int64_t Model::NumParameters() {
  int64_t total = 0;
  for (const Parameter& p : Parameters()) total += p.size();
  return total;
}

int64_t Model::EmbeddingDim() const {
  if (config_.num_layers <= 1) return config_.in_dim;
  return config_.kind == ModelKind::kGat ? config_.hidden_dim * config_.heads : config_.hidden_dim;
}

}  // namespace skiff::model
