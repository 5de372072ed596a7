#include "skiff/model/model.h"

#include <algorithm>
#include <utility>

#include "skiff/enum_names.h"

#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/elementwise.h"

namespace skiff::model {

namespace {}  // namespace

const char* ModelKindName(ModelKind kind) { return NameOf(kModelKindNames, kind); }

Result<ModelKind> ParseModelKind(const std::string& name) {
  return ParseName(kModelKindNames, "model", name);
}

InputAggregation InputAggregationOf(const ModelConfig& config) {
  return config.kind == ModelKind::kSage ? InputAggregation::kMean : InputAggregation::kNone;
}

bool ActivatesInPlace(const ModelConfig& config) {
  return config.activation == Activation::kRelu && config.norm == Norm::kNone;
}

float FirstLayerDropout(const ModelConfig& config) {
  return config.input_dropout >= 0.0f ? config.input_dropout : config.dropout;
}

uint64_t FirstLayerDropoutSeed(uint64_t dropout_seed) {
  return cpu::DropoutHash(dropout_seed, 0);  // layer 0, stream 0 (cpu_model.cpp: LayerSeed)
}

void AggregateFirstLayerInput(const sampler::Block& block, const float* rows, int64_t dim,
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

Status Model::ForwardAggregated(const sampler::MiniBatch& /*batch*/, const float* /*dst_rows*/,
                                const float* /*aggregated*/, bool /*training*/,
                                uint64_t /*dropout_seed*/, std::vector<float>* /*logits*/,
                                std::vector<float>* /*embeddings*/) {
  return Status::Unavailable(std::string(ModelKindName(config_.kind)) +
                             " model on this device does not take aggregated input");
}

Status Model::ForwardInput(const BatchInput& input, bool training, uint64_t dropout_seed,
                           std::vector<float>* logits, std::vector<float>* embeddings) {
  SKIFF_CHECK(input.batch != nullptr);
  if (input.sample != nullptr) {
    return ForwardDeviceSampled(*input.batch, *input.sample, training, dropout_seed, logits,
                                embeddings);
  }
  if (input.aggregated == nullptr) {
    return Forward(*input.batch, input.x, training, dropout_seed, logits, embeddings);
  }
  return ForwardAggregated(*input.batch, input.x, input.aggregated, training, dropout_seed, logits,
                           embeddings);
}

namespace {

// Adds the softmax cross-entropy of `logits` against `labels` to `totals`; writes its gradient.
void AddLoss(const std::vector<float>& logits, const std::vector<int32_t>& labels, int64_t classes,
             std::vector<float>* grad, LossTotals* totals) {
  const auto rows = static_cast<int64_t>(labels.size());
  grad->resize(logits.size());
  int64_t correct = 0, labelled = 0;
  const float loss =
      cpu::SoftmaxCrossEntropy(rows, classes, logits.data(), labels.data(), grad->data(), &correct);
  for (int32_t l : labels) labelled += (l >= 0);
  totals->loss_sum += static_cast<double>(loss) * static_cast<double>(labelled);
  totals->labelled += labelled;
  totals->correct += correct;
}

}  // namespace

Status Model::TrainStep(const BatchInput& input, uint64_t dropout_seed, Optimizer& optimizer) {
  SKIFF_RETURN_IF_ERROR(ComputeGradients(input, dropout_seed));
  return optimizer.Step();
}

Status Model::ComputeGradients(const BatchInput& input, uint64_t dropout_seed) {
  SKIFF_RETURN_IF_ERROR(ForwardInput(input, /*training=*/true, dropout_seed, &step_logits_));
  AddLoss(step_logits_, input.batch->labels, config_.num_classes, &step_grad_, &totals_);
  ZeroGrad();
  return Backward(step_grad_.data());
}

namespace {

// Calls f(grad, sum, n) for every parameter of `params`, with its n gradients and its place in
// `sum` (the parameters' gradients laid end to end).
template <typename F>
void ForEachGradient(const std::vector<Parameter>& params, std::span<float> sum, F f) {
  size_t offset = 0;
  for (const Parameter& p : params) {
    const auto n = static_cast<size_t>(p.size());
    SKIFF_CHECK(offset + n <= sum.size());
    f(p.grad, sum.data() + offset, n);
    offset += n;
  }
}

}  // namespace

std::span<float> Model::host_step_sum() {
  if (step_sum_.empty()) step_sum_.assign(static_cast<size_t>(NumParameters()), 0.0f);
  return step_sum_;
}

Status Model::AccumulateGradients(const BatchInput& input, uint64_t dropout_seed) {
  SKIFF_RETURN_IF_ERROR(ComputeGradients(input, dropout_seed));
  ForEachGradient(Parameters(), host_step_sum(), [this](const float* grad, float* sum, size_t n) {
    for (size_t i = 0; i < n; ++i) sum[i] = step_empty_ ? grad[i] : sum[i] + grad[i];
  });
  step_empty_ = false;
  return Status::Ok();
}

Status Model::LoadStepGradients(float scale) {
  const std::span<float> sum = host_step_sum();
  ForEachGradient(Parameters(), sum, [scale](float* grad, const float* step, size_t n) {
    for (size_t i = 0; i < n; ++i) grad[i] = scale == 1.0f ? step[i] : step[i] * scale;
  });
  std::fill(sum.begin(), sum.end(), 0.0f);
  step_empty_ = true;
  return Status::Ok();
}

namespace {

// Copies rows `rows` (each `dim` floats) of `from` into *to, in order.
void GatherRows(const float* from, const std::vector<int64_t>& rows, int64_t dim,
                std::vector<float>* to) {
  to->resize(rows.size() * static_cast<size_t>(dim));
  for (size_t r = 0; r < rows.size(); ++r) {
    std::copy_n(from + rows[r] * dim, dim, to->data() + r * static_cast<size_t>(dim));
  }
}

// The stream of part p's dropout masks (apart from the layers' streams, 2 * layer + stream).
constexpr uint64_t kPartDropoutStream = uint64_t{1} << 32;

}  // namespace

Status Model::ForwardPart(const BatchInput& whole, int64_t first, int64_t count, bool training,
                          uint64_t dropout_seed, std::vector<float>* logits,
                          std::vector<float>* embeddings) {
  sampler::SliceBatch(*whole.batch, first, count, &part_);
  const int64_t dim = LayerInputDim(0);
  BatchInput in{.batch = &part_.batch};
  if (whole.x != nullptr) {
    GatherRows(whole.x, part_.input_rows, dim, &part_x_);
    in.x = part_x_.data();
  }
  if (whole.aggregated != nullptr) {
    GatherRows(whole.aggregated, part_.input_rows, dim, &part_aggregated_);
    in.aggregated = part_aggregated_.data();
  }
  return ForwardInput(in, training, dropout_seed, logits, embeddings);
}

Status Model::ComputeGradientsInParts(const BatchInput& input, int parts, uint64_t dropout_seed) {
  SKIFF_CHECK(input.batch != nullptr);
  const sampler::MiniBatch& whole = *input.batch;
  const auto seeds = static_cast<int64_t>(whole.seeds.size());
  if (parts <= 1 || input.sample != nullptr || seeds < 2) {
    return ComputeGradients(input, dropout_seed);
  }
  if (whole.labels.size() != whole.seeds.size()) {
    return Status::InvalidArgument("batch of " + std::to_string(seeds) + " seeds with " +
                                   std::to_string(whole.labels.size()) + " labels");
  }
  const int64_t labelled = std::count_if(whole.labels.begin(), whole.labels.end(),
                                         [](int32_t label) { return label >= 0; });
  const int64_t count = std::min<int64_t>(parts, seeds);
  ZeroGrad();
  for (int64_t p = 0; p < count; ++p) {
    const int64_t first = seeds * p / count, last = seeds * (p + 1) / count;
    const uint64_t seed = cpu::DropoutHash(dropout_seed, kPartDropoutStream + uint64_t(p));
    SKIFF_RETURN_IF_ERROR(
        ForwardPart(input, first, last - first, /*training=*/true, seed, &step_logits_, nullptr));
    const int64_t before = totals_.labelled;
    AddLoss(step_logits_, part_.batch.labels, config_.num_classes, &step_grad_, &totals_);
    // The part's gradient is its mean over its labelled seeds: weighted to the batch's mean.
    const int64_t part_labelled = totals_.labelled - before;
    if (part_labelled == 0) continue;  // no loss, no gradient
    const float weight = static_cast<float>(part_labelled) / static_cast<float>(labelled);
    for (float& g : step_grad_) g *= weight;
    SKIFF_RETURN_IF_ERROR(Backward(step_grad_.data()));
  }
  return Status::Ok();
}

Status Model::ForwardInParts(const BatchInput& input, int parts, std::vector<float>* logits,
                             std::vector<float>* embeddings) {
  SKIFF_CHECK(input.batch != nullptr);
  const auto seeds = static_cast<int64_t>(input.batch->seeds.size());
  if (parts <= 1 || input.sample != nullptr || seeds < 2) {
    return ForwardInput(input, /*training=*/false, 0, logits, embeddings);
  }
  const int64_t count = std::min<int64_t>(parts, seeds);
  logits->clear();
  if (embeddings != nullptr) embeddings->clear();
  for (int64_t p = 0; p < count; ++p) {
    const int64_t first = seeds * p / count, last = seeds * (p + 1) / count;
    SKIFF_RETURN_IF_ERROR(ForwardPart(input, first, last - first, /*training=*/false, 0,
                                      &part_logits_,
                                      embeddings != nullptr ? &part_embeddings_ : nullptr));
    logits->insert(logits->end(), part_logits_.begin(), part_logits_.end());
    if (embeddings != nullptr) {
      embeddings->insert(embeddings->end(), part_embeddings_.begin(), part_embeddings_.end());
    }
  }
  return Status::Ok();
}

Status Model::EvalStepInParts(const BatchInput& input, int parts) {
  if (parts <= 1) return EvalStep(input);
  SKIFF_RETURN_IF_ERROR(ForwardInParts(input, parts, &step_logits_));
  AddLoss(step_logits_, input.batch->labels, config_.num_classes, &step_grad_, &totals_);
  return Status::Ok();
}

Status Model::EvalStep(const BatchInput& input) {
  SKIFF_RETURN_IF_ERROR(ForwardInput(input, /*training=*/false, 0, &step_logits_));
  AddLoss(step_logits_, input.batch->labels, config_.num_classes, &step_grad_, &totals_);
  return Status::Ok();
}

Result<LossTotals> Model::TakeLossTotals() { return std::exchange(totals_, LossTotals{}); }

Result<bool> Model::HoldFeatures(const sampler::FeatureSource& /*features*/,
                                 uint64_t /*device_bytes*/) {
  return false;
}

Status Model::ForwardDeviceSampled(const sampler::MiniBatch& /*batch*/,
                                   const DeviceSampling& /*sample*/, bool /*training*/,
                                   uint64_t /*dropout_seed*/, std::vector<float>* /*logits*/,
                                   std::vector<float>* /*embeddings*/) {
  return Status::InvalidArgument("a batch to sample on the device, given to a model that does not");
}

Result<bool> Model::HoldGraph(const sampler::CsrSource& /*graph*/, uint64_t /*device_bytes*/,
                              int /*max_fanout*/) {
  return false;
}

Status Model::ApplyUpdate(const OptimizerConfig& config, int64_t step,
                          std::vector<std::vector<float>>& state) {
  UpdateOnHost(config, step, Parameters(), state);
  return Status::Ok();
}

Status Model::ReadOptimizerState(std::vector<std::vector<float>>& /*state*/) {
  return Status::Ok();
}

void Model::ZeroGrad() {
  for (const Parameter& p : Parameters()) std::fill(p.grad, p.grad + p.size(), 0.0f);
}

int64_t Model::NumParameters() {
  int64_t total = 0;
  for (const Parameter& p : Parameters()) total += p.size();
  return total;
}

int64_t Model::EmbeddingDim() const { return LayerInputDim(config_.num_layers - 1); }

int64_t Model::LayerInputDim(int layer) const {
  SKIFF_CHECK(layer >= 0 && layer < config_.num_layers);
  if (layer == 0) return config_.in_dim;
  return config_.kind == ModelKind::kGat ? config_.hidden_dim * config_.heads : config_.hidden_dim;
}

int64_t Model::LayerOutputDim(int layer) const {
  SKIFF_CHECK(layer >= 0 && layer < config_.num_layers);
  return layer == config_.num_layers - 1 ? config_.num_classes : LayerInputDim(layer + 1);
}

Status Model::ForwardLayer(int /*layer*/, const sampler::Block& /*block*/, const float* /*x_src*/,
                           std::vector<float>* /*out*/) {
  return Status::Unavailable(std::string(ModelKindName(config_.kind)) +
                             " model on this device does not run layer by layer");
}

}  // namespace skiff::model
