#include "kernels/cpu/elementwise.h"

#include <algorithm>
#include <cmath>

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

void ReluForward(int64_t n, const float* x, float* y) {
  ParallelFor(n, kElementsPerChunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  });
}

void ReluBackward(int64_t n, const float* y, const float* grad_y, float* grad_x) {
  ParallelFor(n, kElementsPerChunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) grad_x[i] = y[i] > 0.0f ? grad_y[i] : 0.0f;
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

void DropoutForward(int64_t n, float p, uint64_t seed, const float* x, float* y) {
  SKIFF_CHECK_MSG(p >= 0.0f && p < 1.0f, "dropout probability must lie in [0, 1)");
  const float scale = 1.0f / (1.0f - p);
  ParallelFor(n, kElementsPerChunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      // A zero stays zero whatever the mask, so sparse inputs (bag-of-words features) skip the
      // hash: same result, much less work.
      y[i] = x[i] != 0.0f && DropoutKeep(seed, static_cast<uint64_t>(i), p) ? x[i] * scale : 0.0f;
    }
  });
}

void DropoutBackward(int64_t n, float p, uint64_t seed, const float* grad_y, float* grad_x) {
  DropoutForward(n, p, seed, grad_y, grad_x);  // the same mask and scale: the op is linear
}

}  // namespace skiff::cpu
