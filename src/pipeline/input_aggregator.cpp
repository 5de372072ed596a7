#include "skiff/pipeline/input_aggregator.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "skiff/log.h"
#include "skiff/pipeline/memory_budget.h"
#include "skiff/prefetch.h"

namespace skiff::pipeline {

struct AggregationPlan {
  // One input row of one target, sorted by node then target, so each row is read once for the
  // whole group. `key` packs the node (high bits) and the target (low kTargetBits) so that one
  // integer comparison sorts both. Its block-0 destinations are edges[edge_begin .. next entry's
  // edge_begin): the schedule is walked front to back while the rows stream in, and the
  // destinations of the entries a few ahead are prefetched, instead of looking each source up in a
  // transposed block.
  struct Entry {
    uint64_t key;
    int32_t src;          // local source ID in the target's block 0
    uint32_t edge_begin;  // into edges
  };
  static_assert(sizeof(Entry) == 16);
  static constexpr int kTargetBits = 8;
  static_assert((1 << kTargetBits) >= kMaxGatherGroup);
  static int64_t NodeOf(uint64_t key) { return static_cast<int64_t>(key >> kTargetBits); }
  static uint32_t TargetOf(uint64_t key) { return key & ((1u << kTargetBits) - 1); }

  std::vector<size_t> input_rows;  // per batch (a check that the targets are the batches)
  std::vector<Entry> entries;      // plus a sentinel whose edge_begin ends the last entry's edges
  // Block-0 destinations, grouped by entry; kFirst marks the first term of a destination's sum in
  // the order the entries are walked, which writes the aggregate rather than adding to it (so the
  // aggregates need no zero fill before the read).
  std::vector<uint32_t> edges;
  static constexpr uint32_t kFirst = 1u << 31;
  std::vector<std::vector<float>> weight;  // per batch and destination: 1 / degree (as
                                           // cpu::CsrAggregateForward)
};

namespace {

using Entry = AggregationPlan::Entry;

// How far ahead of the entry being added the destinations are prefetched (entries, ~1.1 rows of
// 512 B each with the default fanouts): enough misses in flight to cover memory latency.
constexpr size_t kPrefetchEntries = 8;

void PrefetchRow(const float* row, int64_t dim) {
  const auto* bytes = reinterpret_cast<const char*>(row);
  for (int64_t b = 0; b < dim * 4; b += 64) PrefetchRead(bytes + b);
}

// Fills plan->edges and each entry's edge_begin from the batches' blocks 0: entry i's
// destinations are the block-0 destinations of its source, in increasing order. The bookkeeping
// is per batch and indexed by local source (`next`), so the random accesses stay within one
// batch's arrays rather than the group's entries.
void FlattenEdges(std::span<const sampler::MiniBatch* const> batches, AggregationPlan* plan) {
  // next[t][s]: first the out-degree of source s in block t, then where its next edge goes.
  std::vector<std::vector<uint32_t>> next(batches.size());
  for (size_t t = 0; t < batches.size(); ++t) {
    next[t].assign(batches[t]->input_nodes.size(), 0);
    for (const int32_t s : batches[t]->blocks[0].indices) ++next[t][static_cast<size_t>(s)];
  }
  uint64_t total = 0;
  for (Entry& e : plan->entries) {
    uint32_t& slot = next[AggregationPlan::TargetOf(e.key)][static_cast<size_t>(e.src)];
    const uint32_t degree = slot;
    e.edge_begin = slot = static_cast<uint32_t>(total);
    total += degree;
    SKIFF_CHECK(total <= UINT32_MAX);
  }
  plan->edges.resize(total);
  plan->weight.resize(batches.size());
  for (size_t t = 0; t < batches.size(); ++t) {
    const sampler::Block& block = batches[t]->blocks[0];
    std::vector<float>& weight = plan->weight[t];
    SKIFF_CHECK(block.num_dst < AggregationPlan::kFirst);
    weight.resize(static_cast<size_t>(block.num_dst));
    for (int64_t d = 0; d < block.num_dst; ++d) {
      const int64_t begin = block.indptr[static_cast<size_t>(d)];
      const int64_t end = block.indptr[static_cast<size_t>(d + 1)];
      weight[static_cast<size_t>(d)] = end > begin ? 1.0f / static_cast<float>(end - begin) : 0;
      uint32_t first = UINT32_MAX;  // edges are walked in position order
      for (int64_t e = begin; e < end; ++e) {
        const uint32_t at = next[t][static_cast<size_t>(block.indices[e])]++;
        plan->edges[at] = static_cast<uint32_t>(d);
        first = std::min(first, at);
      }
      if (end > begin) plan->edges[first] |= AggregationPlan::kFirst;
    }
  }
  plan->entries.push_back({~uint64_t{0}, 0, static_cast<uint32_t>(total)});  // sentinel
}

// Sorts entries by key in place: one most-significant-digit radix pass (American flag sort: each
// entry swapped straight into its bucket, 11 bits of the key's used bits), then each bucket (~1k
// entries for a group of ~1M) by std::sort. A least-significant-digit sort needs a copy of the
// entries as scratch: 16 B per input row of the group on top of the schedule while it is built,
// which the memory plan does not count (60 MB for a group of 32 at the 10m preset). The keys are
// distinct, so the order is the same as any sort's.
void SortByKey(std::vector<Entry>* entries) {
  constexpr int kDigitBits = 11;
  constexpr size_t kBuckets = size_t{1} << kDigitBits;
  if (entries->size() < 2) return;
  uint64_t max_key = 0;
  for (const Entry& e : *entries) max_key = std::max(max_key, e.key);
  const int bits = max_key == 0 ? 0 : 64 - __builtin_clzll(max_key);
  const int shift = std::max(0, bits - kDigitBits);
  auto bucket = [shift](const Entry& e) { return static_cast<size_t>(e.key >> shift); };
  std::vector<size_t> end(kBuckets, 0);  // first the bucket sizes, then where each bucket ends
  for (const Entry& e : *entries) ++end[bucket(e)];
  std::vector<size_t> next(kBuckets);  // where each bucket's next unplaced entry goes
  size_t sum = 0;
  for (size_t b = 0; b < kBuckets; ++b) {
    next[b] = sum;
    sum += end[b];
    end[b] = sum;
  }
  Entry* data = entries->data();
  for (size_t b = 0; b < kBuckets; ++b) {
    while (next[b] < end[b]) {
      const size_t home = bucket(data[next[b]]);
      if (home == b) {
        ++next[b];
      } else {
        std::swap(data[next[b]], data[next[home]++]);
      }
    }
  }
  auto by_key = [](const Entry& x, const Entry& y) { return x.key < y.key; };
  for (size_t b = 0, begin = 0; b < kBuckets; begin = end[b++]) {
    std::sort(data + begin, data + end[b], by_key);
  }
}

}  // namespace

std::shared_ptr<const AggregationPlan> PrepareAggregation(
    std::span<const sampler::MiniBatch* const> batches) {
  SKIFF_CHECK(batches.size() <= static_cast<size_t>(kMaxGatherGroup));
  auto plan = std::make_shared<AggregationPlan>();
  size_t num_entries = 0;
  for (const sampler::MiniBatch* batch : batches) {
    plan->input_rows.push_back(batch->input_nodes.size());
    num_entries += batch->input_nodes.size();
  }
  SKIFF_CHECK(num_entries < UINT32_MAX);
  plan->entries.reserve(num_entries + 1);
  for (size_t t = 0; t < batches.size(); ++t) {
    const sampler::MiniBatch& batch = *batches[t];
    SKIFF_CHECK(!batch.blocks.empty());
    const sampler::Block& block = batch.blocks[0];
    SKIFF_CHECK(block.num_src == static_cast<int64_t>(batch.input_nodes.size()));
    for (int64_t s = 0; s < block.num_src; ++s) {
      const int64_t node = batch.input_nodes[static_cast<size_t>(s)];
      SKIFF_CHECK(node >= 0 && node < (int64_t{1} << (64 - AggregationPlan::kTargetBits)));
      plan->entries.push_back({(static_cast<uint64_t>(node) << AggregationPlan::kTargetBits) | t,
                               static_cast<int32_t>(s), 0});
    }
  }
  SortByKey(&plan->entries);
  FlattenEdges(batches, plan.get());
  return plan;
}

uint64_t AggregationPlanBytes(const AggregationPlan& plan) {
  uint64_t bytes = plan.entries.capacity() * sizeof(Entry) + plan.edges.capacity() * 4;
  for (const std::vector<float>& w : plan.weight) bytes += w.capacity() * 4;
  return bytes;
}

Status GatherAggregated(const BufferedGraph& graph, const ResidentSet& resident,
                        std::span<const AggregationTarget> targets,
                        const AggregationOptions& options) {
  std::vector<const sampler::MiniBatch*> batches;
  for (const AggregationTarget& target : targets) batches.push_back(target.batch);
  return GatherAggregated(graph, resident, *PrepareAggregation(batches), targets, options);
}

void CondenseAggregated(sampler::MiniBatch* batch) {
  SKIFF_CHECK(!batch->blocks.empty());
  sampler::Block& block = batch->blocks[0];
  const auto kept = static_cast<size_t>(block.num_dst);
  SKIFF_CHECK(kept <= batch->input_nodes.size());
  batch->input_nodes = std::vector<int64_t>(
      batch->input_nodes.begin(), batch->input_nodes.begin() + static_cast<ptrdiff_t>(kept));
  std::vector<int64_t>().swap(block.indptr);
  std::vector<int32_t>().swap(block.indices);
  std::vector<int64_t>().swap(block.src_degree);
}

namespace {

// Zeroes the aggregates of the destinations with no term; each of the others is written by its
// first term (AggregationPlan::kFirst).
void ZeroEmptyAggregates(const AggregationPlan& plan, std::span<const AggregationTarget> targets,
                         int64_t dim) {
  for (size_t t = 0; t < targets.size(); ++t) {
    SKIFF_CHECK(static_cast<size_t>(targets[t].batch->blocks[0].num_src) == plan.input_rows[t]);
    const std::vector<float>& weight = plan.weight[t];
    for (size_t d = 0; d < weight.size(); ++d) {
      if (weight[d] == 0) {
        std::fill_n(targets[t].aggregated + d * static_cast<size_t>(dim), dim, 0.0f);
      }
    }
  }
}

// Walks a plan's entries front to back, adding each streamed row to every target that has it:
// its own-row copy (when its source is a destination too) and the aggregates of its block-0
// destinations. Where entry i writes is prefetched kPrefetchEntries entries ahead.
class EntryWalker {
 public:
  EntryWalker(const AggregationPlan& plan, std::span<const AggregationTarget> targets,
              const AggregationOptions& options, int64_t dim)
      : plan_(plan),
        targets_(targets),
        dim_(dim),
        num_entries_(plan.entries.size() - 1),  // less the sentinel
        dropout_(options.training ? options.dropout : 0.0f),
        dropped_(static_cast<size_t>(dim)) {
    for (const AggregationTarget& target : targets) {
      mask_seeds_.push_back(model::FirstLayerDropoutSeed(target.dropout_seed));
    }
    for (size_t i = 0; i < std::min(kPrefetchEntries, num_entries_); ++i) Prefetch(i);
  }

