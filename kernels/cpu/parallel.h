// A tiny parallel-for over index ranges for the CPU kernels.
//
// ParallelFor(n, min_chunk, fn) splits [0, n) into at most NumThreads() contiguous chunks of at
// least `min_chunk` indices and calls fn(begin, end) once per chunk: chunks after the first run on
// freshly started std::threads, the first on the calling thread, and the call returns when all are
// done. When one chunk suffices (small n, or NumThreads() == 1) fn runs inline with no thread
// started, so small ops cost nothing extra. Chunk boundaries depend only on n, min_chunk and
// NumThreads(), and each chunk writes disjoint outputs, so results are deterministic for a given
// thread count (kernels that reduce across chunks say how they stay deterministic).
//
// Thread safety: ParallelFor may be called from several threads at once. SetNumThreads changes a
// process-wide setting and should be called once at start-up.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace skiff::cpu {

// Sets the number of threads CPU kernels (including Gemm) use; values < 1 mean "all hardware
// threads". Default: all hardware threads.
void SetNumThreads(int threads);
int NumThreads();

template <typename Fn>
void ParallelFor(int64_t n, int64_t min_chunk, Fn&& fn) {
  if (n <= 0) return;
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(1, min_chunk));
  const int64_t chunks = std::min<int64_t>(NumThreads(), max_chunks);
  if (chunks <= 1) {
    fn(int64_t{0}, n);
    return;
  }
  const int64_t per_chunk = (n + chunks - 1) / chunks;
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(chunks - 1));
  for (int64_t chunk = 1; chunk < chunks; ++chunk) {
    const int64_t begin = chunk * per_chunk;
    const int64_t end = std::min(n, begin + per_chunk);
    if (begin >= end) break;
    workers.emplace_back([&fn, begin, end] { fn(begin, end); });
  }
  fn(int64_t{0}, std::min(n, per_chunk));
  for (std::thread& worker : workers) worker.join();
}

// Column tile used by kernels that accumulate a row in double precision on the stack.
inline constexpr int64_t kAccumTile = 64;

}  // namespace skiff::cpu
