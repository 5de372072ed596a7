// EpochPlan: which partitions are resident in the buffer when, and which training nodes are trained
// while they are.
//
// An epoch over k partitions with a buffer of c partition slots is a sequence of *buffer states*.
// Each state is a set of min(c, k) resident partitions; consecutive states differ by exactly one
// swap (one partition evicted, one admitted), so the buffer pool loads one partition per state
// while the previous state trains. Every training node is assigned to exactly one state in which
// its partition is resident, so every training node is seen exactly once per epoch and every
// mini-batch draws its seeds from resident partitions only.
//
// Construction (in the spirit of MariusGNN's COMET for node classification; see docs/pipeline.md):
//   1. An admission sequence: `rounds` random orders of the partitions (generator seeded with
//      (seed, epoch)), one after the other.
//   2. State 0 holds the first c partitions. Each following entry of the sequence that is not
//      resident evicts a resident partition chosen at random (so residence times vary from epoch
//      to epoch) and is admitted. With one round a partition leaves the buffer once and never
//      comes back: k - c + 1 states and k partition loads (the minimum). With r rounds each
//      partition is resident up to r times, with different partners.
//   3. Each training node of partition p goes to a state drawn uniformly from all the states in
//      which p is resident; each state's nodes are then shuffled together (so batches mix the
//      state's partitions).
// With c >= k the plan degenerates to one state holding every partition: the in-memory case runs
// through the same code.
//
// How many partitions are resident matters more than the plan's order. Every batch draws its seeds
// from the c resident partitions, and no order can change that without breaking residency. When
// partitions follow the labels (locality partitioners such as GREM group a homophilous graph's
// classes), a buffer of few large partitions gives batches that each see few classes: biased
// consecutive gradients. COMET's remedy, used here, is many more, smaller physical partitions than
// the buffer fraction would need, so that one buffer state holds many partitions. Measured with
// exact sampling at a 25% buffer (GREM, 200k-node planted-partition graph, 16 classes; figures and
// commands in BENCHMARKS.md): 3 resident partitions reach 87.5% test accuracy, 8 reach 93.2%, 17
// reach 96.0% against 95.5% with everything resident. PartitionCountAdvice() turns this into a
// recommendation when fewer than kMinMixingResidentPartitions are resident. The price is I/O:
// smaller partitions cut more edges, so exact sampling reads more neighbours fine-grained.
//
// The plan is a pure function of (inputs, seed, epoch): the same arguments give the same plan;
// different epochs give different orders and assignments.
//
// Thread safety: an immutable value after Build(); const methods may be called from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "skiff/status.h"

namespace skiff::pipeline {

inline constexpr uint32_t kNoPartition = ~0u;

// The fewest resident partitions at which batches mixed enough classes in our measurements (see the
// file comment); below it, training out of core can fall behind in-memory accuracy.
inline constexpr uint32_t kMinMixingResidentPartitions = 16;

// The partition count that keeps the same buffer fraction (resident / num_partitions) but makes at
// least kMinMixingResidentPartitions resident: ceil(num_partitions * kMin.. / resident). Returns
// num_partitions unchanged when resident >= num_partitions (everything resident) or resident is
// already >= kMinMixingResidentPartitions. resident >= 1.
uint32_t RecommendedPartitionCount(uint32_t num_partitions, uint32_t resident);

// A one-line recommendation to repartition with RecommendedPartitionCount() partitions, naming
// the current and recommended counts; empty when no change is recommended.
std::string PartitionCountAdvice(uint32_t num_partitions, uint32_t resident);

struct BufferState {
  std::vector<uint32_t> resident;    // resident partitions, ascending; size min(c, k)
  uint32_t admitted = kNoPartition;  // loaded on entering this state (kNoPartition for state 0)
  uint32_t evicted = kNoPartition;   // released on entering this state (kNoPartition for state 0)
  std::vector<int64_t> train_nodes;  // training nodes trained in this state, in training order
};

struct EpochPlanOptions {
  uint32_t buffer_capacity = 0;  // c: partitions resident at once (>= 1)
  uint64_t seed = 0;
  uint64_t epoch = 0;
  // Random orders walked per epoch (>= 1). With 1, each partition is loaded once (the fewest
  // loads); with r, up to r times, in r shorter residences with different partners, so the
  // batches of consecutive states mix more partitions (see docs/pipeline.md).
  uint32_t rounds = 1;
};

class EpochPlan {
 public:
  // `train_nodes_by_partition[p]` lists the training nodes of partition p (k = its size, >= 1).
  // InvalidArgument when k == 0 or buffer_capacity == 0.
  static Result<EpochPlan> Build(std::span<const std::vector<int64_t>> train_nodes_by_partition,
                                 const EpochPlanOptions& options);

  // A plan of one buffer state holding partitions 0 .. min(resident, k) - 1, its nodes in exactly
  // the given order. With resident >= k it is the plan of a buffer that holds everything; with
  // fewer, the order need not follow residency (seeds drawn uniformly, as in memory: what is not
  // resident is read fine-grained). Either way the pass cuts the batches of that order. With
  // resident == 0 nothing is resident (a pool without slots: every read is fine-grained).
  // InvalidArgument when k == 0.
  static Result<EpochPlan> SingleState(uint32_t k, uint32_t resident, std::vector<int64_t> nodes);

  uint32_t num_partitions() const { return num_partitions_; }
  uint32_t buffer_capacity() const { return buffer_capacity_; }
  bool fully_resident() const { return buffer_capacity_ >= num_partitions_; }
  const std::vector<BufferState>& states() const { return states_; }
  int64_t num_train_nodes() const { return num_train_nodes_; }

  // The order in which partitions are pinned over the epoch: state 0's residents (ascending), then
  // each later state's admitted partition. Every partition appears at least once (exactly once
  // with one round). This is the plan
  // the buffer pool uses for prefetching and Belady eviction (BufferPool::SetPlan).
  std::vector<uint32_t> PartitionAccessSequence() const;

  // The mini-batches of state `state`: consecutive slices of its train_nodes of at most
  // `batch_size` nodes (the last one may be shorter). Batches never span two states.
  std::vector<std::span<const int64_t>> Batches(size_t state, int64_t batch_size) const;
  // Number of batches over the whole epoch.
  int64_t NumBatches(int64_t batch_size) const;

  // "12 states, 16 partitions, 4 resident" -- for logs.
  std::string Describe() const;

 private:
  uint32_t num_partitions_ = 0;
  uint32_t buffer_capacity_ = 0;
  int64_t num_train_nodes_ = 0;
  std::vector<BufferState> states_;
};

}  // namespace skiff::pipeline
