// Element-wise ops: bias, activations, dropout. All shapes are rows x cols, row-major.
//   BiasAdd:         y[r,c] += bias[c]                         (in place)
//   BiasGrad:        grad_bias[c] += sum_r grad_y[r,c]         (accumulates)
//   Relu / Elu:      y = f(x) (x and y may alias); backward: grad_x = grad_y * f'(x) (overwrites;
//                    ReLU's backward reads the forward *output* y, ELU's reads the input x)
//   Axpy:            y[i] += alpha * x[i]                       (x, y must not overlap; one thread)
//   Scale:           y[i] = alpha * x[i]    (the first term of a sum Axpy adds to: no zeroed y
//   first) Dropout:         keep element i with probability 1-p, scaled by 1/(1-p); mask bit from
//                    DropoutKeep(seed, i), identical on CPU and GPU. Backward applies the same
//                    mask.
#pragma once
#include <cstdint>

#include "skiff/random.h"

namespace skiff::cpu {

void BiasAdd(int64_t rows, int64_t cols, const float* bias, float* y);
void BiasGrad(int64_t rows, int64_t cols, const float* grad_y, float* grad_bias);
void Axpy(int64_t n, float alpha, const float* x, float* y);
void Scale(int64_t n, float alpha, const float* x, float* y);
void ReluForward(int64_t n, const float* x, float* y);
void ReluBackward(int64_t n, const float* y, const float* grad_y, float* grad_x);
void EluForward(int64_t n, float alpha, const float* x, float* y);
void EluBackward(int64_t n, float alpha, const float* x, const float* grad_y, float* grad_x);
void DropoutForward(int64_t n, float p, uint64_t seed, const float* x, float* y);
void DropoutBackward(int64_t n, float p, uint64_t seed, const float* grad_y, float* grad_x);
// Elements [first, first + n) of DropoutForward over a larger tensor: x and y hold just those n
// elements (single-threaded; for a row at a time).
void DropoutForwardAt(int64_t first, int64_t n, float p, uint64_t seed, const float* x, float* y);

// Counter-based hash (SplitMix64 of seed ^ index * golden ratio): deterministic, stateless, and
// the same expression compiles for CUDA device code. Used to derive per-layer seeds and the
// dropout key below.
inline constexpr uint64_t DropoutHash(uint64_t seed, uint64_t index) {
  return SplitMixFinalize(seed + (index + 1) * kGoldenGamma);
}

// The dropout mask of element i is DropoutBits(DropoutKeyOf(seed, i >> 32), uint32(i)): one 64-bit
// SplitMix key per seed (and per 2^32 elements), then a 32-bit hash per element (an odd-multiplier
// bijection of the counter, the key's high half mixed in, then MurmurHash3's fmix32 finaliser).
// Only 32-bit multiplies and shifts per element, so the CPU loop vectorises (8 lanes with AVX2)
// and CUDA runs it natively; a full 64-bit hash per element cost ~40% of a CPU training step.
struct DropoutKey {
  uint32_t offset, mix;
};
inline constexpr DropoutKey DropoutKeyOf(uint64_t seed, uint64_t high) {
  const uint64_t h = DropoutHash(seed, high);
  return {static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32)};
}
inline constexpr uint32_t DropoutBits(DropoutKey key, uint32_t low) {
  uint32_t x = (low + key.offset) * 0x9E3779B9u;
  x ^= key.mix;
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  return x ^ (x >> 16);
}
// ceil(p * 2^24): an element is kept when the top 24 bits of its hash are >= this, which is the
// same as "the hash as a uniform in [0,1) is >= p" (both sides are exact in float).
inline constexpr uint32_t DropoutThreshold(float p) {
  const float scaled = p * 16777216.0f;
  const uint32_t t = static_cast<uint32_t>(scaled);
  return static_cast<float>(t) < scaled ? t + 1 : t;
}
// Keep element `index` with probability 1 - p (to within 2^-24).
inline constexpr bool DropoutKeep(uint64_t seed, uint64_t index, float p) {
  return (DropoutBits(DropoutKeyOf(seed, index >> 32), static_cast<uint32_t>(index)) >> 8) >=
         DropoutThreshold(p);
}

}  // namespace skiff::cpu
