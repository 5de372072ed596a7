// Finite-difference gradient checks of the CUDA forward/backward pairs that are not linear (the
// linear aggregations are checked through the adjoint identity in test_aggregate.cpp).
//
// For a loss L = sum(r * f(theta)) with fixed random r, the backward's dL/dtheta_i is compared
// with the central difference (L(theta + eps e_i) - L(theta - eps e_i)) / (2 eps) at sampled
// coordinates, both evaluated on the GPU. Tolerance: |fd - analytic| <= 2e-3 + 2e-2 * |analytic|
// (fp32 forward noise divided by 2 eps dominates). Coordinates whose perturbation would move a
// LeakyReLU input across its kink are skipped.
#include <doctest/doctest.h>

#include <functional>

#include "kernels/cuda/cross_entropy.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/gat.cuh"
#include "tests/gpu/gpu_test_util.h"

namespace skiff::gpu_testing {
namespace {

double Dot(const std::vector<float>& a, const std::vector<float>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

// Checks analytic[i] against the central difference of loss(theta) for up to `samples`
// coordinates accepted by `usable` (all by default).
void FiniteDifferenceCheck(const std::string& what, std::vector<float> theta,
                           const std::vector<float>& analytic,
                           const std::function<double(const std::vector<float>&)>& loss, float eps,
                           int samples, const std::function<bool(size_t)>& usable = nullptr) {
  REQUIRE(theta.size() == analytic.size());
  std::mt19937_64 rng(99);
  int checked = 0;
  for (int attempt = 0; attempt < samples * 4 && checked < samples && !theta.empty(); ++attempt) {
    const size_t i = rng() % theta.size();
    if (usable && !usable(i)) continue;
    const float saved = theta[i];
    theta[i] = saved + eps;
    const double plus = loss(theta);
    theta[i] = saved - eps;
    const double minus = loss(theta);
    theta[i] = saved;
    const double fd = (plus - minus) / (2.0 * eps);
    CHECK_MESSAGE(
        std::fabs(fd - analytic[i]) <= 2e-3 + 2e-2 * std::fabs(analytic[i]),
        what << "[" << i << "]: finite difference " << fd << " vs backward " << analytic[i]);
    ++checked;
  }
  const bool any_checked = checked > 0 || theta.empty();
  CHECK_MESSAGE(any_checked, what << ": no usable coordinate");
}

TEST_CASE("ELU backward agrees with finite differences") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  const int64_t n = 300;
  const std::vector<float> x = RandomFloats(n, 1, -3.0f, 3.0f), r = RandomFloats(n, 2);
  DeviceBuffer<float> dx(x, s), dy(n), dr(r, s), dgx(n);
  SKIFF_REQUIRE_OK(cuda::EluBackward(n, 1.0f, dx.get(), dr.get(), dgx.get(), s));
  const auto loss = [&](const std::vector<float>& theta) {
    dx.Upload(theta, s);
    SKIFF_REQUIRE_OK(cuda::EluForward(n, 1.0f, dx.get(), dy.get(), s));
    return Dot(dy.Download(s), r);
  };
  FiniteDifferenceCheck("ELU", x, dgx.Download(s), loss, 1e-2f, 30);
}

TEST_CASE("SoftmaxCrossEntropy gradient agrees with finite differences of its loss") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  const int64_t rows = 9, classes = 7;
  const std::vector<float> logits = RandomFloats(rows * classes, 3, -2.0f, 2.0f);
  const std::vector<int32_t> labels = {0, 6, -1, 3, 3, 1, -1, 5, 2};
  DeviceBuffer<float> dlogits(logits, s), dgrad(rows * classes);
  DeviceBuffer<int32_t> dlabels(labels, s);
  DeviceBuffer<cuda::LossStats> dstats(1);
  SKIFF_REQUIRE_OK(cuda::SoftmaxCrossEntropy(rows, classes, dlogits.get(), dlabels.get(),
                                             dgrad.get(), dstats.get(), s));
  const std::vector<float> analytic = dgrad.Download(s);
  const auto loss = [&](const std::vector<float>& theta) {
    dlogits.Upload(theta, s);
    SKIFF_REQUIRE_OK(cuda::SoftmaxCrossEntropy(rows, classes, dlogits.get(), dlabels.get(),
                                               dgrad.get(), dstats.get(), s));
    return static_cast<double>(dstats.Download(s)[0].loss);
  };
  FiniteDifferenceCheck("cross-entropy", logits, analytic, loss, 1e-2f, 40);
}

TEST_CASE("GAT attention chain gradients agree with finite differences") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  const Block b = MakeBlock("small", 13, {0, 1, 2, 5, 3, 0, 7, 4}, 17);
  const int64_t heads = 2, dim = 5, nnz = b.nnz();
  constexpr float kSlope = 0.2f, kEps = 1e-3f;
  const std::vector<float> feat = RandomFloats(b.num_src * heads * dim, 4);
  const std::vector<float> attn = RandomFloats(heads * dim, 5);
  const std::vector<float> er = RandomFloats(b.num_dst * heads, 6);
  const std::vector<float> r = RandomFloats(b.num_dst * heads * dim, 7);
  DeviceBuffer<int64_t> indptr(b.indptr, s);
  DeviceBuffer<int32_t> indices(b.indices, s);
  DeviceBuffer<float> dfeat(feat, s), dattn(attn, s), der(er, s), dr(r, s);
  DeviceBuffer<float> del(b.num_src * heads), dalpha(nnz * heads), dout(b.num_dst * heads * dim);

