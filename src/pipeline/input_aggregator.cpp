#include "skiff/pipeline/input_aggregator.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "skiff/log.h"

namespace skiff::pipeline {

struct AggregationPlan {
  // One input row of one target: sorted by node, so each row is read once for the whole group.
  struct Entry {
    int64_t node;
    uint32_t target;
    int32_t src;  // local source ID in the target's block 0
  };
  static_assert(sizeof(Entry) == 16);
  // Block 0 transposed: the destinations of each source, and each destination's mean weight.
  struct Transposed {
    std::vector<int32_t> offsets;  // num_src + 1
    std::vector<int32_t> dst;      // edges, grouped by source
    std::vector<float> weight;     // per destination: 1 / degree (as cpu::CsrAggregateForward)
  };
  std::vector<size_t> input_rows;  // per batch (a check that the targets are the batches)
  std::vector<Entry> entries;
  std::vector<Transposed> transposed;  // per batch
};

namespace {

using Entry = AggregationPlan::Entry;
using Transposed = AggregationPlan::Transposed;

void Transpose(const sampler::Block& block, Transposed* t) {
  t->offsets.assign(static_cast<size_t>(block.num_src) + 1, 0);
  for (const int32_t s : block.indices) ++t->offsets[static_cast<size_t>(s) + 1];
  for (size_t s = 0; s < static_cast<size_t>(block.num_src); ++s) {
    t->offsets[s + 1] += t->offsets[s];
  }
  t->dst.resize(block.indices.size());
  std::vector<int32_t> cursor(t->offsets.begin(), t->offsets.end() - 1);
  t->weight.resize(static_cast<size_t>(block.num_dst));
  for (int64_t d = 0; d < block.num_dst; ++d) {
    const int64_t begin = block.indptr[static_cast<size_t>(d)];
    const int64_t end = block.indptr[static_cast<size_t>(d + 1)];
    t->weight[static_cast<size_t>(d)] = end > begin ? 1.0f / static_cast<float>(end - begin) : 0;
    for (int64_t e = begin; e < end; ++e) {
      t->dst[static_cast<size_t>(cursor[static_cast<size_t>(block.indices[e])]++)] =
          static_cast<int32_t>(d);
    }
  }
}

// Adds one (dropped-out) source row to the target's outputs.
void Apply(const AggregationTarget& target, const Transposed& t, int32_t src, const float* row,
           int64_t dim) {
  const int64_t num_dst = target.batch->blocks[0].num_dst;
  if (src < num_dst) std::copy(row, row + dim, target.dst_rows + src * dim);
  for (int32_t e = t.offsets[static_cast<size_t>(src)]; e < t.offsets[static_cast<size_t>(src) + 1];
       ++e) {
    const int32_t d = t.dst[static_cast<size_t>(e)];
    cpu::Axpy(dim, t.weight[static_cast<size_t>(d)], row,
              target.aggregated + static_cast<int64_t>(d) * dim);
  }
}

}  // namespace

std::shared_ptr<const AggregationPlan> PrepareAggregation(
    std::span<const sampler::MiniBatch* const> batches) {
  auto plan = std::make_shared<AggregationPlan>();
  plan->transposed.resize(batches.size());
  size_t num_entries = 0;
  for (const sampler::MiniBatch* batch : batches) {
    plan->input_rows.push_back(batch->input_nodes.size());
    num_entries += batch->input_nodes.size();
  }
  plan->entries.reserve(num_entries);
  for (size_t t = 0; t < batches.size(); ++t) {
    const sampler::MiniBatch& batch = *batches[t];
    SKIFF_CHECK(!batch.blocks.empty());
    const sampler::Block& block = batch.blocks[0];
    SKIFF_CHECK(block.num_src == static_cast<int64_t>(batch.input_nodes.size()));
    Transpose(block, &plan->transposed[t]);
    for (int64_t s = 0; s < block.num_src; ++s) {
      plan->entries.push_back({batch.input_nodes[static_cast<size_t>(s)], static_cast<uint32_t>(t),
                               static_cast<int32_t>(s)});
    }
  }
  std::sort(plan->entries.begin(), plan->entries.end(), [](const Entry& a, const Entry& b) {
    return a.node != b.node ? a.node < b.node : a.target < b.target;
  });
  return plan;
}

uint64_t AggregationPlanBytes(const AggregationPlan& plan) {
  uint64_t bytes = plan.entries.capacity() * sizeof(Entry);
  for (const Transposed& t : plan.transposed) {
    bytes += (t.offsets.capacity() + t.dst.capacity() + t.weight.capacity()) * 4;
  }
  return bytes;
}

Status GatherAggregated(const BufferedGraph& graph, const ResidentSet& resident,
                        std::span<const AggregationTarget> targets,
                        const AggregationOptions& options) {
  std::vector<const sampler::MiniBatch*> batches;
  for (const AggregationTarget& target : targets) batches.push_back(target.batch);
  return GatherAggregated(graph, resident, *PrepareAggregation(batches), targets, options);
}

Status GatherAggregated(const BufferedGraph& graph, const ResidentSet& resident,
                        const AggregationPlan& plan, std::span<const AggregationTarget> targets,
                        const AggregationOptions& options) {
  SKIFF_CHECK(options.kind == model::InputAggregation::kMean);
  SKIFF_CHECK(targets.size() == plan.input_rows.size());
  const int64_t dim = graph.feature_dim();
  for (size_t t = 0; t < targets.size(); ++t) {
    SKIFF_CHECK(targets[t].batch->input_nodes.size() == plan.input_rows[t]);
    std::fill_n(targets[t].aggregated, targets[t].batch->blocks[0].num_dst * dim, 0.0f);
  }
  const std::vector<Entry>& entries = plan.entries;
  const std::vector<Transposed>& transposed = plan.transposed;
  const bool drop = options.training && options.dropout > 0.0f;
  std::vector<uint64_t> mask_seeds(targets.size());
  for (size_t t = 0; t < targets.size(); ++t) {
    mask_seeds[t] = model::FirstLayerDropoutSeed(targets[t].dropout_seed);
  }
  // The union of the group's rows, streamed in node order: each row is added to every target
  // that has it as it passes (entries are sorted by node, then target), so the sums do not depend
  // on timing.
  // The stream goes window by window (kStreamWindowRows distinct rows each, consecutive in node
  // order), so its per-row bookkeeping stays small whatever the group's size.
  std::vector<int64_t> nodes;
  std::vector<float> dropped(static_cast<size_t>(dim));
  size_t cursor = 0;  // first entry not added
  while (cursor < entries.size()) {
    nodes.clear();
    for (size_t e = cursor; e < entries.size(); ++e) {
      if (!nodes.empty() && nodes.back() == entries[e].node) continue;
      if (nodes.size() == kStreamWindowRows) break;
      nodes.push_back(entries[e].node);
    }
    SKIFF_RETURN_IF_ERROR(graph.StreamFeatures(resident, nodes, [&](size_t i, const float* row) {
      for (; cursor < entries.size() && entries[cursor].node == nodes[i]; ++cursor) {
        const Entry& e = entries[cursor];
        const float* x = row;
        if (drop) {
          cpu::DropoutForwardAt(static_cast<int64_t>(e.src) * dim, dim, options.dropout,
                                mask_seeds[e.target], x, dropped.data());
          x = dropped.data();
        }
        Apply(targets[e.target], transposed[e.target], e.src, x, dim);
      }
      return Status::Ok();
    }));
  }
  return Status::Ok();
}

}  // namespace skiff::pipeline
