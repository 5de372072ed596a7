#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/gat.h"
#include "kernels/cpu/parallel.h"
#include "tests/unit/test_kernels_util.h"

using namespace skiff;

namespace {
struct Shape {
  int64_t num_dst, num_src, max_degree, heads, dim;
};
constexpr Shape kShapes[] = {
    {1, 1, 1, 1, 1}, {1, 4, 3, 2, 3}, {7, 11, 5, 3, 5}, {12, 15, 8, 2, 70}};
constexpr float kSlope = 0.2f;
}  // namespace

TEST_CASE("kernels: AttentionDot forward and backward (finite differences)") {
  std::mt19937_64 rng(4);
  for (const Shape& s : kShapes) {
    const int64_t n = s.num_src;
    auto feat = testing::RandomVector(n * s.heads * s.dim, rng);
    auto attn = testing::RandomVector(s.heads * s.dim, rng);
    std::vector<float> el(n * s.heads);
    auto forward = [&] {
      cpu::AttentionDot(n, s.heads, s.dim, feat.data(), attn.data(), el.data());
    };
    forward();
    for (int64_t h = 0; h < s.heads; ++h) {
      double expected = 0.0;
      for (int64_t k = 0; k < s.dim; ++k) expected += feat[h * s.dim + k] * attn[h * s.dim + k];
      CHECK(el[h] == doctest::Approx(expected).epsilon(1e-5));
    }
    auto r = testing::RandomVector(n * s.heads, rng);
    // Accumulates: start from a known offset and subtract it.
    std::vector<float> grad_feat(feat.size(), 0.5f), grad_attn(attn.size(), 0.25f);
    cpu::AttentionDotBackward(n, s.heads, s.dim, feat.data(), attn.data(), r.data(),
                              grad_feat.data(), grad_attn.data());
    for (float& g : grad_feat) g -= 0.5f;
    for (float& g : grad_attn) g -= 0.25f;
    auto loss = [&] {
      forward();
      return testing::Dot(el, r);
    };
    testing::CheckGradient("grad_feat", feat, grad_feat, loss);
    testing::CheckGradient("grad_attn", attn, grad_attn, loss);
  }
}

TEST_CASE(
    "kernels: GAT edge softmax sums to one per row and its backward matches finite differences") {
  std::mt19937_64 rng(5);
  for (const Shape& s : kShapes) {
    CAPTURE(s.num_dst);
    sampler::Block block = testing::RandomBlock(s.num_dst, s.num_src, s.max_degree, rng);
    const int64_t nnz = block.num_edges();
    auto el = testing::RandomVector(s.num_src * s.heads, rng, -2.0f, 2.0f);
    auto er = testing::RandomVector(s.num_dst * s.heads, rng, -2.0f, 2.0f);
    std::vector<float> alpha(nnz * s.heads);
    auto forward = [&] {
      cpu::GatEdgeSoftmaxForward(s.num_dst, block.indptr.data(), block.indices.data(), s.heads,
                                 el.data(), er.data(), kSlope, alpha.data());
    };
    forward();
    for (int64_t d = 0; d < s.num_dst; ++d) {
      if (block.indptr[d] == block.indptr[d + 1]) continue;
      for (int64_t h = 0; h < s.heads; ++h) {
        double sum = 0.0;
        for (int64_t e = block.indptr[d]; e < block.indptr[d + 1]; ++e)
          sum += alpha[e * s.heads + h];
        CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
      }
    }
    auto r = testing::RandomVector(nnz * s.heads, rng);
    std::vector<float> grad_el(el.size(), 7.0f), grad_er(er.size(), 7.0f);  // overwritten
    cpu::GatEdgeSoftmaxBackward(s.num_dst, s.num_src, block.indptr.data(), block.indices.data(),
                                s.heads, el.data(), er.data(), kSlope, alpha.data(), r.data(),
                                grad_el.data(), grad_er.data());
    auto loss = [&] {
      forward();
      return testing::Dot(alpha, r);
    };
    testing::CheckGradient("grad_el", el, grad_el, loss, 1e-3);
    testing::CheckGradient("grad_er", er, grad_er, loss, 1e-3);
  }
}

