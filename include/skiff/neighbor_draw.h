// One node's neighbour draw: which positions of its row a sampled batch takes, as a pure function
// of (batch seed, node ID, degree, sample length).
//
// The host sampler (sampler/neighbor_sampler.h) and the device sampler (kernels/cuda/sample.cuh)
// both draw through these functions, so a batch sampled on either is the same batch, and a node's
// draw does not depend on which thread draws it or on the other nodes of the batch (the device
// draws every node of a hop in parallel). The generator is a node's own SplitMix64 stream, started
// at HashKey(batch seed, kNodeDrawStream, node) (NodeDrawKey, NodeDrawRngFor).
//
// Compiled for the host and, under nvcc, for CUDA device code (SKIFF_HOST_DEVICE): no exceptions,
// no allocation, no standard library beyond <cstdint>, the same results on both (MulHi64 takes
// each side's instruction for the same exact product).
//
// Thread safety: pure functions over caller-owned arrays.
#pragma once

#include <cstdint>

#include "skiff/random.h"

#if defined(__CUDACC__)
#define SKIFF_HOST_DEVICE __host__ __device__
#else
#define SKIFF_HOST_DEVICE
#endif

namespace skiff {

// Rows up to this long keep a set of positions as the bits of one word: membership is a shift and
// the ascending order a walk over the set bits (nearly every row of a sampled batch is this short).
inline constexpr int64_t kMaskPositions = 64;

// The stream of HashKey a node's draw starts from ("node").
inline constexpr uint64_t kNodeDrawStream = 0x6e6f6465;

// The high 64 bits of a * b from 32-bit halves, for targets without a 128-bit product.
SKIFF_HOST_DEVICE inline uint64_t MulHi64Halves(uint64_t a, uint64_t b) {
  const uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32;
  const uint64_t b_lo = b & 0xffffffffu, b_hi = b >> 32;
  const uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi;
  const uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xffffffffu) + lo_hi;
  return a_hi * b_hi + (hi_lo >> 32) + (cross >> 32);
}

// The high 64 bits of a * b: one instruction on the device (__umul64hi) and on hosts with a
// 128-bit product (x86-64, AArch64), MulHi64Halves elsewhere. The same value everywhere.
SKIFF_HOST_DEVICE inline uint64_t MulHi64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(a, b);
#elif defined(__SIZEOF_INT128__)
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#else
  return MulHi64Halves(a, b);
#endif
}

// Index of the lowest set bit of a non-zero word.
SKIFF_HOST_DEVICE inline int LowestBit(uint64_t word) {
#if defined(__CUDA_ARCH__)
  return __ffsll(static_cast<long long>(word)) - 1;
#else
  return __builtin_ctzll(word);
#endif
}

// A node's own generator for one batch.
struct NodeDrawRng {
  uint64_t state = 0;
  SKIFF_HOST_DEVICE uint64_t Next() { return SplitMix64Next(state); }
  // Uniform in [0, n), n > 0: Lemire's multiply-shift without rejection (the bias is < n / 2^64).
  SKIFF_HOST_DEVICE int64_t Below(int64_t n) {
    return static_cast<int64_t>(MulHi64(Next(), static_cast<uint64_t>(n)));
  }
};

// A batch's key for its nodes' draws (computed once per batch), and a node's generator from it:
// SplitMix64 started at Mix64(key ^ node), that is HashKey(batch_seed, kNodeDrawStream, node).
SKIFF_HOST_DEVICE inline uint64_t NodeDrawKey(uint64_t batch_seed) {
  return Mix64(batch_seed ^ Mix64(kNodeDrawStream));
}
SKIFF_HOST_DEVICE inline NodeDrawRng NodeDrawRngFor(uint64_t key, int64_t node) {
  return NodeDrawRng{Mix64(key ^ static_cast<uint64_t>(node))};
}

// How long a node's ordered sample is: the largest fanout below its degree among the blocks it is
// a destination of. A node that first appears at hop `first_hop` (0: the seeds) of a batch of
// `num_layers` blocks is a destination of blocks 0 .. num_layers - 1 - first_hop; `fanouts` are
// per block, input layer first (-1: every neighbour). 0 when every such block takes its whole row.
SKIFF_HOST_DEVICE inline int64_t SampleLength(const int* fanouts, int num_layers, int first_hop,
                                              int64_t degree) {
  int64_t longest = 0;
  for (int l = 0; l <= num_layers - 1 - first_hop; ++l) {
    if (fanouts[l] < degree && fanouts[l] > longest) longest = fanouts[l];
  }
  return longest;
}

// Fisher-Yates shuffle of out[0 .. k): the second half of DrawOrderedSample.
SKIFF_HOST_DEVICE inline void ShuffleSample(int64_t k, NodeDrawRng& rng, int64_t* out) {
  for (int64_t i = k - 1; i > 0; --i) {
    const int64_t r = rng.Below(i + 1);
    const int64_t held = out[i];
    out[i] = out[r];
    out[r] = held;
  }
}

// Writes k distinct positions of [0, d) to out[0 .. k) as a uniformly random *ordered* sample:
// Floyd's uniform subset (kept as a bit set when d <= kMaskPositions, in insertion order
// otherwise, a linear search per draw), then a Fisher-Yates shuffle. Requires 0 < k < d. The host
// sampler draws long samples through sampler::OrderedDraw, which gives the same output faster.
SKIFF_HOST_DEVICE inline void DrawOrderedSample(int64_t d, int64_t k, NodeDrawRng& rng,
                                                int64_t* out) {
  if (d <= kMaskPositions) {
    uint64_t mask = 0;
    for (int64_t j = d - k; j < d; ++j) {
      const int64_t t = rng.Below(j + 1);
      mask |= uint64_t{1} << (((mask >> t) & 1) != 0 ? j : t);
    }
    for (int64_t i = 0; mask != 0; mask &= mask - 1) out[i++] = LowestBit(mask);
  } else {
    int64_t n = 0;
    for (int64_t j = d - k; j < d; ++j) {
      const int64_t t = rng.Below(j + 1);
      bool seen = false;
      for (int64_t i = 0; i < n && !seen; ++i) seen = out[i] == t;
      out[n++] = seen ? j : t;
    }
  }
  ShuffleSample(k, rng, out);
}

// Sorts k distinct positions of a row of d <= kMaskPositions ascending, through a bit set.
SKIFF_HOST_DEVICE inline void MaskSortPositions(int64_t k, int64_t* positions) {
  uint64_t mask = 0;
  for (int64_t i = 0; i < k; ++i) mask |= uint64_t{1} << positions[i];
  for (int64_t i = 0; mask != 0; mask &= mask - 1) positions[i++] = LowestBit(mask);
}

}  // namespace skiff
