#include "skiff/pipeline/epoch_plan.h"

#include <algorithm>
#include <numeric>

#include "skiff/random.h"

namespace skiff::pipeline {
namespace {

// SplitMix64: a small, fully specified generator, so a plan is the same on every standard library
// (std::uniform_int_distribution and std::shuffle are implementation-defined).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return SplitMix64Next(state_); }
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

Result<EpochPlan> EpochPlan::SingleState(uint32_t k, uint32_t resident,
                                         std::vector<int64_t> nodes) {
  if (k == 0) return Status::InvalidArgument("epoch plan: the dataset has no partitions");
  EpochPlan plan;
  plan.num_partitions_ = k;
  plan.buffer_capacity_ = std::min(resident, k);
  plan.num_train_nodes_ = static_cast<int64_t>(nodes.size());
  BufferState state;
  state.resident.resize(plan.buffer_capacity_);
  std::iota(state.resident.begin(), state.resident.end(), 0u);
  state.train_nodes = std::move(nodes);
  plan.states_.push_back(std::move(state));
  return plan;
}

namespace {

// [first, last] buffer states of each residence of a partition.
using Residences = std::vector<std::pair<uint32_t, uint32_t>>;

// The admission sequence: `rounds` independent random orders of the k partitions, one after the
// other (one unshuffled order when all c fit).
std::vector<uint32_t> AdmissionSequence(uint32_t k, uint32_t c, uint32_t rounds, Rng& rng) {
  std::vector<uint32_t> sequence;
  sequence.reserve(static_cast<size_t>(k) * rounds);
  for (uint32_t r = 0; r < rounds; ++r) {
    std::vector<uint32_t> order(k);
    std::iota(order.begin(), order.end(), 0u);
    if (c < k) rng.Shuffle(order);
    sequence.insert(sequence.end(), order.begin(), order.end());
  }
  return sequence;
}

// The buffer states of `sequence` into *states: state 0 holds its first c partitions; each later
// entry that is not resident evicts a random resident partition and is admitted (entries already
// resident are skipped). Returns each partition's residences.
std::vector<Residences> BufferStates(const std::vector<uint32_t>& sequence, uint32_t k, uint32_t c,
                                     Rng& rng, std::vector<BufferState>* states) {
  std::vector<Residences> intervals(k);
  std::vector<uint32_t> resident(sequence.begin(), sequence.begin() + c);
  std::vector<bool> is_resident(k, false);
  for (uint32_t p : resident) {
    is_resident[p] = true;
    intervals[p].push_back({0, 0});
  }
  states->push_back(BufferState{resident, kNoPartition, kNoPartition, {}});
  for (size_t i = c; i < sequence.size(); ++i) {
    const uint32_t admitted = sequence[i];
    if (is_resident[admitted]) continue;
    const auto s = static_cast<uint32_t>(states->size());
    const size_t victim_idx = rng.Below(resident.size());
    const uint32_t evicted = resident[victim_idx];
    intervals[evicted].back().second = s - 1;
    is_resident[evicted] = false;
    resident[victim_idx] = admitted;
    is_resident[admitted] = true;
    intervals[admitted].push_back({s, s});
    states->push_back(BufferState{resident, admitted, evicted, {}});
  }
  const auto last = static_cast<uint32_t>(states->size() - 1);
  for (uint32_t p : resident) intervals[p].back().second = last;
  for (BufferState& state : *states) std::sort(state.resident.begin(), state.resident.end());
  return intervals;
}

// Assigns each of `nodes` (of one partition) to one state drawn uniformly from all the states of
// the partition's residences.
void AssignNodes(std::span<const int64_t> nodes, const Residences& residences, Rng& rng,
                 std::vector<BufferState>* states) {
  uint64_t resident_states = 0;
  for (const auto& [first, end] : residences) resident_states += end - first + 1;
  SKIFF_CHECK(resident_states > 0);
  for (int64_t node : nodes) {
    uint64_t pick = resident_states > 1 ? rng.Below(resident_states) : 0;
    for (const auto& [first, end] : residences) {
      const uint64_t len = end - first + 1;
      if (pick < len) {
        (*states)[first + pick].train_nodes.push_back(node);
        break;
      }
      pick -= len;
    }
  }
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
  const uint32_t rounds = c < k ? std::max<uint32_t>(options.rounds, 1) : 1;
  const std::vector<uint32_t> sequence = AdmissionSequence(k, c, rounds, rng);
  const std::vector<Residences> intervals = BufferStates(sequence, k, c, rng, &plan.states_);
  // Partitions are visited in id order and nodes in their given order, so the draw sequence is
  // fixed.
  for (uint32_t p = 0; p < k; ++p) {
    AssignNodes(train_nodes_by_partition[p], intervals[p], rng, &plan.states_);
    plan.num_train_nodes_ += static_cast<int64_t>(train_nodes_by_partition[p].size());
  }
  for (BufferState& state : plan.states_) rng.Shuffle(state.train_nodes);
  return plan;
}

uint32_t RecommendedPartitionCount(uint32_t num_partitions, uint32_t resident) {
  SKIFF_CHECK(resident >= 1);
  if (resident >= num_partitions || resident >= kMinMixingResidentPartitions) {
    return num_partitions;
  }
  const uint64_t wanted =
      (uint64_t{num_partitions} * kMinMixingResidentPartitions + resident - 1) / resident;
  return static_cast<uint32_t>(std::min<uint64_t>(wanted, ~0u));
}

std::string PartitionCountAdvice(uint32_t num_partitions, uint32_t resident) {
  const uint32_t recommended = RecommendedPartitionCount(num_partitions, resident);
  if (recommended == num_partitions) return "";
  return "only " + std::to_string(resident) + " of " + std::to_string(num_partitions) +
         " partitions fit in the buffer at once: too few for batches drawn from the buffer to mix "
         "the labels, so training draws its seeds uniformly, as in memory, and reads what is not "
         "resident fine-grained (exact, but slow); repartition with -k " +
         std::to_string(recommended) + " or more (same buffer fraction, at least " +
         std::to_string(kMinMixingResidentPartitions) +
         " resident) to train from the buffer, or raise --memory";
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
