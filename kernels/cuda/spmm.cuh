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
// Load balance. A walked row of at most kLongRowEdges edges is one warp's work (per segment), as
// sampled blocks' rows are. A longer row is cut into units of (segment, 32-column slice), and each
// unit is one block's work: the block's 8 warps take the row's 32-edge chunks round-robin, and the
// gather adds their partial sums in shared memory in a fixed order (deterministic; no zeroing,
// workspace or atomics), while the scatter adds with atomics as usual. Both kinds of work share one
// launch: the first `long_blocks` blocks look for long rows' units (block b checks units b,
// b + long_blocks, ...) while the other blocks take short rows warp by warp, skipping long ones, so
// a hub row is spread over several blocks and starts with the first wave instead of stalling one
// warp after the rest. The host never needs the degrees (no sync, no workspace).
//
// Thread safety: stateless; launches are asynchronous on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "skiff/status.h"

namespace skiff::cuda::detail {

// Rows with more edges than this take the long-row path (see above). A short row is walked by one
// warp with 4 row loads in flight (at dim >= 128), so a 128-edge row is ~32 dependent DRAM round
// trips, ~50 us under load: a row started late in a launch sets the kernel's tail, and a longer
// one would set it more. Sampled fanouts (5-25, up to 128) stay on the warp-per-row path. Of
// 64/96/128/192/256, 96 and 128 measured best on the power-law perf block (equal within noise).
inline constexpr int64_t kLongRowEdges = 128;
// Columns of one long-row unit (one 128-byte line of fp32 per edge).
inline constexpr int64_t kLongSliceCols = 32;
// Long-row blocks per launch, at most. About the number of blocks resident at once (4 per SM at the
// gather's 64 registers: 528 on a 132-SM H100, 432 on an A100): enough to fill the GPU with
// long-row work when every row is long, while on a block without long rows these blocks (each
// reads one indptr pair per thread per 256 * kMaxLongBlocks units, then exits) delay the short-row
// blocks by about one wave. Measured (H100): 1024 made a 2,000-row sampled block 10% slower, 256
// made a block of 4,000 rows of 1,000 edges 27% slower; 512 matched the better of the two on every
// perf block.
inline constexpr int64_t kMaxLongBlocks = 512;

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
  // Set by the launcher:
  int group_lanes = 32;       // lanes per edge for short rows (a power of two, 1..32)
  int long_group_lanes = 32;  // lanes per edge for a long row's 32-column slice
  int long_blocks = 0;        // blocks that look for long rows' units
  int64_t slices = 1;         // 32-column slices per segment: ceil(dim / 32)
};

// out is overwritten (every walked row, including rows of degree 0, which become zero).
Status LaunchSpmmGather(const SpmmArgs& args, cudaStream_t stream);
// out is accumulated into with atomicAdd; the caller zeroes it first when it must be overwritten.
Status LaunchSpmmScatter(const SpmmArgs& args, cudaStream_t stream);

}  // namespace skiff::cuda::detail