  bool done() const { return cursor_ == num_entries_; }

  // The next stream window: the distinct nodes (at most kStreamWindowRows, in node order) of the
  // entries from the cursor on.
  void NextWindow(std::vector<int64_t>* nodes) const {
    nodes->clear();
    for (size_t e = cursor_; e < num_entries_; ++e) {
      const int64_t node = AggregationPlan::NodeOf(plan_.entries[e].key);
      if (!nodes->empty() && nodes->back() == node) continue;
      if (nodes->size() == kStreamWindowRows) break;
      nodes->push_back(node);
    }
  }

  // Adds `row`, the features of `node`, for every entry of `node` from the cursor on.
  void AddRow(int64_t node, const float* row) {
    const std::vector<Entry>& entries = plan_.entries;
    for (; cursor_ < num_entries_ && AggregationPlan::NodeOf(entries[cursor_].key) == node;
         ++cursor_) {
      if (cursor_ + kPrefetchEntries < num_entries_) Prefetch(cursor_ + kPrefetchEntries);
      Add(cursor_, row);
    }
  }

 private:
  void Prefetch(size_t i) const {
    const Entry& e = plan_.entries[i];
    const AggregationTarget& target = targets_[AggregationPlan::TargetOf(e.key)];
    if (e.src < target.batch->blocks[0].num_dst) PrefetchRow(target.dst_rows + e.src * dim_, dim_);
    for (uint32_t k = e.edge_begin; k < plan_.entries[i + 1].edge_begin; ++k) {
      const uint32_t d = plan_.edges[k] & ~AggregationPlan::kFirst;
      PrefetchRow(target.aggregated + static_cast<int64_t>(d) * dim_, dim_);
    }
  }

