// OrderedDraw: the host sampler's ordered neighbour draw. For every (d, k, generator) it writes
// exactly what DrawOrderedSample (skiff/neighbor_draw.h) writes -- the device sampler draws
// through that function, and a batch must be the same on both -- but it keeps Floyd's chosen
// positions of a long row in a small hash set instead of searching the list for each draw. The
// list search is k^2 / 2 comparisons: with evaluation's fanouts (100 per layer) each hub of the
// `1m` preset cost ~5,000, and the draws were a fifth of an evaluation pass.
//
// Thread safety: one object per thread (it keeps its hash table between draws).
#pragma once

#include <cstdint>
#include <vector>

#include "skiff/neighbor_draw.h"

namespace skiff::sampler {

class OrderedDraw {
 public:
  // Samples up to this long search the list, as DrawOrderedSample does (a few dozen comparisons
  // cost less than hashing).
  static constexpr int64_t kListSearchMax = 16;

  // DrawOrderedSample(d, k, rng, out): k distinct positions of [0, d) as a uniformly random
  // ordered sample. Requires 0 < k < d.
  void Draw(int64_t d, int64_t k, NodeDrawRng& rng, int64_t* out);

 private:
  std::vector<int64_t> table_;  // open addressing over positions, -1: empty
};

// Writes the k distinct positions at `sample` (each in [0, d)) to out[0 .. k) ascending: a walk
// over a bit set of the row for rows up to kBitSetPositions long, a copy and a sort otherwise.
// `out` may be `sample`.
inline constexpr int64_t kBitSetPositions = 4096;
void SortPositions(int64_t d, int64_t k, const int64_t* sample, int64_t* out);

}  // namespace skiff::sampler
