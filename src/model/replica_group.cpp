#include "skiff/model/replica_group.h"

#include <algorithm>
#include <utility>

namespace skiff::model {

Result<std::unique_ptr<ReplicaGroup>> ReplicaGroup::Create(
    std::vector<std::unique_ptr<Model>> replicas, SumAcross sum, int accumulate,
    std::string description) {
  if (replicas.empty()) return Status::InvalidArgument("a replica group needs a replica");
  SKIFF_CHECK(accumulate >= 1 && sum != nullptr);
  const ModelConfig& first = replicas.front()->config();
  for (const auto& r : replicas) {
    SKIFF_CHECK(r != nullptr);
    const ModelConfig& c = r->config();
    if (c.kind != first.kind || c.in_dim != first.in_dim || c.hidden_dim != first.hidden_dim ||
        c.num_classes != first.num_classes || c.num_layers != first.num_layers ||
        c.heads != first.heads || c.seed != first.seed) {
      return Status::InvalidArgument("the replicas of a group have different configs");
    }
  }
  return std::unique_ptr<ReplicaGroup>(
      new ReplicaGroup(std::move(replicas), std::move(sum), accumulate, std::move(description)));
}

Result<std::unique_ptr<ReplicaGroup>> ReplicaGroup::CreateOnHost(const ModelConfig& config,
                                                                 int count, int accumulate) {
  std::vector<std::unique_ptr<Model>> replicas;
  for (int g = 0; g < count; ++g) {
    SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<Model> replica, CreateCpu(config));
    replicas.push_back(std::move(replica));
  }
  SumAcross sum = [](std::span<Model* const> all) {
    std::span<float> total = all.front()->host_step_sum();
    for (size_t g = 1; g < all.size(); ++g) {
      const std::span<float> mine = all[g]->host_step_sum();
      SKIFF_CHECK(mine.size() == total.size());
      for (size_t i = 0; i < total.size(); ++i) total[i] += mine[i];
    }
    for (size_t g = 1; g < all.size(); ++g) {
      std::copy(total.begin(), total.end(), all[g]->host_step_sum().begin());
    }
    return Status::Ok();
  };
  return Create(std::move(replicas), std::move(sum), accumulate,
                std::to_string(count) + " host replicas");
}

ReplicaGroup::ReplicaGroup(std::vector<std::unique_ptr<Model>> replicas, SumAcross sum,
                           int accumulate, std::string description)
    : Model(replicas.front()->config()),
      replicas_(std::move(replicas)),
      sum_(std::move(sum)),
      accumulate_(accumulate),
      description_(std::move(description)) {}

Status ReplicaGroup::SyncReplicas() {
  if (!params_out_) return Status::Ok();
  params_out_ = false;
  const std::vector<Parameter> from = replicas_.front()->Parameters();
  for (size_t g = 1; g < replicas_.size(); ++g) {
    const std::vector<Parameter> to = replicas_[g]->Parameters();
    SKIFF_CHECK(to.size() == from.size());
    for (size_t i = 0; i < from.size(); ++i) {
      SKIFF_CHECK(to[i].size() == from[i].size());
      std::copy_n(from[i].data, from[i].size(), to[i].data);
    }
  }
  return Status::Ok();
}

Status ReplicaGroup::TrainStep(const BatchInput& input, uint64_t dropout_seed,
                               Optimizer& optimizer) {
  SKIFF_RETURN_IF_ERROR(SyncReplicas());
  Model& replica = *replicas_[static_cast<size_t>(in_step_ % size())];
  SKIFF_RETURN_IF_ERROR(replica.AccumulateGradients(input, dropout_seed));
  ++in_step_;
  if (in_step_ < static_cast<int64_t>(size()) * accumulate_) return Status::Ok();
  return FinishStep(optimizer);
}

Status ReplicaGroup::EndTrainingPass(Optimizer& optimizer) {
  return in_step_ > 0 ? FinishStep(optimizer) : Status::Ok();
}

Status ReplicaGroup::FinishStep(Optimizer& optimizer) {
  const int64_t batches = std::exchange(in_step_, 0);
  std::vector<Model*> all;
  for (auto& r : replicas_) all.push_back(r.get());
  SKIFF_RETURN_IF_ERROR(sum_(all));
  // As GradientSum::Store: the sum times 1 / batches, exactly the sum for one batch.
  const float scale = batches == 1 ? 1.0f : 1.0f / static_cast<float>(batches);
  for (Model* r : all) SKIFF_RETURN_IF_ERROR(r->LoadStepGradients(scale));
  return optimizer.Step();  // ApplyUpdate on every replica
}

Status ReplicaGroup::EvalStep(const BatchInput& input) {
  SKIFF_RETURN_IF_ERROR(SyncReplicas());
  Model& replica = *replicas_[static_cast<size_t>(next_eval_)];
  next_eval_ = (next_eval_ + 1) % size();
  return replica.EvalStep(input);
}

