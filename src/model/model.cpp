#include "skiff/model/model.h"

#include <algorithm>

#include "kernels/cpu/elementwise.h"

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

InputAggregation InputAggregationOf(const ModelConfig& config) {
  return config.kind == ModelKind::kSage ? InputAggregation::kMean : InputAggregation::kNone;
}

float FirstLayerDropout(const ModelConfig& config) {
  return config.input_dropout >= 0.0f ? config.input_dropout : config.dropout;
}

uint64_t FirstLayerDropoutSeed(uint64_t dropout_seed) {
  return cpu::DropoutHash(dropout_seed, 0);  // layer 0, stream 0 (cpu_model.cpp: LayerSeed)
}

void AggregateFirstLayerInput(const train::Block& block, const float* rows, int64_t dim,
                              float dropout, bool training, uint64_t dropout_seed, float* dst_rows,
                              float* aggregated) {
  const int64_t nd = block.num_dst;
  std::vector<float> dropped;
  if (training && dropout > 0.0f) {
    dropped.resize(static_cast<size_t>(block.num_src * dim));
    cpu::DropoutForward(block.num_src * dim, dropout, FirstLayerDropoutSeed(dropout_seed), rows,
                        dropped.data());
    rows = dropped.data();
  }
  std::copy(rows, rows + nd * dim, dst_rows);
  for (int64_t d = 0; d < nd; ++d) {
    float* out = aggregated + d * dim;
    std::fill(out, out + dim, 0.0f);
    const int64_t begin = block.indptr[static_cast<size_t>(d)];
    const int64_t end = block.indptr[static_cast<size_t>(d + 1)];
    for (int64_t e = begin; e < end; ++e) {
      const float w = 1.0f / static_cast<float>(end - begin);  // as cpu::CsrAggregateForward
      const float* x = rows + static_cast<int64_t>(block.indices[static_cast<size_t>(e)]) * dim;
      for (int64_t j = 0; j < dim; ++j) out[j] += w * x[j];
    }
  }
}

Status Model::ForwardAggregated(const train::MiniBatch& /*batch*/, const float* /*dst_rows*/,
                                const float* /*aggregated*/, bool /*training*/,
                                uint64_t /*dropout_seed*/, std::vector<float>* /*logits*/,
                                std::vector<float>* /*embeddings*/) {
  return Status::Unavailable(std::string(ModelKindName(config_.kind)) +
                             " model on this device does not take aggregated input");
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
