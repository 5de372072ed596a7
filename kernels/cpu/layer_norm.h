// Layer normalisation over the columns of each row (rows x cols, row-major):
//   mean_r = sum_c x[r,c] / cols;  var_r = sum_c (x[r,c] - mean_r)^2 / cols;
//   rstd_r = 1 / sqrt(var_r + eps); y[r,c] = (x[r,c] - mean_r) * rstd_r * gamma[c] + beta[c]
// Forward writes y (overwritten; may not alias x), mean and rstd (rows each, kept for backward).
// Backward, with xhat = (x - mean) * rstd and gy = grad_y * gamma:
//   grad_x[r,c] = rstd_r * (gy[r,c] - mean_c(gy[r,:]) - xhat[r,c] * mean_c(gy[r,:] * xhat[r,:]))
//   (overwrites; may alias grad_y), grad_gamma[c] += sum_r grad_y[r,c] * xhat[r,c] and
//   grad_beta[c] += sum_r grad_y[r,c] (both accumulate).
// Row statistics and the column reductions are computed in double precision.
#pragma once
#include <cstdint>

namespace skiff::cpu {
void LayerNormForward(int64_t rows, int64_t cols, const float* x, const float* gamma,
                      const float* beta, float eps, float* y, float* mean, float* rstd);
void LayerNormBackward(int64_t rows, int64_t cols, const float* x, const float* gamma,
                       const float* mean, const float* rstd, const float* grad_y, float* grad_x,
                       float* grad_gamma, float* grad_beta);
}  // namespace skiff::cpu
