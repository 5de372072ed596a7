// The two CSR sparse-times-dense kernels every aggregation in kernels/cuda/ is built on (internal;
// callers use csr_aggregate.cuh and gat.cuh).
//
//   Gather:  for each walked row r and segment h:   out[r,h,:]  = sum_j w_j * x[indices[j],h,:]
//   Scatter: for each walked row r and segment h:   out[indices[j],h,:] += w_j * x[r,h,:] (atomics)
//
// where j runs over indptr[r]..indptr[r+1]. "Segments" are GAT heads (1 for plain aggregation):
// a row of x/out holds `segments * dim` floats. The edge weight w_j comes from `weight_kind`:
//   kOne           1
//   kRowMean       1 / deg(r)                         (mean aggregation, forward)
//   kEdge          edge_weight[id(j) * segments + h]  (id(j) = edge_ids[j] when given, else j)
//   kGatheredMean  1 / deg_orig(indices[j]) using mean_indptr (mean aggregation through a
//                  transposed CSR, where the mean's denominator belongs to the gathered row)
//
// Thread safety: stateless; launches are asynchronous on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "skiff/status.h"

namespace skiff::cuda::detail {

enum class WeightKind : int { kOne = 0, kRowMean = 1, kEdge = 2, kGatheredMean = 3 };

struct SpmmArgs {
  int64_t num_rows = 0;  // rows walked (len(indptr) - 1)
  const int64_t* indptr = nullptr;
  const int32_t* indices = nullptr;
  WeightKind weight_kind = WeightKind::kOne;
  const float* edge_weight = nullptr;    // kEdge
  const int32_t* edge_ids = nullptr;     // kEdge through a transposed CSR (may be null)
  const int64_t* mean_indptr = nullptr;  // kGatheredMean
  int64_t segments = 1;
  int64_t dim = 0;
  const float* x = nullptr;  // walked-side rows (scatter) or gathered rows (gather)
  float* out = nullptr;
  int group_lanes = 32;  // set by the launcher: lanes per edge (a power of two, 1..32)
};

// out is overwritten (every walked row, including rows of degree 0, which become zero).
Status LaunchSpmmGather(const SpmmArgs& args, cudaStream_t stream);
// out is accumulated into with atomicAdd; the caller zeroes it first when it must be overwritten.
Status LaunchSpmmScatter(const SpmmArgs& args, cudaStream_t stream);

}  // namespace skiff::cuda::detail