  void Add(size_t i, const float* row) {
    const Entry& e = plan_.entries[i];
    const uint32_t t = AggregationPlan::TargetOf(e.key);
    const AggregationTarget& target = targets_[t];
    const float* x = row;
    if (dropout_ > 0.0f) {
      cpu::DropoutForwardAt(static_cast<int64_t>(e.src) * dim_, dim_, dropout_, mask_seeds_[t], x,
                            dropped_.data());
      x = dropped_.data();
    }
    if (e.src < target.batch->blocks[0].num_dst) {
      std::copy(x, x + dim_, target.dst_rows + static_cast<int64_t>(e.src) * dim_);
    }
    const float* weight = plan_.weight[t].data();
    for (uint32_t k = e.edge_begin; k < plan_.entries[i + 1].edge_begin; ++k) {
      const uint32_t d = plan_.edges[k] & ~AggregationPlan::kFirst;
      float* sum = target.aggregated + static_cast<int64_t>(d) * dim_;
      if ((plan_.edges[k] & AggregationPlan::kFirst) != 0) {
        cpu::Scale(dim_, weight[d], x, sum);
      } else {
        cpu::Axpy(dim_, weight[d], x, sum);
      }
    }
  }

  const AggregationPlan& plan_;
  const std::span<const AggregationTarget> targets_;
  const int64_t dim_;
  const size_t num_entries_;
  const float dropout_;               // 0 outside training
  std::vector<uint64_t> mask_seeds_;  // per target
  std::vector<float> dropped_;        // the row after dropout
  size_t cursor_ = 0;                 // first entry not added
};

}  // namespace

Status GatherAggregated(const BufferedGraph& graph, const ResidentSet& resident,
                        const AggregationPlan& plan, std::span<const AggregationTarget> targets,
                        const AggregationOptions& options) {
  SKIFF_CHECK(options.kind == model::InputAggregation::kMean);
  SKIFF_CHECK(targets.size() == plan.input_rows.size());
  const int64_t dim = graph.feature_dim();
  ZeroEmptyAggregates(plan, targets, dim);
  // The union of the group's rows, streamed in node order: each row is added to every target
  // that has it as it passes (entries are sorted by node, then target), so the sums do not depend
  // on timing. The stream goes window by window (kStreamWindowRows distinct rows each,
  // consecutive in node order), so its per-row bookkeeping stays small whatever the group's size.
  EntryWalker walker(plan, targets, options, dim);
  std::vector<int64_t> nodes;
  while (!walker.done()) {
    walker.NextWindow(&nodes);
    SKIFF_RETURN_IF_ERROR(graph.StreamFeatures(resident, nodes, [&](size_t i, const float* row) {
      walker.AddRow(nodes[i], row);
      return Status::Ok();
    }));
  }
  return Status::Ok();
}

}  // namespace skiff::pipeline
