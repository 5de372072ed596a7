// sampler::OrderedDraw and sampler::SortPositions: the host's faster forms of the device-shared
// draw (skiff/neighbor_draw.h) give exactly its output -- a batch sampled on the host and on the
// device must be the same batch -- over both of their paths and the thresholds between them.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "skiff/neighbor_draw.h"
#include "skiff/sampler/ordered_draw.h"

using namespace skiff;
using sampler::OrderedDraw;

namespace {

// Degrees around every threshold: the bit-set draw (64), the list search (k 16), the bit-set sort
// (4096), and long rows.
std::vector<int64_t> Degrees() {
  return {2, 17, 63, 64, 65, 66, 100, 101, 127, 128, 129, 1000, 4095, 4096, 4097, 20000};
}

std::vector<int64_t> Lengths(int64_t d) {
  std::vector<int64_t> ks = {1, 2, 15, 16, 17, 33, 64, 100, 128, 200, d / 2, d - 2, d - 1};
  ks.erase(std::remove_if(ks.begin(), ks.end(), [d](int64_t k) { return k < 1 || k >= d; }),
           ks.end());
  return ks;
}

}  // namespace

TEST_CASE("OrderedDraw draws exactly what DrawOrderedSample draws") {
  OrderedDraw draw;  // one object for every draw, as a sampler thread uses it
  for (int64_t d : Degrees()) {
    for (int64_t k : Lengths(d)) {
      CAPTURE(d);
      CAPTURE(k);
      for (int64_t node = 0; node < 40; ++node) {
        std::vector<int64_t> want(static_cast<size_t>(k)), got(static_cast<size_t>(k), -7);
        NodeDrawRng a = NodeDrawRngFor(NodeDrawKey(11), node * 7919);
        NodeDrawRng b = a;
        DrawOrderedSample(d, k, a, want.data());
        draw.Draw(d, k, b, got.data());
        REQUIRE(got == want);
        CHECK(a.state == b.state);  // the same number of draws from the generator
      }
    }
  }
}

TEST_CASE("SortPositions sorts a sample's positions, in place or into another array") {
  OrderedDraw draw;
  for (int64_t d : Degrees()) {
    for (int64_t k : Lengths(d)) {
      CAPTURE(d);
      CAPTURE(k);
      for (int64_t node = 0; node < 10; ++node) {
        std::vector<int64_t> sample(static_cast<size_t>(k));
        NodeDrawRng rng = NodeDrawRngFor(NodeDrawKey(3), node);
        draw.Draw(d, k, rng, sample.data());
        std::vector<int64_t> want = sample;
        std::sort(want.begin(), want.end());
        std::vector<int64_t> out(static_cast<size_t>(k), -1);
        sampler::SortPositions(d, k, sample.data(), out.data());
        REQUIRE(out == want);
        sampler::SortPositions(d, k, sample.data(), sample.data());
        REQUIRE(sample == want);
      }
    }
  }
  // The last position of a row whose length is a multiple of 64 (the bit set's last word).
  const int64_t edge[] = {4095, 0, 64, 63};
  int64_t out[4];
  sampler::SortPositions(4096, 4, edge, out);
  CHECK(std::vector<int64_t>(out, out + 4) == std::vector<int64_t>{0, 63, 64, 4095});
}
