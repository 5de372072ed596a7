#include "skiff/pipeline/epoch_plan.h"

#include <algorithm>
#include <numeric>

namespace skiff::pipeline {
namespace {

// SplitMix64: a small, fully specified generator, so a plan is the same on every standard library
// (std::uniform_int_distribution and std::shuffle are implementation-defined).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound), bound > 0 (Lemire's multiply-shift with rejection).
  uint64_t Below(uint64_t bound) {
    const uint64_t threshold = (0 - bound) % bound;
    for (;;) {
      const __uint128_t m = static_cast<__uint128_t>(Next()) * bound;
      if (static_cast<uint64_t>(m) >= threshold) return static_cast<uint64_t>(m >> 64);
    }
  }
  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[Below(i)]);
  }

 private:
  uint64_t state_;
};

uint64_t MixSeed(uint64_t seed, uint64_t epoch) {
  Rng rng(seed ^ (epoch * 0xD1B54A32D192ED03ull) ^ 0x5EEDu);
  rng.Next();
  return rng.Next();
}

}  // namespace

Result<EpochPlan> EpochPlan::Build(std::span<const std::vector<int64_t>> train_nodes_by_partition,
                                   const EpochPlanOptions& options) {
  const auto k = static_cast<uint32_t>(train_nodes_by_partition.size());
  if (k == 0) return Status::InvalidArgument("epoch plan: the dataset has no partitions");
  if (options.buffer_capacity == 0) {
    return Status::InvalidArgument("epoch plan: the buffer must hold at least one partition");
  }
  EpochPlan plan;
  plan.num_partitions_ = k;
  plan.buffer_capacity_ = options.buffer_capacity;
  const uint32_t c = std::min(options.buffer_capacity, k);
  Rng rng(MixSeed(options.seed, options.epoch));

  // 1. Partition order.
  std::vector<uint32_t> order(k);
  std::iota(order.begin(), order.end(), 0u);
  if (c < k) rng.Shuffle(order);

  // 2. Buffer states: state s admits order[c - 1 + s] (s >= 1) and evicts a random resident
  // partition; first_state[p] / last_state[p] bound p's residence.
  const uint32_t num_states = k - c + 1;
  std::vector<uint32_t> first_state(k, 0), last_state(k, num_states - 1);
  std::vector<uint32_t> resident(order.begin(), order.begin() + c);
  plan.states_.resize(num_states);
  plan.states_[0].resident = resident;
  for (uint32_t s = 1; s < num_states; ++s) {
    const size_t victim_idx = rng.Below(resident.size());
    const uint32_t evicted = resident[victim_idx];
    const uint32_t admitted = order[c - 1 + s];
    last_state[evicted] = s - 1;
    first_state[admitted] = s;
    resident[victim_idx] = admitted;
    BufferState& state = plan.states_[s];
    state.resident = resident;
    state.admitted = admitted;
    state.evicted = evicted;
  }
  for (BufferState& state : plan.states_) std::sort(state.resident.begin(), state.resident.end());

  // 3. Assign every training node to one state in which its partition is resident. Partitions are
  // visited in id order and nodes in their given order, so the draw sequence is fixed.
  for (uint32_t p = 0; p < k; ++p) {
    const uint32_t span = last_state[p] - first_state[p] + 1;
    for (int64_t node : train_nodes_by_partition[p]) {
      const uint32_t s = first_state[p] + static_cast<uint32_t>(span > 1 ? rng.Below(span) : 0);
      plan.states_[s].train_nodes.push_back(node);
    }
    plan.num_train_nodes_ += static_cast<int64_t>(train_nodes_by_partition[p].size());
  }
  for (BufferState& state : plan.states_) rng.Shuffle(state.train_nodes);
  return plan;
}

std::vector<uint32_t> EpochPlan::PartitionAccessSequence() const {
  std::vector<uint32_t> sequence;
  sequence.reserve(num_partitions_);
  if (states_.empty()) return sequence;
  sequence = states_[0].resident;
  for (size_t s = 1; s < states_.size(); ++s) sequence.push_back(states_[s].admitted);
  return sequence;
}

std::vector<std::span<const int64_t>> EpochPlan::Batches(size_t state, int64_t batch_size) const {
  SKIFF_CHECK(state < states_.size());
  SKIFF_CHECK(batch_size > 0);
  const std::vector<int64_t>& nodes = states_[state].train_nodes;
  std::vector<std::span<const int64_t>> batches;
  for (size_t begin = 0; begin < nodes.size(); begin += static_cast<size_t>(batch_size)) {
    const size_t len = std::min(nodes.size() - begin, static_cast<size_t>(batch_size));
    batches.emplace_back(nodes.data() + begin, len);
  }
  return batches;
}

int64_t EpochPlan::NumBatches(int64_t batch_size) const {
  SKIFF_CHECK(batch_size > 0);
  int64_t total = 0;
  for (const BufferState& state : states_) {
    total += (static_cast<int64_t>(state.train_nodes.size()) + batch_size - 1) / batch_size;
  }
  return total;
}

std::string EpochPlan::Describe() const {
  return std::to_string(states_.size()) + " buffer states, " + std::to_string(num_partitions_) +
         " partitions, " + std::to_string(std::min(buffer_capacity_, num_partitions_)) +
         " resident, " + std::to_string(num_train_nodes_) + " training nodes";
}

}  // namespace skiff::pipeline