Result<LossTotals> ReplicaGroup::TakeLossTotals() {
  LossTotals all;
  for (auto& r : replicas_) {
    SKIFF_ASSIGN_OR_RETURN(const LossTotals mine, r->TakeLossTotals());
    all.loss_sum += mine.loss_sum;
    all.labelled += mine.labelled;
    all.correct += mine.correct;
  }
  next_eval_ = 0;
  return all;
}

Status ReplicaGroup::Forward(const sampler::MiniBatch& batch, const float* x, bool training,
                             uint64_t dropout_seed, std::vector<float>* logits,
                             std::vector<float>* embeddings) {
  SKIFF_RETURN_IF_ERROR(SyncReplicas());
  return replicas_.front()->Forward(batch, x, training, dropout_seed, logits, embeddings);
}

Status ReplicaGroup::ForwardAggregated(const sampler::MiniBatch& batch, const float* dst_rows,
                                       const float* aggregated, bool training,
                                       uint64_t dropout_seed, std::vector<float>* logits,
                                       std::vector<float>* embeddings) {
  SKIFF_RETURN_IF_ERROR(SyncReplicas());
  return replicas_.front()->ForwardAggregated(batch, dst_rows, aggregated, training, dropout_seed,
                                              logits, embeddings);
}

bool ReplicaGroup::accepts_aggregated_input() const {
  return replicas_.front()->accepts_aggregated_input();
}

Status ReplicaGroup::ForwardDeviceSampled(const sampler::MiniBatch& batch,
                                          const DeviceSampling& sample, bool training,
                                          uint64_t dropout_seed, std::vector<float>* logits,
                                          std::vector<float>* embeddings) {
  SKIFF_RETURN_IF_ERROR(SyncReplicas());
  return replicas_.front()->ForwardDeviceSampled(batch, sample, training, dropout_seed, logits,
                                                 embeddings);
}

Status ReplicaGroup::ForwardLayer(int layer, const sampler::Block& block, const float* x_src,
                                  std::vector<float>* out) {
  SKIFF_RETURN_IF_ERROR(SyncReplicas());
  return replicas_.front()->ForwardLayer(layer, block, x_src, out);
}

bool ReplicaGroup::runs_by_layer() const { return replicas_.front()->runs_by_layer(); }

Status ReplicaGroup::Backward(const float* grad_logits) {
  return replicas_.front()->Backward(grad_logits);
}

// A replica that holds what another lacks takes batches in the other's form too (rows, or a
// batch sampled on the host): the group holds what every replica holds.
Result<bool> ReplicaGroup::HoldFeatures(const sampler::FeatureSource& features,
                                        uint64_t device_bytes) {
  holds_features_ = true;
  for (auto& r : replicas_) {
    SKIFF_ASSIGN_OR_RETURN(const bool held, r->HoldFeatures(features, device_bytes));
    holds_features_ = holds_features_ && held;
  }
  return holds_features_;
}

Result<bool> ReplicaGroup::HoldGraph(const sampler::CsrSource& graph, uint64_t device_bytes,
                                     int max_fanout) {
  samples_on_device_ = true;
  for (auto& r : replicas_) {
    SKIFF_ASSIGN_OR_RETURN(const bool held, r->HoldGraph(graph, device_bytes, max_fanout));
    samples_on_device_ = samples_on_device_ && held;
  }
  return samples_on_device_;
}

std::string ReplicaGroup::DeviceDescription() const {
  const std::string first = replicas_.front()->DeviceDescription();
  const int per_step = size() * accumulate_;
  return first + (first.empty() ? "" : "; ") + description_ + ", one step per " +
         (per_step == 1 ? std::string("batch") : std::to_string(per_step) + " batches");
}

Status ReplicaGroup::ApplyUpdate(const OptimizerConfig& config, int64_t step,
                                 std::vector<std::vector<float>>& state) {
  SKIFF_RETURN_IF_ERROR(SyncReplicas());
  if (replicas_.front()->optimizer_state_on_device()) {
    for (auto& r : replicas_) SKIFF_RETURN_IF_ERROR(r->ApplyUpdate(config, step, state));
    return Status::Ok();
  }
  // Host replicas update `state` in place: each starts from a copy of the state before the
  // update, and replica 0, last, leaves its own in `state`.
  const std::vector<std::vector<float>> before = state;
  for (size_t g = 1; g < replicas_.size(); ++g) {
    std::vector<std::vector<float>> mine = before;
    SKIFF_RETURN_IF_ERROR(replicas_[g]->ApplyUpdate(config, step, mine));
  }
  return replicas_.front()->ApplyUpdate(config, step, state);
}

Status ReplicaGroup::ReadOptimizerState(std::vector<std::vector<float>>& state) {
  for (auto& r : replicas_) SKIFF_RETURN_IF_ERROR(r->ReadOptimizerState(state));
  return Status::Ok();
}

std::vector<Parameter> ReplicaGroup::Parameters() {
  params_out_ = replicas_.size() > 1;
  return replicas_.front()->Parameters();
}

}  // namespace skiff::model
