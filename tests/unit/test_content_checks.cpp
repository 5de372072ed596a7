// The checks readers make of what they read (format/content_checks.h): the word-at-a-time scans
// against element-by-element answers at every position and length, and the messages.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "skiff/format/content_checks.h"
#include "skiff/half.h"

using namespace skiff;
using namespace skiff::format;

namespace {
bool Has(const Status& st, const std::string& part) {
  return st.message().find(part) != std::string::npos;
}
}  // namespace

TEST_CASE("content checks: a non-finite value is found at every position of every length") {
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  // Finite extremes: the largest, the smallest normal and subnormal, negative zero.
  const float fine[] = {std::numeric_limits<float>::max(),
                        -std::numeric_limits<float>::max(),
                        std::numeric_limits<float>::min(),
                        std::numeric_limits<float>::denorm_min(),
                        -0.0f,
                        1.5f};
  for (size_t n = 0; n <= 21; ++n) {
    std::vector<float> values(n);
    for (size_t i = 0; i < n; ++i) values[i] = fine[i % std::size(fine)];
    CHECK(FirstNonFinite(values) == -1);
    for (size_t at = 0; at < n; ++at) {
      for (const float b : bad) {
        CAPTURE(n);
        CAPTURE(at);
        std::vector<float> v = values;
        v[at] = b;
        if (at + 1 < n) v[n - 1] = b;  // a later bad value does not hide the first
        CHECK(FirstNonFinite(v) == static_cast<int64_t>(at));
      }
    }
  }
}

TEST_CASE("content checks: a non-finite half-precision value is found at every position") {
  const uint16_t bad[] = {0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xffff};  // inf, -inf, NaNs
  const uint16_t fine[] = {0x7bff, 0xfbff, 0x0001, 0x8000, FloatToHalf(2.5f)};
  for (size_t n = 0; n <= 21; ++n) {
    std::vector<uint16_t> values(n);
    for (size_t i = 0; i < n; ++i) values[i] = fine[i % std::size(fine)];
    CHECK(FirstNonFiniteHalf(values) == -1);
    for (size_t at = 0; at < n; ++at) {
      for (const uint16_t b : bad) {
        CAPTURE(n);
        CAPTURE(at);
        std::vector<uint16_t> v = values;
        v[at] = b;
        CHECK(FirstNonFiniteHalf(v) == static_cast<int64_t>(at));
      }
    }
  }
}

TEST_CASE("content checks: an ID outside [0, N) is found at every position, for any N") {
  for (const int64_t n : {int64_t{1}, int64_t{600}, int64_t{1} << 30, (int64_t{1} << 31) - 1,
                          int64_t{1} << 31, int64_t{1} << 40}) {
    const int32_t top = static_cast<int32_t>(std::min<int64_t>(n - 1, INT32_MAX));
    std::vector<int32_t> bad32 = {-1, std::numeric_limits<int32_t>::min()};
    if (n <= INT32_MAX) bad32.push_back(static_cast<int32_t>(n));
    if (n < INT32_MAX) bad32.push_back(INT32_MAX);
    for (size_t len = 0; len <= 13; ++len) {
      std::vector<int32_t> ids(len);
      for (size_t i = 0; i < len; ++i) ids[i] = i % 2 == 0 ? 0 : top;
      CAPTURE(n);
      CAPTURE(len);
      CHECK(FirstIdOutOfRange(std::span<const int32_t>(ids), n) == -1);
      std::vector<int64_t> wide(ids.begin(), ids.end());
      CHECK(FirstIdOutOfRange(std::span<const int64_t>(wide), n) == -1);
      for (size_t at = 0; at < len; ++at) {
        for (const int32_t b : bad32) {
          CAPTURE(at);
          CAPTURE(b);
          std::vector<int32_t> v = ids;
          v[at] = b;
          CHECK(FirstIdOutOfRange(std::span<const int32_t>(v), n) == static_cast<int64_t>(at));
          std::vector<int64_t> w(v.begin(), v.end());
          CHECK(FirstIdOutOfRange(std::span<const int64_t>(w), n) == static_cast<int64_t>(at));
        }
      }
    }
  }
}

