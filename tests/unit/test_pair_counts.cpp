// Tests of PairCounts (GREM's cluster-graph edge counts): counts equal a map's over streams that
// merge many times, the distinct-pair limit, and keys that use all 32 bits of either half.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "src/partition/pair_counts.h"

using skiff::partition::PairCounts;

namespace {

using Pair = std::pair<uint32_t, uint32_t>;

// Adds `pairs` in order and checks the result against a std::map's counts.
void CheckAgainstMap(size_t max_distinct, const std::vector<Pair>& pairs) {
  PairCounts counts(max_distinct);
  std::map<Pair, int64_t> expected;
  for (const auto& [a, b] : pairs) {
    counts.Add(a, b);
    ++expected[{a, b}];
  }
  REQUIRE(counts.Finish());
  const std::vector<PairCounts::Entry>& got = counts.entries();
  REQUIRE(got.size() == expected.size());
  size_t i = 0;
  for (const auto& [pair, n] : expected) {
    CHECK(got[i].first() == pair.first);
    CHECK(got[i].second() == pair.second);
    CHECK(got[i].count == n);
    ++i;
  }
}

}  // namespace

TEST_CASE("PairCounts: counts equal a map's across many merges") {
  std::mt19937_64 rng(7);
  for (const uint32_t range : {3u, 40u, 1000u}) {
    CAPTURE(range);
    std::uniform_int_distribution<uint32_t> id(0, range - 1);
    std::vector<Pair> pairs(20000);
    for (Pair& p : pairs) p = {id(rng), id(rng)};
    // A limit of 4 * range^2 keeps the buffer at a quarter of it: every few hundred pairs merge.
    CheckAgainstMap(std::min<size_t>(4 * size_t{range} * range, 1 << 20), pairs);
  }
}

TEST_CASE("PairCounts: the buffer merges into counts that already hold its keys") {
  // The same 50 pairs over and over, then 50 new ones smaller and larger than all of them.
  std::vector<Pair> pairs;
  for (int round = 0; round < 40; ++round) {
    for (uint32_t i = 0; i < 50; ++i) pairs.push_back({100 + i, i % 7});
  }
  for (uint32_t i = 0; i < 25; ++i) {
    pairs.push_back({i, 0});
    pairs.push_back({1000 + i, 5});
  }
  CheckAgainstMap(400, pairs);  // buffer of 100 keys: 21 merges
}

TEST_CASE("PairCounts: keys use all 32 bits of both halves") {
  const uint32_t top = 0xffffffffu;
  CheckAgainstMap(16, {{top, top},
                       {0, top},
                       {top, 0},
                       {0, 0},
                       {0x80000000u, 1},
                       {top, top},
                       {1, 0x80000000u},
                       {0, top}});
}

TEST_CASE("PairCounts: no pairs") {
  PairCounts counts(10);
  CHECK(counts.Finish());
  CHECK(counts.entries().empty());
  CHECK_FALSE(counts.full());
}

TEST_CASE("PairCounts: the distinct-pair limit") {
  SUBCASE("exactly the limit fits, repeated as often as wanted") {
    PairCounts counts(8);
    for (int round = 0; round < 10; ++round) {
      for (uint32_t i = 0; i < 8; ++i) counts.Add(i, i + 1);
    }
    REQUIRE(counts.Finish());
    REQUIRE(counts.entries().size() == 8);
    for (const PairCounts::Entry& e : counts.entries()) CHECK(e.count == 10);
  }
  SUBCASE("one more is full, at a merge or at the end") {
    for (const size_t limit : {size_t{8}, size_t{1000}}) {
      CAPTURE(limit);
      PairCounts counts(limit);
      for (uint32_t i = 0; i <= limit; ++i) counts.Add(i, 0);
      CHECK_FALSE(counts.Finish());
      CHECK(counts.full());
      CHECK(counts.entries().empty());
      counts.Add(1, 1);  // ignored once full
      CHECK(counts.entries().empty());
    }
  }
  SUBCASE("a limit of zero takes no pair") {
    PairCounts counts(0);
    counts.Add(1, 2);
    CHECK_FALSE(counts.Finish());
  }
}
