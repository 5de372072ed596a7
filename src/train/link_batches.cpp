#include "skiff/train/link_batches.h"

#include <numeric>
#include <unordered_map>

#include "skiff/random.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/train/batch_plan.h"

namespace skiff::train {

Result<std::vector<int64_t>> DrawNegatives(const NegativeOptions& options, uint64_t seed,
                                           uint64_t epoch, uint64_t batch) {
  SKIFF_CHECK(options.negatives >= 0 && options.num_nodes > 0);
  Rng rng(sampler::BatchSeed(seed, kLinkNegativeStream, epoch, batch));
  std::vector<int64_t> out(static_cast<size_t>(options.negatives));
  if (options.sampler == NegativeSampler::kUniform) {
    for (int64_t& v : out)
      v = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(options.num_nodes)));
    return out;
  }
  if (options.graph == nullptr || options.graph->num_edges() == 0) {
    return Status::InvalidArgument("degree-based negatives need a graph with edges");
  }
  const auto edges = static_cast<uint64_t>(options.graph->num_edges());
  for (int64_t& v : out) {
    const auto e = static_cast<int64_t>(rng.Below(edges));
    SKIFF_RETURN_IF_ERROR(options.graph->ReadNeighbors(e, 1, &v));
  }
  return out;
}

namespace {

// Rows of a batch's distinct nodes, in first-seen order.
class SeedRows {
 public:
  SeedRows(std::vector<int64_t>* seeds, size_t expected) : seeds_(seeds) {
    row_of_.reserve(expected);
  }
  int32_t operator()(int64_t v) {
    auto [it, added] = row_of_.try_emplace(v, static_cast<int32_t>(seeds_->size()));
    if (added) seeds_->push_back(v);
    return it->second;
  }

 private:
  std::vector<int64_t>* seeds_;
  std::unordered_map<int64_t, int32_t> row_of_;
};

}  // namespace

bool ReversedInEpoch(uint64_t seed, uint64_t epoch, int64_t pair) {
  return (HashKey(seed, HashKey(kLinkNegativeStream, epoch, 0), static_cast<uint64_t>(pair)) & 1) !=
         0;
}

EdgeBatch MakeEdgeBatch(std::span<const int64_t> pairs, std::span<const int64_t> pair_ids,
                        std::span<const int64_t> negatives,
                        const std::function<bool(int64_t pair)>& reversed) {
  EdgeBatch b;
  SeedRows row(&b.seeds, pair_ids.size() * 2 + negatives.size());
  b.pos_src.reserve(pair_ids.size());
  b.pos_dst.reserve(pair_ids.size());
  auto end = [&](int64_t p, int side) {
    const int flip = reversed && reversed(p) ? 1 : 0;
    return pairs[static_cast<size_t>(2 * p + (side ^ flip))];
  };
  for (int64_t p : pair_ids) b.pos_src.push_back(row(end(p, 0)));
  for (int64_t p : pair_ids) b.pos_dst.push_back(row(end(p, 1)));
  b.neg_dst.reserve(negatives.size());
  for (int64_t v : negatives) b.neg_dst.push_back(row(v));
  return b;
}

EvalEdgeBatch MakeEvalBatch(std::span<const int64_t> pairs, int64_t pair_begin, int64_t pair_end,
                            std::span<const int64_t> non_edges, int64_t non_begin, int64_t non_end,
                            std::span<const int64_t> candidates) {
  SKIFF_CHECK(pair_begin <= pair_end && non_begin <= non_end);
  EvalEdgeBatch out;
  EdgeBatch& b = out.edges;
  SeedRows row(&b.seeds, static_cast<size_t>(2 * (pair_end - pair_begin + non_end - non_begin)) +
                             candidates.size());
  for (int64_t p = pair_begin; p < pair_end; ++p) {
    b.pos_src.push_back(row(pairs[static_cast<size_t>(2 * p)]));
  }
  for (int64_t p = pair_begin; p < pair_end; ++p) {
    b.pos_dst.push_back(row(pairs[static_cast<size_t>(2 * p + 1)]));
  }
  for (int64_t v : candidates) b.neg_dst.push_back(row(v));
  for (int64_t p = non_begin; p < non_end; ++p) {
    out.non_src.push_back(row(non_edges[static_cast<size_t>(2 * p)]));
    out.non_dst.push_back(row(non_edges[static_cast<size_t>(2 * p + 1)]));
  }
  return out;
}

std::vector<int64_t> DrawCandidates(int count, int64_t num_nodes, uint64_t seed, uint64_t stream,
                                    uint64_t batch) {
  SKIFF_CHECK(count >= 0 && num_nodes > 0);
  Rng rng(sampler::BatchSeed(seed, kLinkCandidateStream, stream, batch));
  std::vector<int64_t> out(static_cast<size_t>(count));
  for (int64_t& v : out) v = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(num_nodes)));
  return out;
}

std::vector<std::vector<int64_t>> PlanEdgeBatches(int64_t pairs, int64_t batch_size, bool shuffle,
                                                  uint64_t seed, uint64_t epoch) {
  std::vector<int64_t> ids(static_cast<size_t>(pairs));
  std::iota(ids.begin(), ids.end(), int64_t{0});
  return PlanBatches(ids, batch_size, shuffle, seed, epoch);
}

Result<EdgePass> PlanEdgePass(std::span<const int64_t> pairs, const EdgePassOptions& options) {
  EdgePass pass;
  pass.pair_ids = PlanEdgeBatches(static_cast<int64_t>(pairs.size() / 2), options.batch_size,
                                  options.shuffle, options.seed, options.epoch);
  std::function<bool(int64_t)> reversed = nullptr;
  if (options.reorient) {
    reversed = [seed = options.seed, epoch = options.epoch](int64_t p) {
      return ReversedInEpoch(seed, epoch, p);
    };
  }
  pass.batches.reserve(pass.pair_ids.size());
  for (size_t b = 0; b < pass.pair_ids.size(); ++b) {
    SKIFF_ASSIGN_OR_RETURN(
        const std::vector<int64_t> negatives,
        DrawNegatives(options.negatives, options.negative_seed, options.epoch, b));
    pass.batches.push_back(MakeEdgeBatch(pairs, pass.pair_ids[b], negatives, reversed));
  }
  return pass;
}

}  // namespace skiff::train
