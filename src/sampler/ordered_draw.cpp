#include "skiff/sampler/ordered_draw.h"

#include <algorithm>
#include <bit>

#include "skiff/status.h"

namespace skiff::sampler {

void OrderedDraw::Draw(int64_t d, int64_t k, NodeDrawRng& rng, int64_t* out) {
  SKIFF_CHECK(0 < k && k < d);
  if (d <= kMaskPositions || k <= kListSearchMax) {
    DrawOrderedSample(d, k, rng, out);
    return;
  }
  // Floyd's subset as DrawOrderedSample's list path draws it (the same positions in the same
  // order), with membership in a table of at least 2k slots.
  const auto slots = std::bit_ceil(static_cast<uint64_t>(2 * k));
  const int shift = 64 - std::countr_zero(slots);
  table_.assign(slots, -1);
  const uint64_t mask = slots - 1;
  auto insert = [&](int64_t position) {  // false when already present
    uint64_t i = (static_cast<uint64_t>(position) * 0x9E3779B97F4A7C15ull) >> shift;
    while (table_[i] >= 0) {
      if (table_[i] == position) return false;
      i = (i + 1) & mask;
    }
    table_[i] = position;
    return true;
  };
  int64_t n = 0;
  for (int64_t j = d - k; j < d; ++j) {
    const int64_t t = rng.Below(j + 1);
    if (insert(t)) {
      out[n++] = t;
    } else {
      insert(j);  // every earlier pick is below j: j is new
      out[n++] = j;
    }
  }
  ShuffleSample(k, rng, out);
}

void SortPositions(int64_t d, int64_t k, const int64_t* sample, int64_t* out) {
  if (d <= kMaskPositions || d > kBitSetPositions) {
    if (out != sample) std::copy_n(sample, k, out);
    if (d <= kMaskPositions) {
      MaskSortPositions(k, out);
    } else {
      std::sort(out, out + k);
    }
    return;
  }
  uint64_t words[kBitSetPositions / 64];
  const auto num_words = static_cast<size_t>((d + 63) / 64);
  std::fill_n(words, num_words, uint64_t{0});
  for (int64_t i = 0; i < k; ++i) {
    words[static_cast<uint64_t>(sample[i]) >> 6] |= uint64_t{1} << (sample[i] & 63);
  }
  int64_t at = 0;
  for (size_t w = 0; w < num_words; ++w) {
    for (uint64_t bits = words[w]; bits != 0; bits &= bits - 1) {
      out[at++] = static_cast<int64_t>(w * 64) + std::countr_zero(bits);
    }
  }
}

}  // namespace skiff::sampler
