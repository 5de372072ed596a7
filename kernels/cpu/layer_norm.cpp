#include "kernels/cpu/layer_norm.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/parallel.h"
#include "skiff/status.h"

namespace skiff::cpu {
namespace {
int64_t RowsPerChunk(int64_t cols) {
  return std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, cols));
}
}  // namespace

void LayerNormForward(int64_t rows, int64_t cols, const float* x, const float* gamma,
                      const float* beta, float eps, float* y, float* mean, float* rstd) {
  SKIFF_CHECK(rows >= 0 && cols > 0);
  ParallelFor(rows, RowsPerChunk(cols), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float* x_row = x + row * cols;
      double sum = 0.0;
      for (int64_t col = 0; col < cols; ++col) sum += x_row[col];
      const double mu = sum / static_cast<double>(cols);
      double sq = 0.0;
      for (int64_t col = 0; col < cols; ++col) {
        const double centred = x_row[col] - mu;
        sq += centred * centred;
      }
      const double r = 1.0 / std::sqrt(sq / static_cast<double>(cols) + eps);
      mean[row] = static_cast<float>(mu);
      rstd[row] = static_cast<float>(r);
      float* y_row = y + row * cols;
      for (int64_t col = 0; col < cols; ++col) {
        y_row[col] = static_cast<float>((x_row[col] - mu) * r) * gamma[col] + beta[col];
      }
    }
  });
}

void LayerNormBackward(int64_t rows, int64_t cols, const float* x, const float* gamma,
                       const float* mean, const float* rstd, const float* grad_y, float* grad_x,
                       float* grad_gamma, float* grad_beta) {
  SKIFF_CHECK(rows >= 0 && cols > 0);
  // Parameter gradients first (grad_x may alias grad_y): column reductions, threads own column
  // tiles.
  const int64_t tiles = (cols + kAccumTile - 1) / kAccumTile;
  ParallelFor(tiles, 1, [&](int64_t tile_begin, int64_t tile_end) {
    double acc_gamma[kAccumTile], acc_beta[kAccumTile];
    for (int64_t tile = tile_begin; tile < tile_end; ++tile) {
      const int64_t col0 = tile * kAccumTile;
      const int64_t width = std::min(kAccumTile, cols - col0);
      std::fill(acc_gamma, acc_gamma + width, 0.0);
      std::fill(acc_beta, acc_beta + width, 0.0);
      for (int64_t row = 0; row < rows; ++row) {
        const float* g = grad_y + row * cols + col0;
        const float* x_row = x + row * cols + col0;
        const double mu = mean[row], r = rstd[row];
        for (int64_t col = 0; col < width; ++col) {
          acc_gamma[col] += g[col] * ((x_row[col] - mu) * r);
          acc_beta[col] += g[col];
        }
      }
      for (int64_t col = 0; col < width; ++col) {
        grad_gamma[col0 + col] += static_cast<float>(acc_gamma[col]);
        grad_beta[col0 + col] += static_cast<float>(acc_beta[col]);
      }
    }
  });
  ParallelFor(rows, RowsPerChunk(cols), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float* x_row = x + row * cols;
      const float* g = grad_y + row * cols;
      const double mu = mean[row], r = rstd[row];
      double sum_gy = 0.0, sum_gy_xhat = 0.0;
      for (int64_t col = 0; col < cols; ++col) {
        const double gy = static_cast<double>(g[col]) * gamma[col];
        sum_gy += gy;
        sum_gy_xhat += gy * ((x_row[col] - mu) * r);
      }
      const double mean_gy = sum_gy / static_cast<double>(cols);
      const double mean_gy_xhat = sum_gy_xhat / static_cast<double>(cols);
      float* gx = grad_x + row * cols;
      for (int64_t col = 0; col < cols; ++col) {
        const double xhat = (x_row[col] - mu) * r;
        const double gy = static_cast<double>(g[col]) * gamma[col];
        gx[col] = static_cast<float>(r * (gy - mean_gy - xhat * mean_gy_xhat));
      }
    }
  });
}

}  // namespace skiff::cpu
