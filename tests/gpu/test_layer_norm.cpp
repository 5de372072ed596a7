// Layer normalisation: CUDA vs CPU reference (forward, backward with aliasing) and a
// finite-difference check of the backward.
//
// Tolerances: y, mean, rstd rtol 1e-4 (fp32 row statistics vs the CPU's double); grad_x atol
// 1e-4 * (1 + max|grad|); grad_gamma / grad_beta 1e-4 of the absolute column sums.
#include <doctest/doctest.h>

#include "kernels/cpu/layer_norm.h"
#include "kernels/cuda/layer_norm.cuh"
#include "tests/gpu/gpu_test_util.h"

namespace skiff::gpu_testing {
namespace {

TEST_CASE("LayerNorm forward/backward match the CPU") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {0, 4}, {1, 1}, {1, 1024}, {3, 33}, {37, 5}, {257, 128}, {1000, 256}}) {
    CAPTURE(rows);
    CAPTURE(cols);
    const float eps = 1e-5f;
    const std::vector<float> x = RandomFloats(rows * cols, 1, -2.0f, 3.0f);
    const std::vector<float> gamma = RandomFloats(cols, 2, 0.5f, 1.5f);
    const std::vector<float> beta = RandomFloats(cols, 3);
    const std::vector<float> gy = RandomFloats(rows * cols, 4);
    std::vector<float> y(rows * cols), mean(rows), rstd(rows);
    cpu::LayerNormForward(rows, cols, x.data(), gamma.data(), beta.data(), eps, y.data(),
                          mean.data(), rstd.data());
    DeviceBuffer<float> dx(x, s), dgamma(gamma, s), dbeta(beta, s), dy(rows * cols), dmean(rows),
        drstd(rows);
    SKIFF_REQUIRE_OK(cuda::LayerNormForward(rows, cols, dx.get(), dgamma.get(), dbeta.get(), eps,
                                            dy.get(), dmean.get(), drstd.get(), s));
    ExpectClose(dy.Download(s), y, 1e-4f, 1e-5f, "y");
    ExpectClose(dmean.Download(s), mean, 1e-4f, 1e-5f, "mean");
    ExpectClose(drstd.Download(s), rstd, 1e-4f, 1e-5f, "rstd");

    std::vector<float> gx(rows * cols), ggamma = RandomFloats(cols, 5),
                                        gbeta = RandomFloats(cols, 6);
    const std::vector<float> ggamma0 = ggamma, gbeta0 = gbeta;
    cpu::LayerNormBackward(rows, cols, x.data(), gamma.data(), mean.data(), rstd.data(), gy.data(),
                           gx.data(), ggamma.data(), gbeta.data());
    DeviceBuffer<float> dgy(gy, s), dggamma(ggamma0, s), dgbeta(gbeta0, s);
    dmean.Upload(mean, s);
    drstd.Upload(rstd, s);
    // grad_x aliases grad_y.
    SKIFF_REQUIRE_OK(cuda::LayerNormBackward(rows, cols, dx.get(), dgamma.get(), dmean.get(),
                                             drstd.get(), dgy.get(), dgy.get(), dggamma.get(),
                                             dgbeta.get(), s));
    float gmax = 0;
    for (float v : gx) gmax = std::max(gmax, std::fabs(v));
    ExpectClose(dgy.Download(s), gx, 1e-4f, 1e-4f * (1.0f + gmax), "grad_x (aliased)");
    std::vector<float> col_mag(cols, 1.0f);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) col_mag[c] += 4.0f * std::fabs(gy[r * cols + c]);
    }
    ExpectClose(dggamma.Download(s), ggamma, 1e-4f, 1e-5f, "grad_gamma", &col_mag);
    ExpectClose(dgbeta.Download(s), gbeta, 1e-4f, 1e-5f, "grad_beta", &col_mag);
  }
}

TEST_CASE("LayerNorm backward agrees with finite differences") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  const int64_t rows = 4, cols = 9;
  const std::vector<float> x = RandomFloats(rows * cols, 7, -2.0f, 2.0f);
  const std::vector<float> gamma = RandomFloats(cols, 8, 0.5f, 1.5f);
  const std::vector<float> beta = RandomFloats(cols, 9);
  const std::vector<float> r = RandomFloats(rows * cols, 10);
  DeviceBuffer<float> dx(x, s), dgamma(gamma, s), dbeta(beta, s), dy(rows * cols), dmean(rows),
      drstd(rows), dr(r, s), dgx(rows * cols), dgg(cols), dgb(cols);
  SKIFF_REQUIRE_OK(cuda::LayerNormForward(rows, cols, dx.get(), dgamma.get(), dbeta.get(), 1e-5f,
                                          dy.get(), dmean.get(), drstd.get(), s));
  dgg.Fill(0, s);
  dgb.Fill(0, s);
  SKIFF_REQUIRE_OK(cuda::LayerNormBackward(rows, cols, dx.get(), dgamma.get(), dmean.get(),
                                           drstd.get(), dr.get(), dgx.get(), dgg.get(), dgb.get(),
                                           s));
  const std::vector<float> analytic = dgx.Download(s);
  std::vector<float> theta = x;
  for (size_t i = 0; i < theta.size(); i += 5) {
    const auto loss = [&](float value) {
      theta[i] = value;
      dx.Upload(theta, s);
      SKIFF_REQUIRE_OK(cuda::LayerNormForward(rows, cols, dx.get(), dgamma.get(), dbeta.get(),
                                              1e-5f, dy.get(), dmean.get(), drstd.get(), s));
      const std::vector<float> y = dy.Download(s);
      double l = 0;
      for (size_t k = 0; k < y.size(); ++k) l += static_cast<double>(y[k]) * r[k];
      return l;
    };
    const float eps = 1e-2f;
    const double fd = (loss(x[i] + eps) - loss(x[i] - eps)) / (2.0 * eps);
    theta[i] = x[i];
    CHECK_MESSAGE(std::fabs(fd - analytic[i]) <= 2e-3 + 2e-2 * std::fabs(analytic[i]),
                  "x[" << i << "]: finite difference " << fd << " vs backward " << analytic[i]);
  }
}

}  // namespace
}  // namespace skiff::gpu_testing
