// GradientSum: the gradients of the batches of one optimiser step, added in batch order.
//
// A step over several batches (TrainOptions::accumulate in one process, or one batch per rank of
// a data-parallel run) computes each batch's gradients alone (Model::ComputeGradients) and adds
// them here: the first batch's are copied, each later batch's added element by element
// (sum = g0; sum += g1; ...). A data-parallel run of W ranks sums a step in rounds of W batches,
// batch kW + r on rank r: rank 0 adds its batch to the step's sum so far, the others contribute
// their batch alone, and the ranks' vectors are added in rank order (dist::Communicator::
// AllReduceSum), the result replacing every rank's sum (Replace). That is the same arithmetic
// as one process adding the step's batches in batch order: the two give bitwise the same step.
// Store() writes sum * (1 / batches) into the model's gradients, so a step's gradient is the mean
// of its batches' (each a mean over that batch's labelled seeds) -- with one batch, the batch's own
// gradient, unscaled.
//
// Thread safety: one thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "skiff/dist/communicator.h"
#include "skiff/model/model.h"
#include "skiff/status.h"

namespace skiff::train {

class GradientSum {
 public:
  // `num_values`: the parameters' total size (Model::NumParameters()).
  explicit GradientSum(int64_t num_values) : sum_(static_cast<size_t>(num_values), 0.0f) {}

  // Adds the gradients now in `params` (Parameters() order, num_values in all).
  void Add(const std::vector<model::Parameter>& params);
  // Adds the gradients in `params` times `weight` (a rank's part of a batch in an owned-partition
  // run: its share of the batch's labelled seeds).
  void AddScaled(const std::vector<model::Parameter>& params, float weight);
  // The sum, in Parameters() order: what a data-parallel step all-reduces.
  std::span<float> values() { return sum_; }
  // Batches added since Clear().
  int64_t batches() const { return batches_; }
  // Makes the sum `values` (num_values of them), of `batches` (>= 1) batches: a round's
  // all-reduced sum on a rank that contributed only its own batch to it.
  void Replace(std::span<const float> values, int64_t batches);
  // Writes the sum times 1 / `step_batches` (>= 1; exactly the sum when 1) into the gradients
  // of `params`.
  void Store(const std::vector<model::Parameter>& params, int64_t step_batches) const;
  // Zero, and no batches: ready for the next step.
  void Clear();

 private:
  std::vector<float> sum_;
  int64_t batches_ = 0;
};

// Round `round` of a data-parallel step over `comm`'s W ranks (batches kW .. kW + W - 1, batch
// kW + r on rank r): adds every rank's batch's gradients to `sum`, the step's sum so far, on every
// rank, in batch order. `params` holds this rank's batch's gradients (null: the rank has no batch
// in the round, a last round with fewer batches; rank 0 always has one). Rank 0 adds its batch to
// `sum` and contributes that; the others contribute their batch alone (in `scratch`, which they
// keep for it), and the ordered all-reduce adds the contributions in rank order: the arithmetic of
// one process adding the batches in batch order. Errors: the all-reduce's.
Status AddRoundInBatchOrder(dist::Communicator& comm, const std::vector<model::Parameter>* params,
                            int64_t round, GradientSum* sum, GradientSum* scratch);

// InvalidArgument unless `comm` (null: one process) has `world_size` ranks, the number a run's
// options were made for (TrainOptions::world_size).
Status CheckWorldSize(int world_size, const dist::Communicator* comm);

// Whether a data-parallel step of `accumulate` rounds ends after `rounds_done` rounds of a pass
// of `num_batches` batches over `ranks` ranks (the pass's last round ends its last step).
bool StepEndsAfterRound(int64_t rounds_done, int accumulate, int64_t num_batches, int ranks);

}  // namespace skiff::train
