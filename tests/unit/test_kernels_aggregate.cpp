#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/csr_aggregate.h"
#include "kernels/cpu/parallel.h"
#include "tests/unit/test_kernels_util.h"

using namespace skiff;
using cpu::AggregateMode;

namespace {
struct Shape {
  int64_t num_dst, num_src, max_degree, dim;
};
constexpr Shape kShapes[] = {{1, 1, 1, 1}, {1, 5, 4, 3}, {6, 9, 5, 7}, {13, 20, 9, 70}};
}  // namespace

TEST_CASE(
    "kernels: CsrAggregate forward matches plain loops and backward matches finite differences") {
  std::mt19937_64 rng(2);
  for (const Shape& s : kShapes) {
    for (AggregateMode mode :
         {AggregateMode::kSum, AggregateMode::kMean, AggregateMode::kWeighted}) {
      CAPTURE(s.num_dst);
      CAPTURE(s.dim);
      CAPTURE(static_cast<int>(mode));
      sampler::Block block = testing::RandomBlock(s.num_dst, s.num_src, s.max_degree, rng);
      const int64_t nnz = block.num_edges();
      auto w = testing::RandomVector(nnz, rng, 0.1f, 1.0f);
      auto x = testing::RandomVector(s.num_src * s.dim, rng);
      std::vector<float> out(s.num_dst * s.dim);
      auto forward = [&] {
        cpu::CsrAggregateForward(s.num_dst, s.num_src, block.indptr.data(), block.indices.data(),
                                 w.data(), mode, x.data(), s.dim, out.data());
      };
      forward();
      for (int64_t d = 0; d < s.num_dst; ++d) {
        const int64_t degree = block.indptr[d + 1] - block.indptr[d];
        for (int64_t k = 0; k < s.dim; ++k) {
          double expected = 0.0;
          for (int64_t e = block.indptr[d]; e < block.indptr[d + 1]; ++e) {
            const double we = mode == AggregateMode::kSum    ? 1.0
                              : mode == AggregateMode::kMean ? 1.0 / degree
                                                             : w[e];
            expected += we * x[block.indices[e] * s.dim + k];
          }
          CHECK(out[d * s.dim + k] == doctest::Approx(expected).epsilon(1e-5));
        }
      }
      auto r = testing::RandomVector(s.num_dst * s.dim, rng);
      std::vector<float> grad_x(s.num_src * s.dim, 123.0f);  // overwritten
      cpu::CsrAggregateBackward(s.num_dst, s.num_src, block.indptr.data(), block.indices.data(),
                                w.data(), mode, r.data(), s.dim, grad_x.data());
      testing::CheckGradient("grad_x", x, grad_x, [&] {
        forward();
        return testing::Dot(out, r);
      });
    }
  }
}

TEST_CASE("kernels: CsrAggregate results do not depend on the thread count") {
  std::mt19937_64 rng(3);
  sampler::Block block = testing::RandomBlock(300, 400, 40, rng);
  const int64_t dim = 37;
  auto x = testing::RandomVector(400 * dim, rng);
  auto g = testing::RandomVector(300 * dim, rng);
  std::vector<float> out1(300 * dim), out4(300 * dim), gx1(400 * dim), gx4(400 * dim);
  const int saved = cpu::NumThreads();
  cpu::SetNumThreads(1);
  cpu::CsrAggregateForward(300, 400, block.indptr.data(), block.indices.data(), nullptr,
                           AggregateMode::kMean, x.data(), dim, out1.data());
  cpu::CsrAggregateBackward(300, 400, block.indptr.data(), block.indices.data(), nullptr,
                            AggregateMode::kMean, g.data(), dim, gx1.data());
  cpu::SetNumThreads(4);
  cpu::CsrAggregateForward(300, 400, block.indptr.data(), block.indices.data(), nullptr,
                           AggregateMode::kMean, x.data(), dim, out4.data());
  cpu::CsrAggregateBackward(300, 400, block.indptr.data(), block.indices.data(), nullptr,
                            AggregateMode::kMean, g.data(), dim, gx4.data());
  cpu::SetNumThreads(saved);
  CHECK(out1 == out4);
  CHECK(gx1 == gx4);
}

TEST_CASE("kernels: GcnEdgeWeights uses block in/out degrees plus one") {
  // dst 0 <- {0, 1}; dst 1 <- {}; dst 2 <- {1}. Source out-degrees: s0: 1, s1: 2, s2: 0.
  sampler::Block block;
  block.num_dst = 3;
  block.num_src = 3;
  block.indptr = {0, 2, 2, 3};
  block.indices = {0, 1, 1};
  std::vector<float> w(3), self(3);
  cpu::GcnEdgeWeights(3, 3, block.indptr.data(), block.indices.data(), nullptr, w.data(),
                      self.data());
  CHECK(w[0] == doctest::Approx(1.0 / std::sqrt(3.0 * 2.0)));
  CHECK(w[1] == doctest::Approx(1.0 / std::sqrt(3.0 * 3.0)));
  CHECK(w[2] == doctest::Approx(1.0 / std::sqrt(2.0 * 3.0)));
  CHECK(self[0] == doctest::Approx(1.0 / 3.0));
  CHECK(self[1] == doctest::Approx(1.0));
  CHECK(self[2] == doctest::Approx(0.5));
}

TEST_CASE("kernels: GcnEdgeWeights with whole-graph degrees rescales sampled rows") {
  // Same block; whole-graph degrees 4, 2, 1 (row 0 sampled 2 of 4, row 2 took its only edge).
  const std::vector<int64_t> indptr{0, 2, 2, 3};
  const std::vector<int32_t> indices{0, 1, 1};
  const std::vector<int64_t> degree{4, 2, 1};
  std::vector<float> w(3), self(3);
  cpu::GcnEdgeWeights(3, 3, indptr.data(), indices.data(), degree.data(), w.data(), self.data());
  CHECK(w[0] == doctest::Approx(2.0 / std::sqrt(5.0 * 5.0)));
  CHECK(w[1] == doctest::Approx(2.0 / std::sqrt(5.0 * 3.0)));
  CHECK(w[2] == doctest::Approx(1.0 / std::sqrt(2.0 * 3.0)));
  CHECK(self[0] == doctest::Approx(1.0 / 5.0));
  CHECK(self[1] == doctest::Approx(1.0 / 3.0));
  CHECK(self[2] == doctest::Approx(0.5));
}

TEST_CASE("kernels: GcnEdgeWeights with full rows is the full-graph normalisation") {
  // A path 0 - 1 - 2 with every neighbour taken: D^-1/2 (A + I) D^-1/2 with D = deg + 1.
  const std::vector<int64_t> indptr{0, 1, 3, 4};
  const std::vector<int32_t> indices{1, 0, 2, 1};
  const std::vector<int64_t> degree{1, 2, 1};
  std::vector<float> w(4), self(3);
  cpu::GcnEdgeWeights(3, 3, indptr.data(), indices.data(), degree.data(), w.data(), self.data());
  for (int e = 0; e < 4; ++e) CHECK(w[e] == doctest::Approx(1.0 / std::sqrt(6.0)));
  CHECK(self[0] == doctest::Approx(0.5));
  CHECK(self[1] == doctest::Approx(1.0 / 3.0));
}
