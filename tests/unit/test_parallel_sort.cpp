// Tests of ParallelSort: the same order as std::sort for every thread count and size around the
// one-thread threshold, with a caller's comparator, and with many equal keys.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "skiff/parallel_sort.h"

namespace {

std::vector<uint64_t> RandomValues(size_t n, uint64_t range, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> value(0, range - 1);
  std::vector<uint64_t> v(n);
  for (uint64_t& x : v) x = value(rng);
  return v;
}

}  // namespace

TEST_CASE("ParallelSort equals std::sort") {
  for (const size_t n : {size_t{0}, size_t{1}, size_t{65535}, size_t{65536}, size_t{300001}}) {
    for (const uint64_t range : {uint64_t{5}, uint64_t{1} << 40}) {
      const std::vector<uint64_t> input = RandomValues(n, range, n + range);
      std::vector<uint64_t> expect = input;
      std::sort(expect.begin(), expect.end());
      for (const int threads : {1, 2, 3, 8}) {
        CAPTURE(n);
        CAPTURE(range);
        CAPTURE(threads);
        std::vector<uint64_t> got = input;
        skiff::ParallelSort(got.begin(), got.end(), threads);
        CHECK(got == expect);
      }
    }
  }
}

TEST_CASE("ParallelSort uses the caller's order") {
  const std::vector<uint64_t> input = RandomValues(200000, 1000, 3);
  std::vector<uint64_t> expect = input;
  std::sort(expect.begin(), expect.end(), std::greater<>());
  std::vector<uint64_t> got = input;
  skiff::ParallelSort(got.begin(), got.end(), 4, std::greater<>());
  CHECK(got == expect);
}

TEST_CASE("DefaultSortThreads is between 1 and 8") {
  CHECK(skiff::DefaultSortThreads() >= 1);
  CHECK(skiff::DefaultSortThreads() <= 8);
}
