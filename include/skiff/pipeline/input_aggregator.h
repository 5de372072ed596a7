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
// Memory from the group's sampling to the end of its gathering (its AggregationPlan): a 16-byte
// entry per input row, sorted by node, with the row's block-0 destinations flattened beside it
// (4 B per edge) and a mean weight per destination (kAggregationBytesPerRow in all, per row); while
// the plan is built, a 4-byte cursor per row on top (the entries are radix-sorted in place). The
// gather walks the entries front to back as the rows arrive and prefetches the output rows of the
// entries a few ahead, so adding a row costs its arithmetic rather than a chain of cache misses
// (half of the gather's CPU time before). The rows themselves are not staged: the
// union is streamed in node order (BufferedGraph::StreamFeatures), each row added to its targets
// straight from the buffer pool's scratch while the following reads are in flight, in windows of
// kStreamWindowRows rows (kStreamWindowBytesPerRow of bookkeeping each), so the group's read is one
// pass over the file.
//
// Thread safety: a plain function; concurrent calls must use distinct targets.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "skiff/model/model.h"
#include "skiff/pipeline/buffered_graph.h"
#include "skiff/sampler/minibatch.h"
#include "skiff/status.h"

namespace skiff::pipeline {

struct AggregationTarget {
  const sampler::MiniBatch* batch = nullptr;
  float* dst_rows = nullptr;    // block 0's num_dst x feature_dim (written)
  float* aggregated = nullptr;  // num_dst x feature_dim (written)
  uint64_t dropout_seed = 0;    // the seed the batch's Forward gets (used when training)
};

struct AggregationOptions {
  model::InputAggregation kind = model::InputAggregation::kMean;
  float dropout = 0;  // the first layer's input dropout (model::FirstLayerDropout)
  bool training = false;
};

// Bytes of transient state per input row of the group (entry + its destinations + their weights:
// blocks 0 hold ~1.1 edges per source with the default fanouts: ~21 B a row), and the index the
// schedule is built with (4 B a row, alive while the group before is read: 24 MB for a group of
// 51 at the 10m preset).
inline constexpr uint64_t kAggregationBytesPerRow = 16 + 4 + 4 + 4;
// Distinct rows streamed per window, and the stream's bookkeeping per row of a window (node list,
// read request, its order and position: ~56 B), counted once in the memory plan.
inline constexpr size_t kStreamWindowRows = 65536;
inline constexpr uint64_t kStreamWindowBytesPerRow = 64;

// A group's aggregation schedule: its input rows sorted by node, each with its destinations (the
// per-input-row state above). Built from the sampled batches alone, so it can be
// prepared while the previous group is read (the pipeline builds it on the sampler thread), and
// the read then starts at once. Immutable once built.
struct AggregationPlan;
std::shared_ptr<const AggregationPlan> PrepareAggregation(
    std::span<const sampler::MiniBatch* const> batches);
uint64_t AggregationPlanBytes(const AggregationPlan& plan);  // what the plan holds
// Once its group's plan is prepared, a batch's block-0 edges and the ids of its input rows beyond
// block 0's destinations are in the plan, and a model reading aggregated input needs neither:
// drops them (sampler::Block::condensed), keeping block 0's sizes and destination ids: ~1.2 MB of
// a ~12 MB gathered training batch with the default fanouts, held from sampling to compute.
void CondenseAggregated(sampler::MiniBatch* batch);

// Reads every input row of every target once (through graph.StreamFeatures under `resident`:
// pinned partitions, the hot row cache, or streamed reads) and writes each target's outputs.
// `plan` must have been prepared from the targets' batches, in the same order. Returns the first
// read error; on error the outputs are unspecified.
Status GatherAggregated(const BufferedGraph& graph, const ResidentSet& resident,
                        const AggregationPlan& plan, std::span<const AggregationTarget> targets,
                        const AggregationOptions& options);
// The same, preparing the plan first.
Status GatherAggregated(const BufferedGraph& graph, const ResidentSet& resident,
                        std::span<const AggregationTarget> targets,
                        const AggregationOptions& options);

}  // namespace skiff::pipeline
