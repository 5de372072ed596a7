#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/optimizer.h"

using namespace skiff;

TEST_CASE("kernels: AdamStep matches hand-computed steps") {
  cpu::AdamConfig cfg;
  cfg.lr = 0.1f;
  cfg.weight_decay = 0.5f;
  std::vector<float> param = {1.0f, -2.0f}, m(2, 0.0f), v(2, 0.0f);
  // Step 1: g = grad + 0.5 * param = {0.2 + 0.5, 0.1 - 1.0} = {0.7, -0.9}. With bias correction,
  // m_hat = g and v_hat = g^2, so the update is lr * g / (|g| + eps) = lr * sign(g).
  std::vector<float> grad = {0.2f, 0.1f};
  cpu::AdamStep(2, cfg, 1, grad.data(), param.data(), m.data(), v.data());
  CHECK(m[0] == doctest::Approx(0.07));
  CHECK(v[0] == doctest::Approx(0.001 * 0.49));
  CHECK(param[0] == doctest::Approx(0.9).epsilon(1e-6));
  CHECK(param[1] == doctest::Approx(-1.9).epsilon(1e-6));
  // Step 2 for element 0: g = 0.2 + 0.5 * 0.9 = 0.65; m = 0.9*0.07 + 0.1*0.65 = 0.128;
  // v = 0.999*0.00049 + 0.001*0.4225 = 0.00091201; m_hat = 0.128/0.19; v_hat = v/(1-0.999^2).
  cpu::AdamStep(2, cfg, 2, grad.data(), param.data(), m.data(), v.data());
  const double m_hat = 0.128 / (1.0 - 0.81);
  const double v_hat = 0.00091201 / (1.0 - 0.999 * 0.999);
  CHECK(m[0] == doctest::Approx(0.128));
  CHECK(param[0] == doctest::Approx(0.9 - 0.1 * m_hat / (std::sqrt(v_hat) + 1e-8)).epsilon(1e-5));
}

TEST_CASE("kernels: SgdStep with momentum and weight decay matches hand-computed steps") {
  std::vector<float> param = {1.0f}, buf = {0.0f}, grad = {0.5f};
  // g = 0.5 + 0.1 * 1 = 0.6; buf = 0.6; param = 1 - 0.1 * 0.6 = 0.94.
  cpu::SgdStep(1, 0.1f, 0.9f, 0.1f, grad.data(), param.data(), buf.data());
  CHECK(buf[0] == doctest::Approx(0.6));
  CHECK(param[0] == doctest::Approx(0.94));
  // g = 0.5 + 0.094 = 0.594; buf = 0.54 + 0.594 = 1.134; param = 0.94 - 0.1134 = 0.8266.
  cpu::SgdStep(1, 0.1f, 0.9f, 0.1f, grad.data(), param.data(), buf.data());
  CHECK(buf[0] == doctest::Approx(1.134));
  CHECK(param[0] == doctest::Approx(0.8266));
  // Plain SGD without a buffer.
  cpu::SgdStep(1, 0.1f, 0.0f, 0.0f, grad.data(), param.data(), nullptr);
  CHECK(param[0] == doctest::Approx(0.7766));
}
