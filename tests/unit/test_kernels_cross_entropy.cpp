#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/cross_entropy.h"
#include "tests/unit/test_kernels_util.h"

using namespace skiff;

TEST_CASE("kernels: SoftmaxCrossEntropy loss, accuracy count and gradient") {
  // Two rows, 3 classes, the second unlabelled.
  std::vector<float> logits = {1.0f, 2.0f, 0.5f, 9.0f, 9.0f, 9.0f};
  std::vector<int32_t> labels = {1, -1};
  std::vector<float> grad(6, 5.0f);
  int64_t correct = -1;
  const float loss =
      cpu::SoftmaxCrossEntropy(2, 3, logits.data(), labels.data(), grad.data(), &correct);
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(0.5));
  CHECK(loss == doctest::Approx(lse - 2.0));
  CHECK(correct == 1);
  CHECK(grad[3] == 0.0f);
  CHECK(grad[4] == 0.0f);
  CHECK(grad[5] == 0.0f);
  CHECK(grad[1] == doctest::Approx(std::exp(2.0 - lse) - 1.0));

  std::mt19937_64 rng(10);
  const int64_t rows = 9, classes = 5;
  auto z = testing::RandomVector(rows * classes, rng, -3.0f, 3.0f);
  std::vector<int32_t> y(rows);
  for (int64_t r = 0; r < rows; ++r) y[r] = r % 4 == 3 ? -1 : static_cast<int32_t>(r % classes);
  std::vector<float> g(rows * classes);
  cpu::SoftmaxCrossEntropy(rows, classes, z.data(), y.data(), g.data(), nullptr);
  std::vector<float> scratch(rows * classes);
  testing::CheckGradient(
      "grad_logits", z, g,
      [&] {
        return cpu::SoftmaxCrossEntropy(rows, classes, z.data(), y.data(), scratch.data(), nullptr);
      },
      1e-2, 1e-4, 2e-2);
}

TEST_CASE("kernels: SoftmaxCrossEntropy with no labelled rows is zero; LogSoftmax is stable") {
  std::vector<float> logits = {1000.0f, 0.0f};
  std::vector<int32_t> labels = {-1};
  std::vector<float> grad(2, 1.0f);
  CHECK(cpu::SoftmaxCrossEntropy(1, 2, logits.data(), labels.data(), grad.data(), nullptr) == 0.0f);
  CHECK(grad == std::vector<float>{0.0f, 0.0f});
  cpu::LogSoftmax(1, 2, logits.data(), logits.data());
  CHECK(logits[0] == doctest::Approx(0.0));
  CHECK(logits[1] == doctest::Approx(-1000.0));
}
