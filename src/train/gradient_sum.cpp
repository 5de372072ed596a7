#include "skiff/train/gradient_sum.h"

#include <algorithm>
#include <string>

#include "skiff/status.h"

namespace skiff::train {

void GradientSum::Add(const std::vector<model::Parameter>& params) {
  AddScaled(params, 1.0f);  // x * 1.0f is x exactly: the same sums as adding the values
}

void GradientSum::AddScaled(const std::vector<model::Parameter>& params, float weight) {
  size_t offset = 0;
  for (const model::Parameter& p : params) {
    const auto n = static_cast<size_t>(p.size());
    SKIFF_CHECK(offset + n <= sum_.size());
    float* out = sum_.data() + offset;
    if (batches_ == 0) {
      for (size_t i = 0; i < n; ++i) out[i] = p.grad[i] * weight;
    } else {
      for (size_t i = 0; i < n; ++i) out[i] += p.grad[i] * weight;
    }
    offset += n;
  }
  SKIFF_CHECK(offset == sum_.size());
  ++batches_;
}

void GradientSum::Store(const std::vector<model::Parameter>& params, int64_t step_batches) const {
  SKIFF_CHECK(step_batches >= 1);
  const float scale = 1.0f / static_cast<float>(step_batches);
  size_t offset = 0;
  for (const model::Parameter& p : params) {
    const auto n = static_cast<size_t>(p.size());
    SKIFF_CHECK(offset + n <= sum_.size());
    const float* in = sum_.data() + offset;
    if (step_batches == 1) {
      std::copy(in, in + n, p.grad);
    } else {
      for (size_t i = 0; i < n; ++i) p.grad[i] = in[i] * scale;
    }
    offset += n;
  }
  SKIFF_CHECK(offset == sum_.size());
}

void GradientSum::Replace(std::span<const float> values, int64_t batches) {
  SKIFF_CHECK(values.size() == sum_.size() && batches >= 1);
  std::copy(values.begin(), values.end(), sum_.begin());
  batches_ = batches;
}

void GradientSum::Clear() {
  std::fill(sum_.begin(), sum_.end(), 0.0f);
  batches_ = 0;
}

Status AddRoundInBatchOrder(dist::Communicator& comm, const std::vector<model::Parameter>* params,
                            int64_t round, GradientSum* sum, GradientSum* scratch) {
  const std::string what = "gradients (round " + std::to_string(round) + ")";
  if (comm.rank() == 0) {
    SKIFF_CHECK(params != nullptr);  // round k holds batch kW, rank 0's
    sum->Add(*params);
    return comm.AllReduceSum(sum->values(), what);
  }
  scratch->Clear();
  if (params != nullptr) scratch->Add(*params);
  SKIFF_RETURN_IF_ERROR(comm.AllReduceSum(scratch->values(), what));
  sum->Replace(scratch->values(), 1);
  return Status::Ok();
}

Status CheckWorldSize(int world_size, const dist::Communicator* comm) {
  const int ranks = comm == nullptr ? 1 : comm->size();
  if (world_size == ranks) return Status::Ok();
  return Status::InvalidArgument("the run's options are for " + std::to_string(world_size) +
                                 " rank(s), the job has " + std::to_string(ranks));
}

bool StepEndsAfterRound(int64_t rounds_done, int accumulate, int64_t num_batches, int ranks) {
  SKIFF_CHECK(accumulate >= 1 && ranks >= 1);
  return rounds_done % accumulate == 0 || rounds_done == (num_batches + ranks - 1) / ranks;
}

}  // namespace skiff::train
