// Optimiser steps over a flat parameter array of n floats.
//   Adam (Kingma & Ba) with L2 weight decay added to the gradient (PyTorch's Adam semantics):
//     g = grad + wd * param; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2;
//     param -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps);     t >= 1 is the step count
//   SGD with momentum (0 = plain) and weight decay:
//     g = grad + wd * param; buf = momentum*buf + g; param -= lr * buf
#pragma once
#include <cstdint>

namespace skiff::cpu {
struct AdamConfig {
  float lr = 0.01f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
};
void AdamStep(int64_t n, const AdamConfig& cfg, int64_t step, const float* grad, float* param,
              float* m, float* v);
void SgdStep(int64_t n, float lr, float momentum, float weight_decay, const float* grad,
             float* param, float* momentum_buf);
}  // namespace skiff::cpu
