#include "kernels/cpu/optimizer.h"

#include <cmath>

#include "kernels/cpu/parallel.h"
#include "skiff/status.h"

namespace skiff::cpu {
namespace {
constexpr int64_t kElementsPerChunk = int64_t{1} << 16;
}  // namespace

void AdamStep(int64_t n, const AdamConfig& cfg, int64_t step, const float* grad, float* param,
              float* m, float* v) {
  SKIFF_CHECK_MSG(step >= 1, "Adam step count starts at 1");
  // Bias corrections in double: beta2^t underflows float precision slowly but 1 - beta2^t for small
  // t loses digits in float.
  const double correction1 =
      1.0 - std::pow(static_cast<double>(cfg.beta1), static_cast<double>(step));
  const double correction2 =
      1.0 - std::pow(static_cast<double>(cfg.beta2), static_cast<double>(step));
  const float step_size = static_cast<float>(cfg.lr / correction1);
  const float inv_sqrt_correction2 = static_cast<float>(1.0 / std::sqrt(correction2));
  ParallelFor(n, kElementsPerChunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float g = grad[i] + cfg.weight_decay * param[i];
      m[i] = cfg.beta1 * m[i] + (1.0f - cfg.beta1) * g;
      v[i] = cfg.beta2 * v[i] + (1.0f - cfg.beta2) * g * g;
      param[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_correction2 + cfg.eps);
    }
  });
}

void SgdStep(int64_t n, float lr, float momentum, float weight_decay, const float* grad,
             float* param, float* momentum_buf) {
  ParallelFor(n, kElementsPerChunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float g = grad[i] + weight_decay * param[i];
      if (momentum_buf != nullptr) {
        momentum_buf[i] = momentum * momentum_buf[i] + g;
        param[i] -= lr * momentum_buf[i];
      } else {
        param[i] -= lr * g;
      }
    }
  });
}

}  // namespace skiff::cpu