TEST_CASE("kernels: GAT aggregation forward and backward (finite differences)") {
  std::mt19937_64 rng(6);
  for (const Shape& s : kShapes) {
    CAPTURE(s.num_dst);
    sampler::Block block = testing::RandomBlock(s.num_dst, s.num_src, s.max_degree, rng);
    const int64_t nnz = block.num_edges();
    auto alpha = testing::RandomVector(nnz * s.heads, rng, 0.0f, 1.0f);
    auto feat = testing::RandomVector(s.num_src * s.heads * s.dim, rng);
    std::vector<float> out(s.num_dst * s.heads * s.dim);
    auto forward = [&] {
      cpu::GatAggregateForward(s.num_dst, block.indptr.data(), block.indices.data(), s.heads, s.dim,
                               alpha.data(), feat.data(), out.data());
    };
    forward();
    for (int64_t d = 0; d < s.num_dst; ++d) {
      for (int64_t h = 0; h < s.heads; ++h) {
        double expected = 0.0;
        for (int64_t e = block.indptr[d]; e < block.indptr[d + 1]; ++e) {
          expected += alpha[e * s.heads + h] * feat[(block.indices[e] * s.heads + h) * s.dim];
        }
        CHECK(out[(d * s.heads + h) * s.dim] == doctest::Approx(expected).epsilon(1e-5));
      }
    }
    auto r = testing::RandomVector(out.size(), rng);
    std::vector<float> grad_feat(feat.size(), 3.0f), grad_alpha(alpha.size(), 3.0f);
    cpu::GatAggregateBackward(s.num_dst, s.num_src, block.indptr.data(), block.indices.data(),
                              s.heads, s.dim, alpha.data(), feat.data(), r.data(), grad_feat.data(),
                              grad_alpha.data());
    auto loss = [&] {
      forward();
      return testing::Dot(out, r);
    };
    testing::CheckGradient("grad_feat", feat, grad_feat, loss);
    testing::CheckGradient("grad_alpha", alpha, grad_alpha, loss);
  }
}

TEST_CASE("kernels: GAT kernels give bit-identical results for any thread count") {
  std::mt19937_64 rng(14);
  const int64_t nd = 200, ns = 300, heads = 3, dim = 21;
  sampler::Block block = testing::RandomBlock(nd, ns, 30, rng);
  const int64_t nnz = block.num_edges();
  auto feat = testing::RandomVector(ns * heads * dim, rng);
  auto attn = testing::RandomVector(heads * dim, rng);
  auto grad_out = testing::RandomVector(nd * heads * dim, rng);
  auto run = [&](int threads) {
    const int saved = cpu::NumThreads();
    cpu::SetNumThreads(threads);
    std::vector<float> el(ns * heads), er(nd * heads), alpha(nnz * heads), out(nd * heads * dim);
    std::vector<float> grad_feat(feat.size()), grad_alpha(alpha.size()), grad_el(el.size()),
        grad_er(er.size()), grad_attn(attn.size(), 0.0f);
    cpu::AttentionDot(ns, heads, dim, feat.data(), attn.data(), el.data());
    cpu::AttentionDot(nd, heads, dim, feat.data(), attn.data(), er.data());
    cpu::GatEdgeSoftmaxForward(nd, block.indptr.data(), block.indices.data(), heads, el.data(),
                               er.data(), kSlope, alpha.data());
    cpu::GatAggregateForward(nd, block.indptr.data(), block.indices.data(), heads, dim,
                             alpha.data(), feat.data(), out.data());
    cpu::GatAggregateBackward(nd, ns, block.indptr.data(), block.indices.data(), heads, dim,
                              alpha.data(), feat.data(), grad_out.data(), grad_feat.data(),
                              grad_alpha.data());
    cpu::GatEdgeSoftmaxBackward(nd, ns, block.indptr.data(), block.indices.data(), heads, el.data(),
                                er.data(), kSlope, alpha.data(), grad_alpha.data(), grad_el.data(),
                                grad_er.data());
    cpu::AttentionDotBackward(ns, heads, dim, feat.data(), attn.data(), grad_el.data(),
                              grad_feat.data(), grad_attn.data());
    cpu::SetNumThreads(saved);
    return std::vector<std::vector<float>>{out, grad_feat, grad_alpha, grad_el, grad_er, grad_attn};
  };
  const auto one = run(1);
  const auto three = run(3);
  for (size_t i = 0; i < one.size(); ++i) CHECK(one[i] == three[i]);
}
