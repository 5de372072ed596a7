// Tiny random mini-batches for the model tests.
#pragma once

#include <algorithm>
#include <random>

#include "skiff/sampler/minibatch.h"
#include "tests/unit/test_kernels_util.h"

namespace skiff::testing {

// A mini-batch with `layer_sizes` = {num_input, ..., num_seeds} (non-increasing), random blocks
// with empty rows, and labels in [0, classes) except the last seed, which is unlabelled.
inline sampler::MiniBatch RandomMiniBatch(const std::vector<int64_t>& layer_sizes,
                                          int64_t max_degree, int32_t classes,
                                          std::mt19937_64& rng) {
  sampler::MiniBatch batch;
  for (int64_t v = 0; v < layer_sizes.front(); ++v) batch.input_nodes.push_back(100 + v);
  for (size_t l = 0; l + 1 < layer_sizes.size(); ++l) {
    batch.blocks.push_back(RandomBlock(layer_sizes[l + 1], layer_sizes[l], max_degree, rng));
  }
  const int64_t seeds = layer_sizes.back();
  batch.seeds.assign(batch.input_nodes.begin(), batch.input_nodes.begin() + seeds);
  for (int64_t s = 0; s < seeds; ++s) {
    batch.labels.push_back(s + 1 == seeds && seeds > 1 ? -1 : static_cast<int32_t>(s % classes));
  }
  return batch;
}

// Fills every block's src_degree with whole-graph degrees consistent with the blocks: each node's
// degree is at least its row length in any block where it is a destination, plus 0..3 (so some rows
// look sampled).
inline void AddRandomDegrees(sampler::MiniBatch* batch, std::mt19937_64& rng) {
  std::vector<int64_t> degree(batch->input_nodes.size(), 0);
  for (const sampler::Block& b : batch->blocks) {
    for (int64_t d = 0; d < b.num_dst; ++d) {
      degree[d] = std::max(degree[d], b.indptr[d + 1] - b.indptr[d]);
    }
  }
  for (int64_t& d : degree) d += static_cast<int64_t>(rng() % 4);
  for (sampler::Block& b : batch->blocks)
    b.src_degree.assign(degree.begin(), degree.begin() + b.num_src);
}

}  // namespace skiff::testing