  // L(feat, attn, er) = sum(r * GatAggregate(softmax(leaky(el + er)), feat)), el = <feat, attn>.
  const auto forward = [&]() {
    SKIFF_REQUIRE_OK(
        cuda::AttentionDot(b.num_src, heads, dim, dfeat.get(), dattn.get(), del.get(), s));
    SKIFF_REQUIRE_OK(cuda::GatEdgeSoftmaxForward(b.num_dst, indptr.get(), indices.get(), heads,
                                                 del.get(), der.get(), kSlope, dalpha.get(), s));
    SKIFF_REQUIRE_OK(cuda::GatAggregateForward(b.num_dst, indptr.get(), indices.get(), heads, dim,
                                               dalpha.get(), dfeat.get(), dout.get(), s));
    return Dot(dout.Download(s), r);
  };
  forward();
  const std::vector<float> el = del.Download(s);

  // Backward through the chain.
  DeviceBuffer<float> dgfeat(b.num_src * heads * dim), dgalpha(nnz * heads);
  DeviceBuffer<float> dgel(b.num_src * heads), dger(b.num_dst * heads), dgattn(heads * dim);
  SKIFF_REQUIRE_OK(cuda::GatAggregateBackward(b.num_dst, b.num_src, indptr.get(), indices.get(),
                                              heads, dim, dalpha.get(), dfeat.get(), dr.get(),
                                              dgfeat.get(), dgalpha.get(), s));
  SKIFF_REQUIRE_OK(cuda::GatEdgeSoftmaxBackward(b.num_dst, b.num_src, indptr.get(), indices.get(),
                                                heads, del.get(), der.get(), kSlope, dalpha.get(),
                                                dgalpha.get(), dgel.get(), dger.get(), s));
  dgattn.Fill(0, s);
  SKIFF_REQUIRE_OK(cuda::AttentionDotBackward(b.num_src, heads, dim, dfeat.get(), dattn.get(),
                                              dgel.get(), dgfeat.get(), dgattn.get(), s));

  // Which LeakyReLU inputs z = el[s,h] + er[d,h] each coordinate moves, to skip kinks. A feat or
  // attn coordinate moves el by at most eps * max|attn| (or |feat|) <= eps here.
  const auto far_from_kink = [&](int64_t only_src, int64_t only_dst, int64_t head) {
    for (int64_t d = 0; d < b.num_dst; ++d) {
      for (int64_t e = b.indptr[d]; e < b.indptr[d + 1]; ++e) {
        const int32_t src = b.indices[e];
        if (only_src >= 0 && src != only_src) continue;
        if (only_dst >= 0 && d != only_dst) continue;
        for (int64_t h = 0; h < heads; ++h) {
          if (head >= 0 && h != head) continue;
          if (std::fabs(el[src * heads + h] + er[d * heads + h]) < 20 * kEps) return false;
        }
      }
    }
    return true;
  };

  FiniteDifferenceCheck(
      "grad_feat", feat, dgfeat.Download(s),
      [&](const std::vector<float>& theta) {
        dfeat.Upload(theta, s);
        const double l = forward();
        dfeat.Upload(feat, s);
        return l;
      },
      kEps, 25,
      [&](size_t i) {
        return far_from_kink(static_cast<int64_t>(i / (heads * dim)), -1,
                             static_cast<int64_t>(i / dim % heads));
      });
  FiniteDifferenceCheck(
      "grad_attn", attn, dgattn.Download(s),
      [&](const std::vector<float>& theta) {
        dattn.Upload(theta, s);
        const double l = forward();
        dattn.Upload(attn, s);
        return l;
      },
      kEps, 10, [&](size_t i) { return far_from_kink(-1, -1, static_cast<int64_t>(i / dim)); });
  FiniteDifferenceCheck(
      "grad_er", er, dger.Download(s),
      [&](const std::vector<float>& theta) {
        der.Upload(theta, s);
        const double l = forward();
        der.Upload(er, s);
        return l;
      },
      kEps, 12,
      [&](size_t i) {
        return far_from_kink(-1, static_cast<int64_t>(i / heads), static_cast<int64_t>(i % heads));
      });
}

}  // namespace
}  // namespace skiff::gpu_testing