TEST_CASE("content checks: offsets name the entry, its node and its value") {
  const std::vector<int64_t> good = {0, 2, 2, 5};
  CHECK(CheckOffsets("g/graph.offsets", good, 0, 0, 3, 5).ok());
  // A chunk of the middle, continuing from the entry before it.
  CHECK(CheckOffsets("g/graph.offsets", std::vector<int64_t>{2, 5}, 2, 2, 3, 5).ok());
  CHECK(Has(CheckOffsets("g/graph.offsets", std::vector<int64_t>{1, 5}, 2, 2, 3, 5),
            "g/graph.offsets: offsets of node 1 decrease (entry 1 = 2, entry 2 = 1)"));
  CHECK(Has(CheckOffsets("g/graph.offsets", std::vector<int64_t>{3, 2, 2, 5}, 0, 0, 3, 5),
            "entry 0 = 3; the first offset must be 0"));
  CHECK(Has(CheckOffsets("g/graph.offsets", std::vector<int64_t>{0, 2, 2, 4}, 0, 0, 3, 5),
            "entry 3 = 4, the end of the last row, but num_edges is 5"));
  CHECK(Has(CheckOffsets("g/graph.offsets", std::vector<int64_t>{0, 9, 2, 5}, 0, 0, 3, 5),
            "entry 1 = 9 (a bound of node 1's row), outside [0, num_edges = 5]"));
  CHECK(Has(CheckOffsets("g/graph.offsets", std::vector<int64_t>{0, -1, 2, 5}, 0, 0, 3, 5),
            "entry 1 = -1"));
}

TEST_CASE("content checks: splits, relabellings and edge splits") {
  const std::vector<int64_t> train = {0, 3}, valid = {1}, test = {2, 3};
  const std::vector<int64_t>* splits[] = {&train, &valid, &test};
  const char* names[] = {"train.idx", "valid.idx", "test.idx"};
  CHECK(Has(CheckSplitsDisjoint("d", splits, names, 4),
            "d: node 3 is in both train.idx and test.idx; splits must be disjoint"));
  const std::vector<int64_t> disjoint = {2};
  const std::vector<int64_t>* ok[] = {&train, &valid, &disjoint};
  CHECK(CheckSplitsDisjoint("d", ok, names, 4).ok());

  CHECK(CheckPermutation("r", std::vector<int64_t>{2, 0, 1}).ok());
  CHECK(Has(CheckPermutation("r", std::vector<int64_t>{2, 0, 2}),
            "r: node 2 maps to ID 2, which is out of range or taken"));
  CHECK(Has(CheckPermutation("r", std::vector<int64_t>{0, 3, 1}), "node 1 maps to ID 3"));

  const std::vector<int64_t> lt = {0, 1, 1, 2, 2, 3}, lv = {3, 0}, ls = {4, 5};
  const char* link_names[] = {"link_train.edges", "link_valid.edges", "link_test.edges"};
  const std::vector<int64_t>* fine[] = {&lt, &lv, &ls};
  CHECK(CheckEdgeSplitDisjoint("d", /*undirected=*/false, fine, link_names).ok());
  // Undirected, (3, 0) is the pair (0, 3) whichever way it is written; (2, 1) is train's (1, 2).
  const std::vector<int64_t> reversed = {2, 1};
  const std::vector<int64_t>* overlap[] = {&lt, &lv, &reversed};
  CHECK(CheckEdgeSplitDisjoint("d", false, overlap, link_names).ok());
  CHECK(Has(CheckEdgeSplitDisjoint("d", true, overlap, link_names),
            "d/link_train.edges: pair 1 (1, 2) is also in link_test.edges; the splits must be "
            "disjoint"));
}

TEST_CASE("content checks: messages name the file, node, column and value") {
  CHECK(Has(NonFiniteFeature("d/features.bin", 7, 3, std::nanf("")),
            "d/features.bin: node 7 has feature 3 = nan; feature values must be finite"));
  CHECK(Has(NonFiniteFeature("f", 0, 0, -std::numeric_limits<float>::infinity()), "= -inf"));
  CHECK(Has(NeighborOutOfRange("d/graph.neighbors", 4, -2, 10),
            "d/graph.neighbors: node 4 has neighbour -2, outside [0, num_nodes = 10)"));
}
