#include "skiff/pipeline/memory_budget.h"

#include <algorithm>
#include <cstdio>

#include "skiff/log.h"

namespace skiff::pipeline {
namespace {

// Bytes per sampled node / edge of the sampler's structures: global id lists (input nodes, hop
// frontiers), the dedup map (open addressing at <= 50% load: 2 slots of 16 B), CSR indptr; per
// edge the local index and the global id drawn before dedup.
constexpr uint64_t kSamplerBytesPerNode = 8 + 8 + 32 + 8;
constexpr uint64_t kSamplerBytesPerEdge = 4 + 8;
// Exact sampling reads adjacency lists of non-resident nodes in rounds of at most this much.
constexpr uint64_t kFineAdjacencyBytesPerBatch = 8ull << 20;
// Forward values a layer keeps for backward, per (node x width): input, aggregate, pre-activation
// and dropout mask.
constexpr uint64_t kActivationFloatsPerNodeWidth = 4;

int64_t SaturatingMul(int64_t a, int64_t b, int64_t cap) {
  if (a == 0 || b == 0) return 0;
  if (a > cap / b) return cap;
  return std::min(a * b, cap);
}

}  // namespace

void BatchBounds(const MemoryBudgetInputs& in, int64_t* max_nodes, int64_t* max_edges) {
  const int64_t n = std::max<int64_t>(in.num_nodes, 1);
  int64_t frontier = std::min(in.batch_size, n);
  int64_t nodes = frontier;
  int64_t edges = 0;
  // Fanouts are given innermost-layer-last as on the command line ("15,10,5": 15 for the seeds'
  // neighbours); the order does not change the bound's structure, only its value, so follow it.
  for (int fanout : in.fanouts) {
    const int64_t per_node = fanout > 0 ? fanout : std::max<int64_t>(in.max_degree, 1);
    const int64_t hop_edges = SaturatingMul(frontier, per_node, int64_t{1} << 50);
    edges = std::min<int64_t>(edges + hop_edges, int64_t{1} << 50);
    frontier = std::min(hop_edges, n);
    nodes = std::min(nodes + frontier, n);
  }
  *max_nodes = nodes;
  *max_edges = edges;
}

Result<MemoryPlan> PlanMemory(const MemoryBudgetInputs& in) {
  if (in.num_nodes <= 0 || in.num_partitions == 0 || in.partition_slot_bytes == 0 ||
      in.batch_size <= 0 || in.in_flight_batches <= 0) {
    return Status::InvalidArgument("memory plan: empty dataset, batch or partition layout");
  }
  MemoryPlan plan;
  plan.budget_bytes = in.budget_bytes;
  BatchBounds(in, &plan.max_batch_nodes, &plan.max_batch_edges);
  const auto nodes = static_cast<uint64_t>(plan.max_batch_nodes);
  const auto edges = static_cast<uint64_t>(plan.max_batch_edges);
  const auto batches = static_cast<uint64_t>(in.in_flight_batches);
  const auto n = static_cast<uint64_t>(in.num_nodes);

  plan.items.push_back({"CSR offsets + labels + splits",
                        8 * (n + 1) + 4 * n + 8 * static_cast<uint64_t>(in.split_nodes)});
  plan.items.push_back({"model parameters, gradients, optimiser moments",
                        16 * static_cast<uint64_t>(in.num_parameters)});
  plan.items.push_back({"sampler scratch (" + std::to_string(batches) + " batches in flight)",
                        batches * (nodes * kSamplerBytesPerNode + edges * kSamplerBytesPerEdge)});
  plan.items.push_back({"feature staging (" + std::to_string(batches) + " batches in flight)",
                        batches * nodes * static_cast<uint64_t>(in.feature_dim) * 4});
  if (in.exact_sampling) {
    plan.items.push_back(
        {"fine-grained adjacency reads (exact sampling)", batches * kFineAdjacencyBytesPerBatch});
  }
  const uint64_t layers = std::max<uint64_t>(in.fanouts.size(), 1);
  plan.items.push_back({"activations of the batch in compute",
                        layers * nodes * static_cast<uint64_t>(in.max_layer_width) * 4 *
                            kActivationFloatsPerNodeWidth});
  for (const MemoryItem& item : plan.items) plan.fixed_bytes += item.bytes;

  const uint32_t min_slots = std::min(in.min_resident_partitions, in.num_partitions);
  const uint64_t minimum =
      plan.fixed_bytes + in.pool_fixed_bytes + uint64_t{min_slots} * in.partition_slot_bytes;
  if (in.budget_bytes < minimum) {
    std::string detail;
    for (const MemoryItem& item : plan.items) {
      detail += "; " + item.name + " " + FormatBytes(item.bytes);
    }
    return Status::ResourceExhausted(
        "--memory " + FormatBytes(in.budget_bytes) + " is too small: this run needs at least " +
        FormatBytes(minimum) + " (" + std::to_string(min_slots) + " partition slots of " +
        FormatBytes(in.partition_slot_bytes) + " + pool scratch " +
        FormatBytes(in.pool_fixed_bytes) + detail +
        "); raise --memory, lower --batch-size or --fanouts, or use more partitions");
  }
  const uint64_t for_slots = in.budget_bytes - plan.fixed_bytes - in.pool_fixed_bytes;
  plan.pool_slots = static_cast<uint32_t>(
      std::min<uint64_t>(for_slots / in.partition_slot_bytes, in.num_partitions));
  plan.pool_bytes = uint64_t{plan.pool_slots} * in.partition_slot_bytes + in.pool_fixed_bytes;
  plan.fully_resident = plan.pool_slots == in.num_partitions;
  return plan;
}

std::string MemoryPlan::Describe() const {
  std::string out = "memory budget " + FormatBytes(budget_bytes) + ":\n";
  char line[256];
  for (const MemoryItem& item : items) {
    std::snprintf(line, sizeof(line), "  %-52s %12s\n", item.name.c_str(),
                  FormatBytes(item.bytes).c_str());
    out += line;
  }
  std::snprintf(line, sizeof(line), "  %-52s %12s\n",
                ("buffer pool: " + std::to_string(pool_slots) + " partition slots" +
                 (fully_resident ? " (every partition resident)" : ""))
                    .c_str(),
                FormatBytes(pool_bytes).c_str());
  out += line;
  std::snprintf(line, sizeof(line), "  %-52s %12s\n", "fixed overhead outside the budget",
                FormatBytes(kFixedOverheadBytes).c_str());
  out += line;
  return out;
}

}  // namespace skiff::pipeline
