// ParallelSort: std::sort on several threads, in place and allocating nothing, for the large
// sorts of conversion (the edge sorter's runs, the ID mapper's spilled IDs).
//
// The range is split at its median (std::nth_element, one linear pass) and the two halves are
// sorted at once, recursively while threads remain; ranges under 65,536 elements take one thread.
// The result is the sorted range: for a strict weak order it differs from std::sort's only in the
// order of equivalent elements, and not at all where equivalent means equal.
//
// Thread safety: `less` is called from several threads at once and must not write shared state.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iterator>
#include <thread>

namespace skiff {

// The threads a large sort uses by default: the hardware's, at most 8.
inline int DefaultSortThreads() {
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::min(hardware, 8u));
}

template <typename RandomIt, typename Less>
void ParallelSort(RandomIt begin, RandomIt end, int threads, Less less) {
  constexpr std::ptrdiff_t kMinParallel = std::ptrdiff_t{1} << 16;
  if (threads <= 1 || std::distance(begin, end) < kMinParallel) {
    std::sort(begin, end, less);
    return;
  }
  const RandomIt mid = begin + std::distance(begin, end) / 2;
  std::nth_element(begin, mid, end, less);
  const int left_threads = threads / 2;
  std::thread left([=] { ParallelSort(begin, mid, left_threads, less); });
  ParallelSort(mid, end, threads - left_threads, less);
  left.join();
}

template <typename RandomIt>
void ParallelSort(RandomIt begin, RandomIt end, int threads) {
  ParallelSort(begin, end, threads, std::less<>());
}

}  // namespace skiff
