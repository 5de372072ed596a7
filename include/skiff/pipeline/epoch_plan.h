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
