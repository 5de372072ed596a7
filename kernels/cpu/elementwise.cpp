#include "kernels/cpu/elementwise.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "kernels/cpu/multiversion.h"
#include "kernels/cpu/parallel.h"
#include "skiff/status.h"

namespace skiff::cpu {
namespace {
// Elements per parallel chunk for cheap element-wise loops.
constexpr int64_t kElementsPerChunk = int64_t{1} << 16;
}  // namespace

void BiasAdd(int64_t rows, int64_t cols, const float* bias, float* y) {
  SKIFF_CHECK(rows >= 0 && cols >= 0);
  if (cols == 0) return;
  ParallelFor(rows, std::max<int64_t>(1, kElementsPerChunk / cols),
              [&](int64_t begin, int64_t end) {
                for (int64_t row = begin; row < end; ++row) {
                  float* y_row = y + row * cols;
                  for (int64_t col = 0; col < cols; ++col) y_row[col] += bias[col];
                }
              });
}

void BiasGrad(int64_t rows, int64_t cols, const float* grad_y, float* grad_bias) {
  SKIFF_CHECK(rows >= 0 && cols >= 0);
  // Column sums in double; threads own disjoint column tiles.
  const int64_t tiles = (cols + kAccumTile - 1) / kAccumTile;
  ParallelFor(tiles, 1, [&](int64_t tile_begin, int64_t tile_end) {
    double acc[kAccumTile];
    for (int64_t tile = tile_begin; tile < tile_end; ++tile) {
      const int64_t col0 = tile * kAccumTile;
      const int64_t width = std::min(kAccumTile, cols - col0);
      std::fill(acc, acc + width, 0.0);
      for (int64_t row = 0; row < rows; ++row) {
        const float* g = grad_y + row * cols + col0;
        for (int64_t col = 0; col < width; ++col) acc[col] += g[col];
      }
      for (int64_t col = 0; col < width; ++col)
        grad_bias[col0 + col] += static_cast<float>(acc[col]);
    }
  });
}

// For short vectors (a feature row) called many times: no ParallelFor, but 8-lane FMA where the
// machine has it.
SKIFF_CPU_MULTIVERSION
void Axpy(int64_t n, float alpha, const float* __restrict x, float* __restrict y) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

SKIFF_CPU_MULTIVERSION
void Scale(int64_t n, float alpha, const float* __restrict x, float* __restrict y) {
  for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i];
}

void ReluForward(int64_t n, const float* x, float* y) {
  ParallelFor(n, kElementsPerChunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  });
}

void ReluBackward(int64_t n, const float* y, const float* grad_y, float* grad_x) {
  ParallelFor(n, kElementsPerChunk, [&](int64_t begin, int64_t end) {
    // Both operands read unconditionally so the select vectorises (a conditional load of
    // grad_y, which may alias grad_x, kept this loop scalar and branchy: ~8% of a SAGE step).
    for (int64_t i = begin; i < end; ++i) {
      const float g = grad_y[i];
      grad_x[i] = y[i] > 0.0f ? g : 0.0f;
    }
  });
}

void EluForward(int64_t n, float alpha, const float* x, float* y) {
  ParallelFor(n, kElementsPerChunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = x[i] > 0.0f ? x[i] : alpha * std::expm1(x[i]);
  });
}

void EluBackward(int64_t n, float alpha, const float* x, const float* grad_y, float* grad_x) {
  ParallelFor(n, kElementsPerChunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      grad_x[i] = x[i] > 0.0f ? grad_y[i] : grad_y[i] * alpha * std::exp(x[i]);
    }
  });
}

namespace {

// Dropout over [begin, end): the mask is DropoutKeep's, with the key computed once per 2^32
// elements instead of once per element. Branch-free, so it vectorises; x and y may be the same
// array (each element is read before it is written, and by its own iteration only). x and y point
// at element `begin`.
SKIFF_CPU_MULTIVERSION
void DropoutRange(int64_t begin, int64_t end, uint64_t seed, uint32_t threshold, float scale,
                  const float* x, float* y) {
  const int64_t first = begin;
  while (begin < end) {
    const uint64_t high = static_cast<uint64_t>(begin) >> 32;
    const int64_t stop = std::min<int64_t>(end, static_cast<int64_t>((high + 1) << 32));
    const DropoutKey key = DropoutKeyOf(seed, high);
    const uint32_t low = static_cast<uint32_t>(begin);
    const float* xs = x + (begin - first);
    float* ys = y + (begin - first);
    const int64_t count = stop - begin;
#pragma GCC ivdep
    for (int64_t j = 0; j < count; ++j) {
      // Select by bit mask rather than `keep ? x * scale : 0`, which GCC will not if-convert
      // (the multiply could trap), so the loop vectorises.
      const uint32_t keep =
          (DropoutBits(key, low + static_cast<uint32_t>(j)) >> 8) >= threshold ? ~0u : 0u;
      ys[j] = std::bit_cast<float>(std::bit_cast<uint32_t>(xs[j] * scale) & keep);
    }
    begin = stop;
  }
}

}  // namespace

void DropoutForward(int64_t n, float p, uint64_t seed, const float* x, float* y) {
  SKIFF_CHECK_MSG(p >= 0.0f && p < 1.0f, "dropout probability must lie in [0, 1)");
  const float scale = 1.0f / (1.0f - p);
  const uint32_t threshold = DropoutThreshold(p);
  ParallelFor(n, kElementsPerChunk, [&](int64_t begin, int64_t end) {
    DropoutRange(begin, end, seed, threshold, scale, x + begin, y + begin);
  });
}

void DropoutForwardAt(int64_t first, int64_t n, float p, uint64_t seed, const float* x, float* y) {
  SKIFF_CHECK_MSG(p >= 0.0f && p < 1.0f, "dropout probability must lie in [0, 1)");
  DropoutRange(first, first + n, seed, DropoutThreshold(p), 1.0f / (1.0f - p), x, y);
}

void DropoutBackward(int64_t n, float p, uint64_t seed, const float* grad_y, float* grad_x) {
  DropoutForward(n, p, seed, grad_y, grad_x);  // the same mask and scale: the op is linear
}

}  // namespace skiff::cpu
