#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/layer_norm.h"
#include "tests/unit/test_kernels_util.h"

using namespace skiff;

TEST_CASE("kernels: BiasAdd and BiasGrad") {
  std::mt19937_64 rng(7);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {5, 3}, {9, 130}}) {
    auto bias = testing::RandomVector(cols, rng);
    auto y = testing::RandomVector(rows * cols, rng);
    auto y0 = y;
    cpu::BiasAdd(rows, cols, bias.data(), y.data());
    for (int64_t i = 0; i < rows * cols; ++i)
      CHECK(y[i] == doctest::Approx(y0[i] + bias[i % cols]));
    auto r = testing::RandomVector(rows * cols, rng);
    std::vector<float> grad_bias(cols, 1.0f);  // accumulates
    cpu::BiasGrad(rows, cols, r.data(), grad_bias.data());
    for (float& g : grad_bias) g -= 1.0f;
    testing::CheckGradient("grad_bias", bias, grad_bias, [&] {
      auto out = y0;
      cpu::BiasAdd(rows, cols, bias.data(), out.data());
      return testing::Dot(out, r);
    });
  }
}

TEST_CASE("kernels: Axpy adds a scaled vector in place") {
  for (const int64_t n : {1, 7, 8, 128, 131}) {
    std::vector<float> x(n), y(n), expected(n);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = 0.25f * static_cast<float>(i) - 3.0f;
      y[i] = 1.0f + 0.5f * static_cast<float>(i % 5);
      expected[i] = y[i] + 0.75f * x[i];
    }
    cpu::Axpy(n, 0.75f, x.data(), y.data());
    for (int64_t i = 0; i < n; ++i) CHECK(y[i] == doctest::Approx(expected[i]).epsilon(1e-6));
  }
}

TEST_CASE("kernels: Scale starts a sum as Axpy onto zeros would, overwriting what was there") {
  for (const int64_t n : {1, 7, 8, 128, 131}) {
    std::vector<float> x(n), z(n), started(n, -7.0f), zeroed(n, 0.0f);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = 0.25f * static_cast<float>(i) - 3.0f;
      z[i] = 1.0f / static_cast<float>(i + 3);
    }
    cpu::Scale(n, 0.3f, x.data(), started.data());
    cpu::Axpy(n, 0.3f, x.data(), zeroed.data());
    CHECK(started == zeroed);  // bit for bit
    cpu::Axpy(n, 0.7f, z.data(), started.data());
    cpu::Axpy(n, 0.7f, z.data(), zeroed.data());
    CHECK(started == zeroed);
  }
}

TEST_CASE("kernels: ReLU and ELU backward match finite differences away from the kink") {
  std::mt19937_64 rng(8);
  const int64_t n = 301;
  auto x = testing::RandomVector(n, rng, -2.0f, 2.0f);
  for (float& v : x) {
    if (std::abs(v) < 0.05f) v = 0.5f;  // keep central differences off the kink
  }
  auto r = testing::RandomVector(n, rng);
  std::vector<float> y(n), grad_x(n);
  cpu::ReluForward(n, x.data(), y.data());
  cpu::ReluBackward(n, y.data(), r.data(), grad_x.data());
  testing::CheckGradient("relu", x, grad_x, [&] {
    cpu::ReluForward(n, x.data(), y.data());
    return testing::Dot(y, r);
  });
  const float alpha = 1.0f;
  cpu::EluBackward(n, alpha, x.data(), r.data(), grad_x.data());
  testing::CheckGradient(
      "elu", x, grad_x,
      [&] {
        cpu::EluForward(n, alpha, x.data(), y.data());
        return testing::Dot(y, r);
      },
      1e-3);
  // In place is allowed for the forward.
  auto z = x;
  cpu::EluForward(n, alpha, z.data(), z.data());
  cpu::EluForward(n, alpha, x.data(), y.data());
  CHECK(z == y);
}

TEST_CASE("kernels: dropout mask is deterministic, seed-dependent, scaled and shared by backward") {
  const int64_t n = 100000;
  const float p = 0.3f;
  std::vector<float> x(n, 1.0f), y1(n), y2(n), y3(n), g(n);
  cpu::DropoutForward(n, p, 42, x.data(), y1.data());
  cpu::DropoutForward(n, p, 42, x.data(), y2.data());
  cpu::DropoutForward(n, p, 43, x.data(), y3.data());
  CHECK(y1 == y2);
  CHECK(y1 != y3);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (y1[i] != 0.0f) {
      ++kept;
      CHECK(y1[i] == doctest::Approx(1.0f / (1.0f - p)));
    }
    CHECK((y1[i] != 0.0f) == cpu::DropoutKeep(42, static_cast<uint64_t>(i), p));
  }
  CHECK(static_cast<double>(kept) / n == doctest::Approx(1.0 - p).epsilon(0.02));
  cpu::DropoutBackward(n, p, 42, x.data(), g.data());
  CHECK(g == y1);
  // p == 0 keeps everything unscaled.
  cpu::DropoutForward(n, 0.0f, 42, x.data(), y3.data());
  CHECK(y3 == x);
  // Fixed values: guard the hashes against accidental change (CPU/GPU parity, checkpoints).
  CHECK(cpu::DropoutHash(0, 0) == 0xE220A8397B1DCDAFull);
  CHECK(cpu::DropoutBits(cpu::DropoutKeyOf(0, 0), 0) == 0x439DBC9Au);
  CHECK(cpu::DropoutBits(cpu::DropoutKeyOf(1, 0), 12345) == 0xD2C5C38Eu);
}

