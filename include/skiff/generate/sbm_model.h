// The degree-corrected stochastic block model behind `skiff generate` (see generator.h and
// docs/generate.md). Separate from the writer so tests can check the model's rows directly.
//
// Node IDs are a pseudo-random permutation of "internal indices": internal index i has class
// i mod C and degree rank i div C within its class (rank 0 has the largest weight). The
// permutation (a keyed Feistel network, cycle-walked into [0, N)) costs O(1)
// memory, so the model needs no per-node arrays at any N.
//
// The permutation is a 4-round Feistel network over the mixed-radix domain [0, a) x [0, b),
// a = ceil(sqrt(N)), b = ceil(N / a), whose halves swap sizes each round (adding round values
// modulo the half's size); a * b - N < a, so the cycle walk into [0, N) rarely takes a second
// step.
//
// Thread safety: immutable after construction; all methods are const and may be called from many
// threads at once.
#pragma once

#include <cstdint>
#include <vector>

#include "skiff/generate/generator.h"
#include "skiff/random.h"

namespace skiff::generate {

// A keyed bijection on [0, n).
class NodePermutation {
 public:
  NodePermutation(uint64_t n, uint64_t seed);
  uint64_t Forward(uint64_t x) const;  // internal index -> node ID
  uint64_t Inverse(uint64_t y) const;  // node ID -> internal index

 private:
  uint64_t Encrypt(uint64_t x) const;
  uint64_t Decrypt(uint64_t x) const;
  // Round function of round `round` applied to `half`, reduced to [0, range).
  uint64_t Round(int round, uint64_t half, uint64_t range) const;
  static constexpr int kRounds = 4;  // even: the halves end in their starting sizes
  uint64_t n_;
  uint64_t a_, b_;  // x = hi * b_ + lo with hi < a_, lo < b_
  uint64_t keys_[kRounds];
};

class SbmModel {
 public:
  // `options` must have passed ValidateOptions.
  explicit SbmModel(const GenerateOptions& options);

  int64_t num_nodes() const { return n_; }
  int64_t num_classes() const { return c_; }
  int32_t ClassOf(int64_t node) const;
  // Expected out-degree of `node` (before de-duplication).
  double ExpectedOutDegree(int64_t node) const;
  // Fills `row` with node's out-neighbours, sorted ascending, without duplicates or self loops;
  // returns how many of them share node's class.
  int64_t Row(int64_t node, std::vector<int64_t>* row, std::vector<uint64_t>* scratch) const;
  // Writes node's feature_dim features.
  void Features(int64_t node, float* out) const;
  // Class centroids, C x F row-major (unit vectors).
  const std::vector<float>& centroids() const { return centroids_; }

 private:
  // Sets offset_, the Chung-Lu weights' offset, so that the top expected degree is the
  // structural cutoff.
  void FitWeightOffset();
  // Cumulative weight of ranks [0, x) and its inverse.
  double Cumulative(double x) const;
  double InverseCumulative(double u) const;
  int64_t ClassSize(int64_t cls) const { return n_ / c_ + (cls < n_ % c_ ? 1 : 0); }
  double ExpectedOutDegreeOfRank(int64_t rank, int64_t class_size) const;
  int64_t SampleRank(Rng& rng, int64_t class_size) const;

  const GenerateOptions options_;
  const int64_t n_;
  const int64_t c_;
  const NodePermutation perm_;
  double alpha_ = 0;       // weight(rank) ~ (rank + offset)^-alpha, alpha = 1 / (exponent - 1)
  double offset_ = 1;      // chosen so the top expected degree is the structural cutoff
  double offset_pow_ = 1;  // offset_^(1 - alpha_), cached for the inverse CDF
  double total_weight_small_ = 0, total_weight_large_ = 0;  // Cumulative(class size)
  std::vector<float> centroids_;
};

}  // namespace skiff::generate
