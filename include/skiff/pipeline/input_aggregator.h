// GatherAggregated: gathers the first layer's input of a group of batches in one pass over the
// union of their rows, sorted by node, and leaves each batch its input already aggregated
// (model::InputAggregation::kMean, model::AggregateFirstLayerInput) instead of every row.
//
// Why: out of core, a batch's input rows (~150k for 1024 seeds at fanouts 15,10) lie all over the
// feature file, so reading them per batch reads most of the file per batch. Batches gathered
// together share one sorted, coalesced read of their rows (Ginex's superbatch). And since a kMean
// first layer needs only each destination's own row and the mean of its sampled neighbours, a
// batch then holds 2 x num_dst rows (~16k) rather than num_src: several times less memory per
// batch, so several times more batches share one read within the same budget.
//
// Arithmetic: AggregateFirstLayerInput's, with the terms of each mean added in increasing node ID
// (the order the rows arrive) instead of CSR order; so the two agree to float rounding, and the
// result depends neither on how batches are grouped nor on the budget or thread timing.
//
// Memory while a group is gathered: per batch, block 0 transposed ((num_src + 1 + edges) x 4 B) and
// one entry per input row (kAggregationBytesPerRow); two rounds of rows (2 x chunk_rows x dim
// float32): the next round is read, on a helper thread, while this one is added up.
//
// Thread safety: a plain function; concurrent calls must use distinct targets.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "skiff/model/model.h"
#include "skiff/pipeline/buffered_graph.h"
#include "skiff/status.h"
#include "skiff/train/minibatch.h"

namespace skiff::pipeline {

// Distinct rows read per round by default (their float32 buffer: 8 MiB at 128 features; two are
// held).
inline constexpr size_t kAggregationChunkRows = 16384;
// The round for a graph of `num_nodes` rows of `row_bytes` under a budget of `budget_bytes` (0:
// none): 1/64 of the nodes, its two buffers at most 1/32 of the budget, within [1024,
// kAggregationChunkRows], so that small datasets and small budgets keep small minimums.
inline size_t AggregationChunkRows(int64_t num_nodes, uint64_t row_bytes, uint64_t budget_bytes) {
  uint64_t rows = static_cast<uint64_t>(std::max<int64_t>(num_nodes, 0)) / 64;
  if (budget_bytes > 0)
    rows = std::min(rows, budget_bytes / 32 / 2 / std::max<uint64_t>(row_bytes, 1));
  return std::clamp<size_t>(static_cast<size_t>(rows), 1024, kAggregationChunkRows);
}

struct AggregationTarget {
  const train::MiniBatch* batch = nullptr;
  float* dst_rows = nullptr;    // block 0's num_dst x feature_dim (written)
  float* aggregated = nullptr;  // num_dst x feature_dim (written)
  uint64_t dropout_seed = 0;    // the seed the batch's Forward gets (used when training)
};

struct AggregationOptions {
  model::InputAggregation kind = model::InputAggregation::kMean;
  float dropout = 0;  // the first layer's input dropout (model::FirstLayerDropout)
  bool training = false;
  size_t chunk_rows = kAggregationChunkRows;  // distinct rows read per round
};

// Bytes of transient state per input row of the group (sort entry + transposed block).
inline constexpr uint64_t kAggregationBytesPerRow = 16 + 4 + 4;

// Reads every input row of every target once (through graph.Features under `resident`: pinned
// partitions, the hot row cache, or fine-grained reads) and writes each target's outputs. Returns
// the first read error; on error the outputs are unspecified.
Status GatherAggregated(const BufferedGraph& graph, const ResidentSet& resident,
                        std::span<const AggregationTarget> targets,
                        const AggregationOptions& options);

}  // namespace skiff::pipeline
