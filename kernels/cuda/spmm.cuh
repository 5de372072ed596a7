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
// Load balance. A walked row of at most a threshold of edges (SpmmTuning::long_row_edges) is one
// warp's work (per segment), as sampled blocks' rows are. A longer row is cut into units of
// (segment, column slice), and each unit is one block's work: the block's 8 warps take the row's
// 32-edge chunks round-robin, and the gather adds their partial sums in shared memory in a fixed
// order (deterministic; no zeroing, workspace or atomics), while the scatter adds with atomics as
// usual. Both kinds of work share one launch: the first `long_blocks` blocks look for long rows'
// units (block b checks units b, b + long_blocks, ...) while the other blocks take short rows warp
// by warp, skipping long ones, so a hub row is spread over several blocks and starts with the first
// wave instead of stalling one warp after the rest. The host never needs the degrees (no sync, no
// workspace). The gather's short-row blocks form a persistent grid (32 per SM): each warp walks
// rows grid-stride and loads its next row's offsets while it sums the current one.
//
// Thread safety: stateless; launches are asynchronous on `stream`.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "skiff/status.h"

namespace skiff::cuda::detail {

// The gather's launch choices below were measured on an H200 with the sweep in
// tests/gpu/perf_spmm_tuning.cpp (power-law, uniform, all-long, batch-sized and transposed
// blocks at dims 32-256; BENCHMARKS.md has the figures). Against the choices before it (threshold
// 128, 32-column slices, one warp per row), this set is 9% faster on the power-law blocks, 6% on
// uniform ones, 6% on the all-long one and 12% on the backward's transposed blocks. On blocks the
// size of a training batch's (10-50 us) it measured 0.94-1.00x, within the 6% by which two
// launches of identical work differed there.
//
// Rows with more edges than this take the long-row path. A short row is walked by one warp with 4
// row loads in flight (at dim >= 128), so a 128-edge row is ~32 dependent DRAM round trips: a row
// started late in a launch sets the kernel's tail, and a longer one would set it more. Sampled
// fanouts (5-25) stay on the warp-per-row path. For the gather, 96 and 128 were within 0.4% over
// the sweep's blocks, and 96 1% faster on the power-law block at dim 128 (the case compared with
// cuSPARSE); 192 and 256 were 5% slower on the power-law blocks. The scatter keeps 128 (H100;
// its H200 sweep put 96 and 256 within 0.5% of it).
inline constexpr int64_t kGatherLongRowEdges = 96;
inline constexpr int64_t kScatterLongRowEdges = 128;
// Columns of one long-row unit. The gather's 64 (two 128-byte lines of fp32 per edge) beat 32 by
// 2-3% on the power-law blocks at dims 128 and 256, and 128 by 5% at dim 128 (a hub row would be
// one block's work). The scatter's 64 beat its earlier 32 by 3% over the scatter sweep's blocks
// (H200): 3% on the power-law blocks, 15% on the all-long one, uniform ones unchanged; 128 was
// 0.5-2% behind 64, and a persistent short-row grid (16 or 32 blocks per SM) 1%.
inline constexpr int64_t kGatherSliceCols = 64;
inline constexpr int64_t kScatterSliceCols = 64;
// Columns of a long-row unit, at most (the long-row blocks' shared partial sums are sized for it).
inline constexpr int64_t kMaxLongSliceCols = 128;
// Long-row blocks per launch, at most. About the number of blocks resident at once (4 per SM at the
// gather's 64 registers: 528 on a 132-SM H100 or H200, 432 on an A100): enough to fill the GPU with
// long-row work when every row is long, while on a block without long rows these blocks (each
// reads one indptr pair per thread per 256 * kMaxLongBlocks units, then exits) delay the short-row
// blocks by about one wave. Measured (H100): 1024 made a 2,000-row sampled block 10% slower, 256
// made a block of 4,000 rows of 1,000 edges 27% slower; 512 matched the better of the two on every
// perf block. (H200: 1024 was 0.6% faster on the power-law block and 2.5% slower on a batch's.)
inline constexpr int64_t kMaxLongBlocks = 512;
// Source-row loads a lane issues before it uses any of them (see GatherEdges in spmm.cu). 8 needs
// registers that cost a block per SM or spills: at best 19% slower over the sweep's blocks.
inline constexpr int kGatherUnroll = 4;
// Blocks per SM of the gather's register budget (__launch_bounds__): 64 registers, no spills. The
// compiler's own choice (72-78 registers, 3 blocks per SM) was 16% slower over the sweep's blocks,
// 5 and 6 blocks (48 and 40 registers, with spills) 11% and 23%.
inline constexpr int kGatherMinBlocks = 4;
// The gather's short-row blocks per SM (a persistent grid; SpmmTuning::short_blocks). Against one
// warp per row (with the long-row choices above) 32 per SM is 4% faster over the sweep's blocks:
// 6% on power-law and uniform blocks, 8% on transposed ones. 6 per SM was 4% slower than one warp
// per row, 8 1% faster, 16 3%, 64 within 0.3% of 32.
inline constexpr int64_t kShortBlocksPerSm = 32;
// SpmmTuning::short_blocks: kShortBlocksPerSm times the current device's multiprocessors.
inline constexpr int64_t kShortBlocksAuto = -1;

// How the gather kernel is launched. The defaults are the measured best (above); the benchmark
// tests/gpu/perf_spmm_tuning.cpp sweeps the alternatives on the GPU at hand, and the GPU tests
// run the gather under each of them, so every choice stays correct. The scatter has its own
// (kScatterTuning, below).
struct SpmmTuning {
  int64_t long_row_edges = kGatherLongRowEdges;  // rows with more edges take the long-row path
  int64_t max_long_blocks = kMaxLongBlocks;      // long-row blocks per launch, at most (>= 1)
  int64_t long_slice_cols = kGatherSliceCols;    // columns of a long-row unit: 32, 64 or 128
  int unroll = kGatherUnroll;                    // row loads in flight per lane: 4 or 8
  int min_blocks = kGatherMinBlocks;  // __launch_bounds__ blocks per SM: 1 (none), 4, 5 or 6
  // Short-row blocks: 0 = one warp per (row, segment); n > 0 = at most n blocks, whose warps walk
  // the rows grid-stride and load the next row's offsets while they sum the current one;
  // kShortBlocksAuto = kShortBlocksPerSm per multiprocessor of the current device.
  int64_t short_blocks = kShortBlocksAuto;
};

// The scatter's launch choices: threshold 128 and one warp per row (measured on an H100, before
// the gather's sweep), 64-column slices (from the scatter sweep of tests/gpu/perf_spmm_tuning.cpp
// on an H200, where threshold 96 and 256 were within 0.5% of 128).
inline constexpr SpmmTuning kScatterTuning{
    kScatterLongRowEdges, kMaxLongBlocks, kScatterSliceCols, kGatherUnroll, kGatherMinBlocks, 0};

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
  int long_group_lanes = 32;  // lanes per edge for a long row's column slice
  int long_blocks = 0;        // blocks that look for long rows' units
  int64_t long_row_edges = kGatherLongRowEdges;
  int64_t long_slice_cols = kGatherSliceCols;  // columns of a long-row unit (32, 64 or 128)
  int long_slice_shift = 5;                    // log2(long_slice_cols)
  int64_t slices = 1;                          // long-row units per segment: ceil(dim / slice)
};

// out is overwritten (every walked row, including rows of degree 0, which become zero).
// `tuning` must hold values its comments allow (checked: InvalidArgument otherwise).
Status LaunchSpmmGather(const SpmmArgs& args, cudaStream_t stream,
                        const SpmmTuning& tuning = SpmmTuning{});
// out is accumulated into with atomicAdd; the caller zeroes it first when it must be overwritten.
// The scatter takes the long-row fields and short_blocks of `tuning` (its short rows have no
// unroll, and its occupancy is fixed); same checks as the gather's.
Status LaunchSpmmScatter(const SpmmArgs& args, cudaStream_t stream,
                         const SpmmTuning& tuning = kScatterTuning);

// "long_row_edges=96,max_long_blocks=512,...": every field, without spaces (one token in the
// benchmarks' output lines), for messages and logs.
std::string DescribeTuning(const SpmmTuning& tuning);

}  // namespace skiff::cuda::detail
