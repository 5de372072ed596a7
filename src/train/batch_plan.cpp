#include "skiff/train/batch_plan.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/status.h"

namespace skiff::train {

std::vector<std::vector<int64_t>> PlanBatches(std::span<const int64_t> nodes, int64_t batch_size,
                                              bool shuffle, uint64_t seed, uint64_t epoch) {
  SKIFF_CHECK(batch_size > 0);
  std::vector<int64_t> order(nodes.begin(), nodes.end());
  if (shuffle) {
    std::mt19937_64 rng(sampler::BatchSeed(seed, /*stream=*/0x5348554646ull, epoch, 0));
    // Fisher-Yates with an explicit bounded draw (std::shuffle's draws are implementation-defined).
    for (size_t i = order.size(); i > 1; --i) {
      const size_t j = static_cast<size_t>(rng() % i);
      std::swap(order[i - 1], order[j]);
    }
  }
  std::vector<std::vector<int64_t>> batches;
  for (size_t begin = 0; begin < order.size(); begin += static_cast<size_t>(batch_size)) {
    const size_t end = std::min(order.size(), begin + static_cast<size_t>(batch_size));
    batches.emplace_back(order.begin() + begin, order.begin() + end);
  }
  return batches;
}

uint64_t EpochsPerSubsetCycle(double fraction) {
  SKIFF_CHECK(fraction > 0 && fraction <= 1);
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(1.0 / fraction)));
}

std::vector<int64_t> EpochSubset(std::span<const int64_t> nodes, double fraction, uint64_t seed,
                                 uint64_t epoch) {
  SKIFF_CHECK(fraction > 0 && fraction <= 1);
  if (fraction >= 1 || nodes.empty()) return {nodes.begin(), nodes.end()};
  const auto n = static_cast<uint64_t>(nodes.size());
  const uint64_t per_cycle = std::min<uint64_t>(n, EpochsPerSubsetCycle(fraction));
  const uint64_t cycle = epoch / per_cycle, slice = epoch % per_cycle;
  std::vector<int64_t> order(nodes.begin(), nodes.end());
  std::mt19937_64 rng(sampler::BatchSeed(seed, kEpochSubsetStream, cycle, 0));
  for (size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[static_cast<size_t>(rng() % i)]);
  }
  const auto begin = static_cast<ptrdiff_t>(slice * n / per_cycle);
  const auto end = static_cast<ptrdiff_t>((slice + 1) * n / per_cycle);
  std::vector<int64_t> subset(order.begin() + begin, order.begin() + end);
  std::sort(subset.begin(), subset.end());
  return subset;
}

std::vector<std::vector<int64_t>> ShardBatches(std::vector<std::vector<int64_t>> batches, int rank,
                                               int ranks, std::vector<uint64_t>* numbers) {
  SKIFF_CHECK(ranks >= 1 && rank >= 0 && rank < ranks);
  std::vector<std::vector<int64_t>> mine;
  numbers->clear();
  for (size_t b = static_cast<size_t>(rank); b < batches.size(); b += static_cast<size_t>(ranks)) {
    mine.push_back(std::move(batches[b]));
    numbers->push_back(b);
  }
  return mine;
}

}  // namespace skiff::train
