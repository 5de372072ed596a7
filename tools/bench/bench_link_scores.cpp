// Times the two ways of scoring sources against candidates (kernels/cpu/link_score.h): one GEMM
// (CrossScores: evaluation's negatives, training) and pair by pair (CrossPairScores: ranking, where
// equal candidates must tie and a score must not depend on its place in the call), at the shapes
// evaluation uses: one source against 1,000 candidates (a ranking call), and 512 sources against
// 100 negatives (an evaluation batch). The two alternate, six rounds; times are means per call.
// Not part of the build; compile by hand (see BENCHMARKS.md, "Link scores: GEMM or pair by pair"):
//   g++ -O2 -std=c++20 -Iinclude -I. tools/bench/bench_link_scores.cpp build/libskiff_core.a \
//       -lopenblas -lpthread -o build/bench_link_scores
//   build/bench_link_scores
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "kernels/cpu/link_score.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Shape {
  int64_t n, k;
  const char* what;
};

// Mean seconds per call of CrossScores ([0]) and CrossPairScores ([1]), alternating.
void Time(const std::vector<float>& emb, int64_t dim, const std::vector<int32_t>& src,
          const std::vector<int32_t>& cand, int iters, double* seconds) {
  std::vector<float> out(src.size() * cand.size());
  const auto n = static_cast<int64_t>(src.size()), k = static_cast<int64_t>(cand.size());
  constexpr int kRounds = 6;
  for (int round = 0; round < kRounds; ++round) {
    for (int which = 0; which < 2; ++which) {
      const auto t0 = Clock::now();
      for (int i = 0; i < iters; ++i) {
        if (which == 0) {
          skiff::cpu::CrossScores(emb.data(), dim, src.data(), n, cand.data(), k, nullptr,
                                  out.data());
        } else {
          skiff::cpu::CrossPairScores(emb.data(), dim, src.data(), n, cand.data(), k, nullptr,
                                      out.data());
        }
      }
      seconds[which] += std::chrono::duration<double>(Clock::now() - t0).count() / iters / kRounds;
    }
  }
}

}  // namespace

int main() {
  constexpr int64_t kRows = 20000;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (const int64_t dim : {64, 128}) {
    std::vector<float> emb(static_cast<size_t>(kRows * dim));
    for (float& v : emb) v = value(rng);
    for (const Shape s : {Shape{1, 1000, "ranking, 1 source x 1000 candidates"},
                          Shape{512, 100, "evaluation, 512 sources x 100 negatives"}}) {
      std::vector<int32_t> src(static_cast<size_t>(s.n)), cand(static_cast<size_t>(s.k));
      for (int32_t& x : src) x = static_cast<int32_t>(rng() % kRows);
      for (int32_t& x : cand) x = static_cast<int32_t>(rng() % kRows);
      double seconds[2] = {0, 0};
      Time(emb, dim, src, cand, s.n == 1 ? 2000 : 20, seconds);
      std::printf("dim %3ld, %-40s GEMM %8.1f us, pair by pair %8.1f us (%.2fx)\n",
                  static_cast<long>(dim), s.what, seconds[0] * 1e6, seconds[1] * 1e6,
                  seconds[1] / seconds[0]);
    }
  }
  return 0;
}
