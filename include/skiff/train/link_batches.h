// Edge batches for link prediction: the training positives cut into batches, each with its shared
// negatives, and the node set whose neighbourhoods the encoder must compute.
//
// A batch of `batch_size` positive edges (s_i, d_i), shuffled by (seed, epoch) as PlanBatches
// shuffles nodes, draws `negatives` destination nodes shared by every positive of the batch
// (MariusGNN / PyTorch-BigGraph style: each s_i is scored against all of them, so one batch yields
// n x k negative pairs for the price of k extra nodes):
//   kUniform: uniform over [0, num_nodes);
//   kDegree:  proportional to degree -- the destination of an edge drawn uniformly from the stored
//             graph (in-degree; the degree of an undirected graph).
// Draws use Rng(BatchSeed(seed, kLinkNegativeStream, epoch, batch)), so a seed gives the same
// batches whatever the thread count, in memory or out of core. The batch's seeds are the distinct
// nodes among sources, destinations and negatives, in first-seen order (sources, then
// destinations, then negatives); the encoder runs once over their sampled neighbourhoods and the
// decoder reads its rows by the local indices kept here.
//
// Thread safety: pure functions (the CsrSource is only read).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "skiff/enum_names.h"
#include "skiff/sampler/csr_source.h"
#include "skiff/status.h"

namespace skiff::train {

// The random stream of negative draws (the Trainer's streams are 1-6).
inline constexpr uint64_t kLinkNegativeStream = 7;
// The random stream of evaluation candidates (ranking protocol).
inline constexpr uint64_t kLinkCandidateStream = 8;

enum class NegativeSampler { kUniform, kDegree };
inline constexpr EnumName<NegativeSampler> kNegativeSamplerNames[] = {
    {NegativeSampler::kUniform, "uniform"}, {NegativeSampler::kDegree, "degree"}};

struct EdgeBatch {
  std::vector<int64_t> seeds;             // distinct node IDs (first-seen order, see above)
  std::vector<int32_t> pos_src, pos_dst;  // per positive: rows of `seeds`
  std::vector<int32_t> neg_dst;           // per shared negative: a row of `seeds`
};

struct NegativeOptions {
  int negatives = 0;  // shared negatives per batch (0: none)
  NegativeSampler sampler = NegativeSampler::kUniform;
  int64_t num_nodes = 0;
  // The stored graph, for kDegree (may be null for kUniform).
  const sampler::CsrSource* graph = nullptr;
};

// Draws `options.negatives` nodes for batch `batch` of `epoch` (see above). IOError/Corruption
// from the graph; InvalidArgument for kDegree without a graph or with no edges.
Result<std::vector<int64_t>> DrawNegatives(const NegativeOptions& options, uint64_t seed,
                                           uint64_t epoch, uint64_t batch);

// Whether an undirected training pair is taken reversed in `epoch`: each pair's orientation is
// drawn from (seed, epoch, pair), so that destination corruption corrupts either endpoint (an
// undirected split stores its pairs as (min, max): without it the negatives would always keep
// the smaller endpoint).
bool ReversedInEpoch(uint64_t seed, uint64_t epoch, int64_t pair);

// The batch of positive pairs `pair_ids` (indices into `pairs`, interleaved (src, dst)) with
// `negatives` as its shared negatives; with `orient`, pair p is taken reversed when orient(p).
EdgeBatch MakeEdgeBatch(std::span<const int64_t> pairs, std::span<const int64_t> pair_ids,
                        std::span<const int64_t> negatives,
                        const std::function<bool(int64_t pair)>& reversed = nullptr);

// An evaluation batch: held-out positives ranked against `candidates` shared by the batch
// (edges.neg_dst) and non-edges scored for AUC/AP, their endpoints all among edges.seeds
// (positives' sources, destinations, candidates, then the non-edges' new nodes).
struct EvalEdgeBatch {
  EdgeBatch edges;
  std::vector<int32_t> non_src, non_dst;  // per non-edge: rows of edges.seeds
};

// The evaluation batch of positives [pair_begin, pair_end) of `pairs` and non-edges
// [non_begin, non_end) of `non_edges` (both interleaved), with `candidates`.
EvalEdgeBatch MakeEvalBatch(std::span<const int64_t> pairs, int64_t pair_begin, int64_t pair_end,
                            std::span<const int64_t> non_edges, int64_t non_begin, int64_t non_end,
                            std::span<const int64_t> candidates);

// Held-out edges that share one draw of evaluation candidates (DrawCandidates' `batch` is the
// group's index), however evaluation is cut into batches.
inline constexpr int64_t kCandidateGroupEdges = 1024;

// `count` candidate destinations of evaluation batch `batch` of the split whose stream is
// `stream`, uniform over [0, num_nodes): the same every epoch (Rng(BatchSeed(seed,
// kLinkCandidateStream, stream, batch))).
std::vector<int64_t> DrawCandidates(int count, int64_t num_nodes, uint64_t seed, uint64_t stream,
                                    uint64_t batch);

// The pair indices of every batch of an epoch: [0, pairs) shuffled by (seed, epoch) when
// `shuffle`, cut into batches of `batch_size` (> 0).
std::vector<std::vector<int64_t>> PlanEdgeBatches(int64_t pairs, int64_t batch_size, bool shuffle,
                                                  uint64_t seed, uint64_t epoch);

// One pass over a set of pairs, as LinkTrainer trains on them: the pairs cut by PlanEdgeBatches
// (seed, epoch), batch b with the negatives DrawNegatives(negatives, negative_seed, epoch, b)
// (LinkTrainer: negative_seed = seed), undirected pairs taken either way round by
// ReversedInEpoch(seed, epoch, pair) when `reorient`.
struct EdgePassOptions {
  int64_t batch_size = 1024;
  bool shuffle = true;
  uint64_t seed = 0;
  uint64_t negative_seed = 0;
  uint64_t epoch = 0;
  bool reorient = false;
  NegativeOptions negatives;
};
struct EdgePass {
  std::vector<std::vector<int64_t>> pair_ids;  // per batch: its positives, indices into the pairs
  std::vector<EdgeBatch> batches;              // per batch: MakeEdgeBatch of those and negatives
};
// `pairs` interleaved (src, dst). Errors: DrawNegatives'.
Result<EdgePass> PlanEdgePass(std::span<const int64_t> pairs, const EdgePassOptions& options);

}  // namespace skiff::train
