#include "skiff/train/batch_plan.h"

#include <algorithm>
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