TEST_CASE("kernels: dropout keep rate matches p and masks of different seeds are independent") {
  const int64_t n = 200000;
  std::vector<float> x(n, 1.0f), a(n), b(n);
  for (float p : {0.1f, 0.5f, 0.8f}) {
    cpu::DropoutForward(n, p, 7, x.data(), a.data());
    cpu::DropoutForward(n, p, 8, x.data(), b.data());
    int64_t kept_a = 0, both = 0;
    for (int64_t i = 0; i < n; ++i) {
      kept_a += a[i] != 0.0f;
      both += a[i] != 0.0f && b[i] != 0.0f;
    }
    const double q = 1.0 - p;  // keep probability
    CHECK(static_cast<double>(kept_a) / n == doctest::Approx(q).epsilon(0.02));
    // Independent masks keep an element in both with probability q^2 (a shifted or equal mask
    // would give q).
    CHECK(static_cast<double>(both) / n == doctest::Approx(q * q).epsilon(0.03));
  }
  // The integer threshold is ceil(p * 2^24): p = 0 keeps every hash, tiny p drops almost none.
  CHECK(cpu::DropoutThreshold(0.0f) == 0u);
  CHECK(cpu::DropoutThreshold(0.5f) == 1u << 23);
  CHECK(cpu::DropoutThreshold(1e-9f) == 1u);
}

TEST_CASE("kernels: LayerNorm normalises rows and its backward matches finite differences") {
  std::mt19937_64 rng(9);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 3}, {4, 7}, {3, 70}}) {
    auto x = testing::RandomVector(rows * cols, rng, -2.0f, 2.0f);
    auto gamma = testing::RandomVector(cols, rng, 0.5f, 1.5f);
    auto beta = testing::RandomVector(cols, rng);
    std::vector<float> y(rows * cols), mean(rows), rstd(rows);
    auto forward = [&] {
      cpu::LayerNormForward(rows, cols, x.data(), gamma.data(), beta.data(), 1e-5f, y.data(),
                            mean.data(), rstd.data());
    };
    forward();
    std::vector<float> ones(cols, 1.0f), zeros(cols, 0.0f), plain(rows * cols);
    cpu::LayerNormForward(rows, cols, x.data(), ones.data(), zeros.data(), 1e-5f, plain.data(),
                          mean.data(), rstd.data());
    for (int64_t row = 0; row < rows; ++row) {
      double s = 0.0, sq = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        s += plain[row * cols + c];
        sq += plain[row * cols + c] * plain[row * cols + c];
      }
      CHECK(s / cols == doctest::Approx(0.0).epsilon(1e-5).scale(1.0));
      CHECK(sq / cols == doctest::Approx(1.0).epsilon(1e-3));
    }
    forward();
    auto r = testing::RandomVector(rows * cols, rng);
    std::vector<float> grad_x(x.size()), grad_gamma(cols, 0.0f), grad_beta(cols, 0.0f);
    cpu::LayerNormBackward(rows, cols, x.data(), gamma.data(), mean.data(), rstd.data(), r.data(),
                           grad_x.data(), grad_gamma.data(), grad_beta.data());
    auto loss = [&] {
      forward();
      return testing::Dot(y, r);
    };
    testing::CheckGradient("grad_x", x, grad_x, loss, 1e-3);
    testing::CheckGradient("grad_gamma", gamma, grad_gamma, loss, 1e-3);
    testing::CheckGradient("grad_beta", beta, grad_beta, loss, 1e-3);
  }
}

TEST_CASE("kernels: DropoutForwardAt is a window of DropoutForward, across the 2^32 key boundary") {
  std::mt19937_64 rng(3);
  const std::vector<float> x = testing::RandomVector(4096, rng);
  std::vector<float> whole(x.size());
  cpu::DropoutForward(static_cast<int64_t>(x.size()), 0.4f, 17, x.data(), whole.data());
  for (const int64_t first : {int64_t{0}, int64_t{5}, int64_t{1000}}) {
    std::vector<float> part(300);
    cpu::DropoutForwardAt(first, 300, 0.4f, 17, x.data() + first, part.data());
    for (int64_t i = 0; i < 300; ++i) CHECK(part[i] == whole[first + i]);
  }
  // A window that straddles element 2^32 uses both keys, as DropoutKeep does per element.
  const int64_t first = (int64_t{1} << 32) - 7;
  std::vector<float> ones(16, 1.0f), part(16);
  cpu::DropoutForwardAt(first, 16, 0.4f, 17, ones.data(), part.data());
  for (int64_t i = 0; i < 16; ++i) {
    const bool keep = cpu::DropoutKeep(17, static_cast<uint64_t>(first + i), 0.4f);
    CHECK(part[i] == (keep ? 1.0f / 0.6f : 0.0f));
  }
}
