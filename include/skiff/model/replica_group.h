// ReplicaGroup: one model made of identical replicas (a replica per GPU: `skiff train --device
// cuda --gpus 0,1,...`), trained with one optimiser step per global batch.
//
// The group is itself a Model, so the trainer drives it as it drives one: every training batch
// goes to TrainStep, in pass order. Batch j of a step goes to replica j mod G, which adds the
// batch's gradients to its step sum where it computes (Model::AccumulateGradients: on its GPU).
// A step is G * accumulate batches; when it is complete (or at EndTrainingPass, the pass's last,
// shorter step of k batches), the replicas' sums are added together (SumAcross: NCCL's
// all-reduce for GPUs, an ordered host sum for the CPU reference), every replica's gradients
// become the sum times 1/k, and every replica applies the same optimiser update, so the replicas
// stay identical. The step's gradient is thus the mean of its batches' mean-loss gradients, as one
// process's --accumulate G * accumulate computes it, up to the order of the floating-point sums
// (the same order when every replica has one batch of the step and SumAcross adds in replica
// order). With one replica and accumulate 1 each step is one batch, its gradients unscaled: the
// plain model's TrainStep.
//
// Evaluation batches go to the replicas in turn too, and TakeLossTotals adds up theirs. Forward,
// Backward and layer-wise calls (prediction, export) run on replica 0. Parameters() are replica
// 0's host tensors; a caller may change them (Restore), and the other replicas take them before
// the group's next use. Optimiser state is every replica's own copy, all updated alike.
//
// Thread safety: one thread at a time (like every Model); that thread issues every replica's
// work, which a device model queues without waiting for its device.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "skiff/model/model.h"
#include "skiff/status.h"

namespace skiff::model {

class ReplicaGroup final : public Model {
 public:
  // Adds the replicas' step sums, leaving the total in every replica's sum (Model::
  // AccumulateGradients). Called with every replica of the group, in replica order.
  using SumAcross = std::function<Status(std::span<Model* const> replicas)>;

  // `replicas`: at least one, of one config, with the same parameters; `accumulate` >= 1 global
  // batches of G batches per step. `description`: DeviceDescription()'s addition ("2 GPUs: 0,
  // 1"). InvalidArgument for an empty list or replicas of different configs.
  static Result<std::unique_ptr<ReplicaGroup>> Create(std::vector<std::unique_ptr<Model>> replicas,
                                                      SumAcross sum, int accumulate,
                                                      std::string description);
  // The CPU reference: `count` CPU models of `config`, their sums added on the host in replica
  // order.
  static Result<std::unique_ptr<ReplicaGroup>> CreateOnHost(const ModelConfig& config, int count,
                                                            int accumulate);

  int size() const { return static_cast<int>(replicas_.size()); }
  Model& replica(int g) { return *replicas_[static_cast<size_t>(g)]; }

  Status TrainStep(const BatchInput& input, uint64_t dropout_seed, Optimizer& optimizer) override;
  bool accumulates_steps() const override { return true; }
  Status EndTrainingPass(Optimizer& optimizer) override;
  Status EvalStep(const BatchInput& input) override;
  Result<LossTotals> TakeLossTotals() override;

  Status Forward(const sampler::MiniBatch& batch, const float* x, bool training,
                 uint64_t dropout_seed, std::vector<float>* logits,
                 std::vector<float>* embeddings = nullptr) override;
  Status ForwardAggregated(const sampler::MiniBatch& batch, const float* dst_rows,
                           const float* aggregated, bool training, uint64_t dropout_seed,
                           std::vector<float>* logits,
                           std::vector<float>* embeddings = nullptr) override;
  bool accepts_aggregated_input() const override;
  Status ForwardDeviceSampled(const sampler::MiniBatch& batch, const DeviceSampling& sample,
                              bool training, uint64_t dropout_seed, std::vector<float>* logits,
                              std::vector<float>* embeddings = nullptr) override;
  Status ForwardLayer(int layer, const sampler::Block& block, const float* x_src,
                      std::vector<float>* out) override;
  bool runs_by_layer() const override;
  Status Backward(const float* grad_logits) override;

  Result<bool> HoldFeatures(const sampler::FeatureSource& features, uint64_t device_bytes) override;
  bool holds_features() const override { return holds_features_; }
  Result<bool> HoldGraph(const sampler::CsrSource& graph, uint64_t device_bytes,
                         int max_fanout) override;
  bool samples_on_device() const override { return samples_on_device_; }
  std::string DeviceDescription() const override;

  Status ApplyUpdate(const OptimizerConfig& config, int64_t step,
                     std::vector<std::vector<float>>& state) override;
  Status ReadOptimizerState(std::vector<std::vector<float>>& state) override;
  std::vector<Parameter> Parameters() override;

 private:
  ReplicaGroup(std::vector<std::unique_ptr<Model>> replicas, SumAcross sum, int accumulate,
               std::string description);
  // Gives replica 0's host parameters to the others when Parameters() handed them out.
  Status SyncReplicas();
  // Sums the step's gradients across the replicas, scales them by 1 / batches and updates.
  Status FinishStep(Optimizer& optimizer);

  std::vector<std::unique_ptr<Model>> replicas_;
  SumAcross sum_;
  int accumulate_;
  std::string description_;
  int64_t in_step_ = 0;      // batches of the current step so far
  int64_t next_eval_ = 0;    // the replica the next evaluation batch goes to
  bool params_out_ = false;  // Parameters() handed out replica 0's tensors
  bool holds_features_ = false, samples_on_device_ = false;  // every replica does
};

}  // namespace skiff::model
