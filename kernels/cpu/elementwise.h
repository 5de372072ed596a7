// Element-wise ops: bias, activations, dropout. All shapes are rows x cols, row-major.
//   BiasAdd:         y[r,c] += bias[c]                         (in place)
//   BiasGrad:        grad_bias[c] += sum_r grad_y[r,c]         (accumulates)
//   Relu / Elu:      y = f(x) (x and y may alias); backward: grad_x = grad_y * f'(x) (overwrites;
//                    ReLU's backward reads the forward *output* y, ELU's reads the input x)
//   Dropout:         keep element i with probability 1-p, scaled by 1/(1-p); mask bit from
//                    DropoutKeep(seed, i), identical on CPU and GPU. Backward applies the same mask.
#pragma once
#include <cstdint>

namespace skiff::cpu {

void BiasAdd(int64_t rows, int64_t cols, const float* bias, float* y);
void BiasGrad(int64_t rows, int64_t cols, const float* grad_y, float* grad_bias);
void ReluForward(int64_t n, const float* x, float* y);
void ReluBackward(int64_t n, const float* y, const float* grad_y, float* grad_x);
void EluForward(int64_t n, float alpha, const float* x, float* y);
void EluBackward(int64_t n, float alpha, const float* x, const float* grad_y, float* grad_x);
void DropoutForward(int64_t n, float p, uint64_t seed, const float* x, float* y);
void DropoutBackward(int64_t n, float p, uint64_t seed, const float* grad_y, float* grad_x);

// Counter-based hash (SplitMix64 of seed ^ index * golden ratio): deterministic, stateless, and
// the same expression compiles for CUDA device code.
inline constexpr uint64_t DropoutHash(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// Keep element `index` when its hash, as a uniform in [0,1), is >= p.
inline constexpr bool DropoutKeep(uint64_t seed, uint64_t index, float p) {
  return static_cast<float>(DropoutHash(seed, index) >> 40) * (1.0f / 16777216.0f) >= p;
}

}  // namespace skiff::cpu
