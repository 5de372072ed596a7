// MemoryBudget: splits one `--memory` budget among everything out-of-core training holds, once, at
// start-up, and refuses a budget that cannot hold a working set -- naming the minimum it needs.
//
// What is counted (every term is an upper bound, computed from the dataset, the model and the
// pipeline's queue capacities, not measured):
//   resident metadata   CSR offsets (8 B/node, the sampler's index into the neighbour file),
//                       labels (4 B/node) and the split node lists (8 B/node listed);
//   model               parameters, gradients and optimiser moments (4 floats per parameter);
//   per in-flight batch (x in_flight_batches)
//     sampler scratch   node lists, CSR blocks and the dedup map of the worst-case batch;
//     staging           the batch's gathered input features (float32);
//     fine reads        rows and adjacency lists of non-resident nodes (exact mode);
//   activations         forward values kept for backward, for the one batch in compute;
//   buffer pool         what is left, as whole partition slots plus the pool's fixed scratch.
// The worst-case batch has min(N, B * prod(1 + f_i)) nodes for batch size B and fanouts f_i: a
// batch never holds more nodes than that, so the staging and scratch terms are never exceeded.
//
// Not counted, and documented as the fixed overhead (kFixedOverheadBytes): the executable and its
// shared libraries (OpenBLAS, RocksDB code -- no RocksDB database is opened during training), the
// thread stacks actually touched, and allocator slack. The promise is
//   peak RSS <= budget_bytes + kFixedOverheadBytes.
//
// Thread safety: plain functions over values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "skiff/status.h"

namespace skiff::pipeline {

inline constexpr uint64_t kFixedOverheadBytes = 96ull << 20;

struct MemoryBudgetInputs {
  uint64_t budget_bytes = 0;
  // Dataset.
  int64_t num_nodes = 0;
  int64_t split_nodes = 0;  // train + valid + test node ids held in memory
  int64_t feature_dim = 0;
  // Buffer pool: bytes one partition slot takes, bytes of the pool's own fixed scratch, number of
  // partitions and the least number of slots training needs (2: one in use, one loading).
  uint64_t partition_slot_bytes = 0;
  uint64_t pool_fixed_bytes = 0;
  uint32_t num_partitions = 0;
  uint32_t min_resident_partitions = 2;
  // Model and batches.
  int64_t num_parameters = 0;
  int64_t max_layer_width = 0;  // max(in_dim, hidden * heads, num_classes)
  int64_t batch_size = 0;
  std::vector<int> fanouts;   // per layer; <= 0 means the whole neighbourhood
  int64_t max_degree = 0;     // used for whole-neighbourhood layers
  int in_flight_batches = 1;  // batches alive at once across the sample/gather/compute stages
  bool exact_sampling = true;
};

struct MemoryItem {
  std::string name;
  uint64_t bytes = 0;
};

struct MemoryPlan {
  uint64_t budget_bytes = 0;
  std::vector<MemoryItem> items;  // everything except the buffer pool
  uint64_t fixed_bytes = 0;       // sum of items
  uint32_t pool_slots = 0;        // partition slots the pool gets (<= num_partitions)
  uint64_t pool_bytes = 0;        // pool_slots * slot + pool_fixed_bytes
  bool fully_resident = false;    // pool_slots == num_partitions
  int64_t max_batch_nodes = 0;    // worst-case sampled nodes per batch
  int64_t max_batch_edges = 0;    // worst-case sampled edges per batch

  // A table, one line per item, for the start-up log.
  std::string Describe() const;
};

// Worst-case nodes and edges of one sampled batch (see the header comment).
void BatchBounds(const MemoryBudgetInputs& in, int64_t* max_nodes, int64_t* max_edges);

// Splits the budget. ResourceExhausted -- "--memory 64MiB is too small: this run needs at least
// 212MiB (...)" -- when fewer than min_resident_partitions slots fit; InvalidArgument for
// inconsistent inputs.
Result<MemoryPlan> PlanMemory(const MemoryBudgetInputs& in);

}  // namespace skiff::pipeline
