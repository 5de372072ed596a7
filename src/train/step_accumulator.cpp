#include "skiff/train/step_accumulator.h"

#include <algorithm>
#include <utility>

namespace skiff::train {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int StepGradientCopies(int accumulate, int world_size) {
  if (world_size > 1) return 2;
  return accumulate > 1 ? 1 : 0;
}

StepAccumulator::StepAccumulator(Kind kind, int64_t num_values, int accumulate,
                                 dist::Communicator* comm, Hooks hooks)
    : kind_(kind),
      accumulate_(accumulate),
      comm_(comm),
      hooks_(std::move(hooks)),
      sum_(num_values) {
  SKIFF_CHECK(accumulate >= 1 && hooks_.params && hooks_.update);
  SKIFF_CHECK(kind == Kind::kOneProcess || comm != nullptr);
  if (kind == Kind::kReplicated && comm->rank() > 0) {
    round_ = std::make_unique<GradientSum>(num_values);
  }
}

void StepAccumulator::BeginPass(int64_t num_batches) {
  SKIFF_CHECK(num_batches >= 0 || kind_ == Kind::kOneProcess);
  // A pass that ended in an error leaves its step unfinished: it is dropped.
  sum_.Clear();
  in_step_ = 0;
  num_batches_ = num_batches;
  rounds_ = 0;
  steps_ = 0;
}

Status StepAccumulator::Add(int64_t number) {
  if (kind_ == Kind::kReplicated) {
    SKIFF_CHECK(number / comm_->size() == rounds_ && number % comm_->size() == comm_->rank());
    return AddRound(/*has_batch=*/true);
  }
  SKIFF_CHECK(kind_ == Kind::kOneProcess);
  sum_.Add(hooks_.params());
  if (++in_step_ < accumulate_) return Status::Ok();
  return FinishStep(std::exchange(in_step_, 0));
}

Status StepAccumulator::AddWeighted(bool has_part, float weight) {
  SKIFF_CHECK(kind_ == Kind::kOwned);
  if (has_part) sum_.AddScaled(hooks_.params(), weight);
  if (++in_step_ < accumulate_) return Status::Ok();
  return FinishStep(std::exchange(in_step_, 0));
}

Status StepAccumulator::AddRound(bool has_batch) {
  const std::vector<model::Parameter> params =
      has_batch ? hooks_.params() : std::vector<model::Parameter>{};
  SKIFF_RETURN_IF_ERROR(
      AddRoundInBatchOrder(*comm_, has_batch ? &params : nullptr, rounds_++, &sum_, round_.get()));
  if (!StepEndsAfterRound(rounds_, accumulate_, num_batches_, comm_->size())) {
    return Status::Ok();
  }
  const int64_t step_batches = int64_t{accumulate_} * comm_->size();
  return FinishStep(std::min(step_batches, num_batches_ - steps_ * step_batches));
}

Status StepAccumulator::EndPass() {
  if (kind_ == Kind::kReplicated) {
    // A rank without a batch in the last round still takes part in it, and in the last step.
    while (rounds_ < CeilDiv(num_batches_, comm_->size())) {
      SKIFF_RETURN_IF_ERROR(AddRound(/*has_batch=*/false));
    }
    return Status::Ok();
  }
  if (in_step_ == 0) return Status::Ok();
  return FinishStep(std::exchange(in_step_, 0));
}

Status StepAccumulator::FinishStep(int64_t batches) {
  SKIFF_CHECK(batches >= 1);
  // An owned run's ranks each hold their weighted parts of the step's plan batches.
  if (kind_ == Kind::kOwned) SKIFF_RETURN_IF_ERROR(comm_->AllReduceSum(sum_.values(), "gradients"));
  sum_.Store(hooks_.params(), batches);
  sum_.Clear();
  ++steps_;
  return hooks_.update();
}

}  // namespace skiff::train
