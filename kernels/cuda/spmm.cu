#include "kernels/cuda/spmm.cuh"

#include <algorithm>
#include <string>

#include "kernels/cuda/common.cuh"

namespace skiff::cuda::detail {
namespace {

// Columns one lane owns: 4 with float4 loads, else 1.
template <bool kVec4>
constexpr int kColsPerLane = kVec4 ? 4 : 1;

// Scatter blocks per SM (__launch_bounds__): caps its registers at 48, what the warp-per-row
// scatter used before the long-row path shared its kernel. The gather's is a template parameter
// (SpmmTuning::min_blocks, default kGatherMinBlocks = 4: 64 registers): a 40-register cap (six
// blocks) made it spill and measured 5% slower on sampled blocks and 30% slower when every row is
// long on an H100, 23% slower over the tuning sweep's blocks on an H200.
constexpr int kScatterMinBlocks = 5;

// The scatter adds a float4 with one 16-byte atomicAdd (sm_90+: one RED.128 per lane instead of
// four RED.32): 1.7x faster backward on the perf blocks. Earlier architectures use four.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define SKIFF_SPMM_VECTOR_ATOMICS 1
#else
#define SKIFF_SPMM_VECTOR_ATOMICS 0
#endif

__device__ __forceinline__ float EdgeWeight(const SpmmArgs& a, int64_t j, int64_t seg,
                                            float row_mean) {
  switch (a.weight_kind) {
    case WeightKind::kOne:
      return 1.0f;
    case WeightKind::kRowMean:
      return row_mean;
    case WeightKind::kEdge: {
      const int64_t id = a.edge_ids != nullptr ? a.edge_ids[j] : j;
      return a.edge_weight[id * a.segments + seg];
    }
    case WeightKind::kGatheredMean: {
      const int32_t g = a.indices[j];
      const int64_t deg = a.mean_indptr[g + 1] - a.mean_indptr[g];
      return deg > 0 ? 1.0f / static_cast<float>(deg) : 0.0f;
    }
  }
  return 0.0f;
}

__device__ __forceinline__ float RowMean(const SpmmArgs& a, int64_t begin, int64_t end) {
  return (a.weight_kind == WeightKind::kRowMean && end > begin)
             ? 1.0f / static_cast<float>(end - begin)
             : 1.0f;
}

__device__ __forceinline__ bool IsLongRow(const SpmmArgs& a, int64_t begin, int64_t end) {
  return end - begin > a.long_row_edges;
}

// One lane's edge of a 32-edge chunk: edge j's index and weight, or zeros past the row's end.
struct ChunkEdge {
  int32_t index = 0;
  float weight = 0.0f;
};

__device__ __forceinline__ ChunkEdge LoadChunkEdge(const SpmmArgs& a, int64_t j, int64_t end,
                                                   int64_t seg, float row_mean) {
  ChunkEdge e;
  if (j < end) {
    e.index = a.indices[j];
    e.weight = EdgeWeight(a, j, seg, row_mean);
  }
  return e;
}

// How a warp's lanes split into lane groups: G lanes (a power of two) per edge, 32 / G edges in
// flight per step; lane l is lane l % G of group l / G and owns that lane's columns of the tile.
struct LaneGroups {
  int group_lanes;
  int groups;
  int group;
  int lane_in_group;
  __device__ explicit LaneGroups(int g)
      : group_lanes(g), groups(kWarpSize / g), group(Lane() / g), lane_in_group(Lane() % g) {}
};

// acc += w_j * x[indices[j], seg, col .. col + kCpl) over the edges j < end of the 32-edge chunks
// that start at first_chunk, first_chunk + chunk_stride, ...: the chunk's (index, weight) pairs are
// loaded once, one per lane (coalesced), and broadcast with shuffles; group g takes edges g,
// g + groups, ... of each chunk. Every lane of the warp calls it with the same chunk arguments (the
// shuffles need the full warp); `active` only masks the row loads. The adds are in edge order, so
// with G = 32 every lane sums its columns in CSR order, like the CPU reference.
//
// Memory parallelism: the kGatherUnroll row loads of a step are predicated, not branched around,
// and all issued before any is used (a masked-off load contributes 0 * 0), so a warp keeps several
// rows in flight; a branch around each load and its use (the earlier form) left one per warp, which
// sampled blocks hide with many warps but a long row, which has few, cannot. (Loading the next
// chunk's pairs ahead of the current chunk's rows measured no faster and costs registers.)
template <bool kVec4, int kUnroll>
__device__ __forceinline__ void GatherEdges(const SpmmArgs& a, const LaneGroups& lg,
                                            int64_t first_chunk, int64_t chunk_stride, int64_t end,
                                            int64_t seg, float row_mean, const float* x_seg,
                                            int64_t col, bool active, float4& acc) {
  const int lane = Lane();
  const int64_t row_stride = a.segments * a.dim;
  const float* x_col = x_seg + (active ? col : 0);
  for (int64_t chunk = first_chunk; chunk < end; chunk += chunk_stride) {
    const ChunkEdge mine = LoadChunkEdge(a, chunk + lane, end, seg, row_mean);
    const int n = static_cast<int>(min(static_cast<int64_t>(kWarpSize), end - chunk));
    for (int k0 = 0; k0 < n; k0 += lg.groups * kUnroll) {
      float4 v[kUnroll];
      float w[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int k = k0 + u * lg.groups + lg.group;  // may pass n (and 32) on the last step
        const int32_t s = __shfl_sync(0xffffffffu, mine.index, k & (kWarpSize - 1));
        const float wk = __shfl_sync(0xffffffffu, mine.weight, k & (kWarpSize - 1));
        const bool valid = active && k < n;
        w[u] = valid ? wk : 0.0f;
        v[u] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (valid) {
          const float* src = x_col + static_cast<int64_t>(s) * row_stride;
          if constexpr (kVec4) {
            v[u] = __ldg(reinterpret_cast<const float4*>(src));
          } else {
            v[u].x = __ldg(src);
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        acc.x += w[u] * v[u].x;
        if constexpr (kVec4) {
          acc.y += w[u] * v[u].y;
          acc.z += w[u] * v[u].z;
          acc.w += w[u] * v[u].w;
        }
      }
    }
  }
}

// Sums the lane groups' partial sums (lanes with the same lane_in_group hold the same columns);
// every lane ends with the total. The full warp must call it.
template <bool kVec4>
__device__ __forceinline__ void CombineGroups(const LaneGroups& lg, float4& acc) {
  for (int offset = lg.group_lanes; offset < kWarpSize; offset *= 2) {
    acc.x += __shfl_xor_sync(0xffffffffu, acc.x, offset);
    if constexpr (kVec4) {
      acc.y += __shfl_xor_sync(0xffffffffu, acc.y, offset);
      acc.z += __shfl_xor_sync(0xffffffffu, acc.z, offset);
      acc.w += __shfl_xor_sync(0xffffffffu, acc.w, offset);
    }
  }
}

// out[indices[j], seg, col ..] += w_j * g over the edges of the chunks, as in GatherEdges (stores
// do not stall the warp, so a plain loop keeps enough in flight).
template <bool kVec4>
__device__ __forceinline__ void ScatterEdges(const SpmmArgs& a, const LaneGroups& lg,
                                             int64_t first_chunk, int64_t chunk_stride, int64_t end,
                                             int64_t seg, float row_mean, float* out_seg,
                                             int64_t col, bool active, const float4& g) {
  const int lane = Lane();
  const int64_t row_stride = a.segments * a.dim;
  for (int64_t chunk = first_chunk; chunk < end; chunk += chunk_stride) {
    const ChunkEdge mine = LoadChunkEdge(a, chunk + lane, end, seg, row_mean);
    const int n = static_cast<int>(min(static_cast<int64_t>(kWarpSize), end - chunk));
    for (int k0 = 0; k0 < n; k0 += lg.groups) {
      const int k = k0 + lg.group;  // < 32: k0 < n <= 32 and k0 is a multiple of groups
      const int32_t d = __shfl_sync(0xffffffffu, mine.index, k);
      const float w = __shfl_sync(0xffffffffu, mine.weight, k);
      if (!active || k >= n) continue;
      float* dst = out_seg + static_cast<int64_t>(d) * row_stride + col;
      if constexpr (kVec4) {
#if SKIFF_SPMM_VECTOR_ATOMICS
        atomicAdd(reinterpret_cast<float4*>(dst), make_float4(w * g.x, w * g.y, w * g.z, w * g.w));
#else
        atomicAdd(dst, w * g.x);
        atomicAdd(dst + 1, w * g.y);
        atomicAdd(dst + 2, w * g.z);
        atomicAdd(dst + 3, w * g.w);
#endif
      } else {
        atomicAdd(dst, w * g.x);
      }
    }
  }
}

// A long row's unit: (row, segment, 32-column slice). Units are numbered row-major, so a row's
// units are consecutive and land on consecutive long-row blocks.
struct LongUnit {
  int64_t row, seg, col0;  // col0: the slice's first column within the segment
  __device__ LongUnit(const SpmmArgs& a, int64_t unit) {
    const int64_t per_row = a.segments * a.slices;
    row = unit / per_row;
    const int64_t rest = unit % per_row;
    seg = rest / a.slices;
    col0 = (rest % a.slices) << a.long_slice_shift;
  }
};

// The long-row blocks' search. Block `long_block` of a.long_blocks owns units long_block,
// long_block + long_blocks, ... and checks 256 of them per round, one per thread: round `base`
// covers units base + long_blocks * t for t in [0, 256). FindLongUnits lists those of long rows in
// s_units and returns how many; the whole block calls it, and must __syncthreads() before the next
// call (which rewrites s_units and s_count).
__device__ __forceinline__ int FindLongUnits(const SpmmArgs& a, int64_t base, int64_t units,
                                             int64_t* s_units, int* s_count) {
  if (threadIdx.x == 0) *s_count = 0;
  __syncthreads();
  const int64_t unit = base + static_cast<int64_t>(a.long_blocks) * threadIdx.x;
  if (unit < units) {
    const int64_t row = unit / (a.segments * a.slices);
    if (IsLongRow(a, a.indptr[row], a.indptr[row + 1])) {
      s_units[atomicAdd(s_count, 1)] = unit;  // order does not matter: units are independent
    }
  }
  __syncthreads();
  return *s_count;
}

// Calls visit(u, begin, end) for each long-row unit u this long-row block owns (FindLongUnits),
// [begin, end) being its row's edges. The whole block calls it, and every thread calls visit with
// the same arguments, so visit may __syncthreads().
template <typename Visit>
__device__ __forceinline__ void ForEachLongUnit(const SpmmArgs& a, Visit visit) {
  __shared__ int64_t s_units[kRowBlockThreads];
  __shared__ int s_count;
  const int64_t units = a.num_rows * a.segments * a.slices;
  for (int64_t base = blockIdx.x; base < units;
       base += static_cast<int64_t>(a.long_blocks) * kRowBlockThreads) {
    const int count = FindLongUnits(a, base, units, s_units, &s_count);
    for (int i = 0; i < count; ++i) {
      const LongUnit u(a, s_units[i]);
      visit(u, a.indptr[u.row], a.indptr[u.row + 1]);
    }
    __syncthreads();  // s_units and s_count are rewritten by the next round
  }
}

// Long rows: the first long_blocks blocks find their units (ForEachLongUnit). A unit is one
// block's: warp w takes the row's 32-edge chunks w, w + 8, ... for the unit's long_slice_cols
// columns (lane groups of long_group_lanes), and the 8 warps' sums are added in shared memory in
// warp order (deterministic), then written by the block's first long_slice_cols threads.
template <bool kVec4, int kUnroll>
__device__ __forceinline__ void GatherLongRows(const SpmmArgs& a) {
  constexpr int kCpl = kColsPerLane<kVec4>;
  const int64_t row_stride = a.segments * a.dim;
  __shared__ float s_part[kWarpsPerRowBlock][kMaxLongSliceCols];
  const LaneGroups lg(a.long_group_lanes);
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int64_t slice_col = static_cast<int64_t>(lg.lane_in_group) * kCpl;  // < slice
  ForEachLongUnit(a, [&](const LongUnit& u, int64_t begin, int64_t end) {
    const int64_t col = u.col0 + slice_col;
    const bool active = col < a.dim;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    GatherEdges<kVec4, kUnroll>(a, lg, begin + static_cast<int64_t>(warp) * kWarpSize,
                                static_cast<int64_t>(kWarpsPerRowBlock) * kWarpSize, end, u.seg,
                                RowMean(a, begin, end), a.x + u.seg * a.dim, col, active, acc);
    CombineGroups<kVec4>(lg, acc);
    if (active && lg.group == 0) {
      s_part[warp][slice_col] = acc.x;
      if constexpr (kVec4) {
        s_part[warp][slice_col + 1] = acc.y;
        s_part[warp][slice_col + 2] = acc.z;
        s_part[warp][slice_col + 3] = acc.w;
      }
    }
    __syncthreads();
    // Every column of the slice below dim was written above: the groups cover
    // long_group_lanes * kCpl >= min(dim, long_slice_cols) columns.
    const int t = static_cast<int>(threadIdx.x);
    if (t < a.long_slice_cols && u.col0 + t < a.dim) {
      float sum = s_part[0][t];
#pragma unroll
      for (int w = 1; w < kWarpsPerRowBlock; ++w) sum += s_part[w][t];
      a.out[u.row * row_stride + u.seg * a.dim + u.col0 + t] = sum;
    }
    __syncthreads();  // s_part is rewritten by the next unit
  });
}

// Loads the offsets of task `task`'s row into *begin and *end, if task < tasks.
__device__ __forceinline__ void LoadRowOffsets(const SpmmArgs& a, int64_t task, int64_t tasks,
                                               int64_t* begin, int64_t* end) {
  if (task >= tasks) return;
  const int64_t row = task / a.segments;
  *begin = a.indptr[row];
  *end = a.indptr[row + 1];
}

// Calls visit(row, seg, begin, end) for each short (row, segment) task of this warp: one warp per
// task, grid-stride over the blocks after the long-row blocks; [begin, end) are the row's edges.
// With kPrefetch (a grid smaller than the rows), a warp loads its next row's offsets before it
// visits the current row, so that dependent load is off the next row's critical path. The whole
// warp calls it.
template <bool kPrefetch, typename Visit>
__device__ __forceinline__ void ForEachShortRow(const SpmmArgs& a, Visit visit) {
  const int64_t first_warp =
      (static_cast<int64_t>(blockIdx.x - a.long_blocks) * blockDim.x + threadIdx.x) / kWarpSize;
  const int64_t warps = static_cast<int64_t>(gridDim.x - a.long_blocks) * blockDim.x / kWarpSize;
  const int64_t tasks = a.num_rows * a.segments;
  int64_t next_begin = 0, next_end = 0;
  if constexpr (kPrefetch) LoadRowOffsets(a, first_warp, tasks, &next_begin, &next_end);
  for (int64_t task = first_warp; task < tasks; task += warps) {
    int64_t begin = next_begin, end = next_end;
    if constexpr (kPrefetch) {
      LoadRowOffsets(a, task + warps, tasks, &next_begin, &next_end);
    } else {
      LoadRowOffsets(a, task, tasks, &begin, &end);
    }
    if (IsLongRow(a, begin, end)) continue;  // long-row blocks take it
    visit(task / a.segments, task % a.segments, begin, end);
  }
}

// Calls visit(col, active) for each column tile of a short row: lane group lane l of the tile at
// col0 owns columns col0 + l * kCpl, ...; `active` is false past dim.
template <bool kVec4, typename Visit>
__device__ __forceinline__ void ForEachTile(const SpmmArgs& a, const LaneGroups& lg, Visit visit) {
  constexpr int kCpl = kColsPerLane<kVec4>;
  const int64_t tile_cols = static_cast<int64_t>(lg.group_lanes) * kCpl;
  for (int64_t col0 = 0; col0 < a.dim; col0 += tile_cols) {
    const int64_t col = col0 + static_cast<int64_t>(lg.lane_in_group) * kCpl;
    visit(col, col < a.dim);
  }
}

// Short rows (at most long_row_edges edges): one warp per (row, segment). The warp is split into
// 32 / G lane groups of G lanes (G = group_lanes, chosen so a group covers a column tile: G = 32
// for dim >= 128 with float4, so one edge's 512-byte row is one warp-wide load; G = 4 for a 16-wide
// GAT head, so 8 edges are in flight per step). Group g accumulates edges g, g + 32/G, ... of its
// columns; the groups' partial sums are combined with shuffles at the end of each column tile.
template <bool kVec4, int kUnroll, bool kPrefetch>
__device__ __forceinline__ void GatherShortRows(const SpmmArgs& a) {
  const int64_t row_stride = a.segments * a.dim;
  const LaneGroups lg(a.group_lanes);
  ForEachShortRow<kPrefetch>(a, [&](int64_t row, int64_t seg, int64_t begin, int64_t end) {
    const float row_mean = RowMean(a, begin, end);
    const float* x_seg = a.x + seg * a.dim;
    float* out_row = a.out + row * row_stride + seg * a.dim;
    ForEachTile<kVec4>(a, lg, [&](int64_t col, bool active) {
      float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
      GatherEdges<kVec4, kUnroll>(a, lg, begin, kWarpSize, end, seg, row_mean, x_seg, col, active,
                                  acc);
      CombineGroups<kVec4>(lg, acc);
      if (!active || lg.group != 0) return;
      if constexpr (kVec4) {
        *reinterpret_cast<float4*>(out_row + col) = acc;
      } else {
        out_row[col] = acc.x;
      }
    });
  });
}

// The gather: long-row blocks first, then short-row blocks (see above). kMinBlocks is the
// __launch_bounds__ occupancy the compiler must fit (1: its own choice of registers).
template <bool kVec4, int kUnroll, bool kPrefetch, int kMinBlocks>
__global__ void __launch_bounds__(kRowBlockThreads, kMinBlocks) SpmmGatherKernel(SpmmArgs a) {
  if (blockIdx.x < static_cast<unsigned>(a.long_blocks)) {
    GatherLongRows<kVec4, kUnroll>(a);
  } else {
    GatherShortRows<kVec4, kUnroll, kPrefetch>(a);
  }
}

// Loads this lane's columns [col, col + kCpl) of x_row (zeros where inactive).
template <bool kVec4>
__device__ __forceinline__ float4 LoadTile(const float* x_row, int64_t col, bool active) {
  float4 g = make_float4(0.f, 0.f, 0.f, 0.f);
  if (active) {
    if constexpr (kVec4) {
      g = __ldg(reinterpret_cast<const float4*>(x_row + col));
    } else {
      g.x = __ldg(x_row + col);
    }
  }
  return g;
}

// Long rows: units found by the first long_blocks blocks as in the gather; warp w of the block
// scatters chunks w, w + 8, ... of the unit's columns.
template <bool kVec4>
__device__ __forceinline__ void ScatterLongRows(const SpmmArgs& a) {
  constexpr int kCpl = kColsPerLane<kVec4>;
  const int64_t row_stride = a.segments * a.dim;
  const LaneGroups lg(a.long_group_lanes);
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int64_t slice_col = static_cast<int64_t>(lg.lane_in_group) * kCpl;  // < slice
  ForEachLongUnit(a, [&](const LongUnit& u, int64_t begin, int64_t end) {
    const int64_t col = u.col0 + slice_col;
    const bool active = col < a.dim;
    const float4 g = LoadTile<kVec4>(a.x + u.row * row_stride + u.seg * a.dim, col, active);
    ScatterEdges<kVec4>(a, lg, begin + static_cast<int64_t>(warp) * kWarpSize,
                        static_cast<int64_t>(kWarpsPerRowBlock) * kWarpSize, end, u.seg,
                        RowMean(a, begin, end), a.out + u.seg * a.dim, col, active, g);
  });
}

// Short rows: one warp per (row, segment), split into lane groups as in the gather: every group
// holds the row's x tile in registers and adds it, weighted, into the out rows of its own edges
// with atomicAdd (RED in L2: one 16-byte RED per lane for float4 tiles on sm_90). Contention is
// limited to sources shared by many walked rows, which in sampled blocks are few.
template <bool kVec4, bool kPrefetch>
__device__ __forceinline__ void ScatterShortRows(const SpmmArgs& a) {
  const int64_t row_stride = a.segments * a.dim;
  const LaneGroups lg(a.group_lanes);
  ForEachShortRow<kPrefetch>(a, [&](int64_t row, int64_t seg, int64_t begin, int64_t end) {
    if (begin == end) return;  // nothing to add to
    const float row_mean = RowMean(a, begin, end);
    const float* x_row = a.x + row * row_stride + seg * a.dim;
    float* out_seg = a.out + seg * a.dim;
    ForEachTile<kVec4>(a, lg, [&](int64_t col, bool active) {
      const float4 g = LoadTile<kVec4>(x_row, col, active);
      ScatterEdges<kVec4>(a, lg, begin, kWarpSize, end, seg, row_mean, out_seg, col, active, g);
    });
  });
}

// The scatter: long-row blocks first, then short-row blocks, as in the gather. kPrefetch: a
// persistent grid whose warps load the next row's offsets ahead (a tuning choice; the default is
// one warp per row).
template <bool kVec4, bool kPrefetch>
__global__ void __launch_bounds__(kRowBlockThreads, kScatterMinBlocks)
    SpmmScatterKernel(SpmmArgs a) {
  if (blockIdx.x < static_cast<unsigned>(a.long_blocks)) {
    ScatterLongRows<kVec4>(a);
  } else {
    ScatterShortRows<kVec4, kPrefetch>(a);
  }
}

bool CanUseVec4(const SpmmArgs& a) {
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return a.dim % 4 == 0 && aligned(a.x) && aligned(a.out);
}

// Lanes per edge: the smallest power of two whose lanes cover `cols` columns (cols / 4 lanes with
// float4, cols lanes otherwise), at most 32. Small dims (GAT heads of 8-64, dim 1-31) then keep
// several edges in flight per warp instead of idling lanes.
int GroupLanes(int64_t cols, bool vec4) {
  const int64_t lanes_needed = vec4 ? cols / 4 : cols;
  int g = 1;
  while (g < kWarpSize && g < lanes_needed) g *= 2;
  return g;
}

// Grid: `long_blocks` blocks that look for long rows' units (one per unit up to max_long_blocks:
// a small block gets few, a large one has each check several per round), then one warp per
// (row, segment) task, 8 warps per 256-thread block, grid-stride beyond kMaxGridBlocks (or beyond
// tuning.short_blocks). Warp-per-row keeps a short row's edge list in one warp (no inter-warp
// reduction) and gives 128-column tiles full 512-byte coalesced row reads with float4. The
// long-row blocks come first so that hub rows start with the first wave.
struct SpmmShape {
  SpmmArgs args;
  unsigned grid = 0;
  bool vec4 = false;
  bool prefetch = false;  // a persistent short-row grid, whose warps prefetch the next row
};

// The current device's multiprocessor count, cached per thread and device (cudaGetDevice is a
// host-side lookup); 0 if the runtime cannot say.
int Multiprocessors() {
  thread_local int cached_device = -1;
  thread_local int cached_count = 0;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  if (device != cached_device) {
    int count = 0;
    if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
      return 0;
    }
    cached_device = device;
    cached_count = count;
  }
  return cached_count;
}

// The launch of `args` under a checked `tuning` (kShortBlocksAuto resolved here; 0 multiprocessors
// known means one warp per row).
SpmmShape Shape(const SpmmArgs& args, const SpmmTuning& tuning) {
  SpmmShape shape{args};
  SpmmArgs& a = shape.args;
  shape.vec4 = CanUseVec4(a);
  a.group_lanes = GroupLanes(a.dim, shape.vec4);
  // A slice is at most what one warp's lanes cover: 128 columns with float4, 32 without.
  a.long_slice_cols = std::min<int64_t>(tuning.long_slice_cols, kWarpSize * (shape.vec4 ? 4 : 1));
  a.long_slice_shift = a.long_slice_cols == 32 ? 5 : a.long_slice_cols == 64 ? 6 : 7;
  a.long_row_edges = tuning.long_row_edges;
  a.long_group_lanes = GroupLanes(std::min(a.dim, a.long_slice_cols), shape.vec4);
  a.slices = CeilDiv(a.dim, a.long_slice_cols);
  a.long_blocks =
      static_cast<int>(std::min(a.num_rows * a.segments * a.slices, tuning.max_long_blocks));
  const int64_t short_blocks = tuning.short_blocks == kShortBlocksAuto
                                   ? kShortBlocksPerSm * Multiprocessors()
                                   : tuning.short_blocks;
  unsigned short_grid = GridFor(a.num_rows * a.segments, kWarpsPerRowBlock);
  shape.prefetch = short_blocks > 0;
  if (shape.prefetch) {
    short_grid = static_cast<unsigned>(std::min<int64_t>(short_grid, short_blocks));
  }
  shape.grid = static_cast<unsigned>(a.long_blocks) + short_grid;
  return shape;
}

Status CheckTuning(const SpmmTuning& t) {
  const bool ok = t.long_row_edges >= 0 && t.max_long_blocks >= 1 &&
                  (t.long_slice_cols == 32 || t.long_slice_cols == 64 ||
                   t.long_slice_cols == kMaxLongSliceCols) &&
                  (t.unroll == 4 || t.unroll == 8) &&
                  (t.min_blocks == 1 || (t.min_blocks >= 4 && t.min_blocks <= 6)) &&
                  t.short_blocks >= kShortBlocksAuto;
  if (ok) return Status::Ok();
  return Status::InvalidArgument("SpmmTuning " + DescribeTuning(t) +
                                 ": a value outside those spmm.cuh allows");
}

// The kernel instantiation a launch takes.
using SpmmKernel = void (*)(SpmmArgs);

template <bool kVec4, int kUnroll, bool kPrefetch>
SpmmKernel PickMinBlocks(int min_blocks) {
  switch (min_blocks) {
    case 4:
      return SpmmGatherKernel<kVec4, kUnroll, kPrefetch, 4>;
    case 5:
      return SpmmGatherKernel<kVec4, kUnroll, kPrefetch, 5>;
    case 6:
      return SpmmGatherKernel<kVec4, kUnroll, kPrefetch, 6>;
    default:
      return SpmmGatherKernel<kVec4, kUnroll, kPrefetch, 1>;
  }
}

template <bool kVec4, int kUnroll>
SpmmKernel PickPrefetch(bool prefetch, int min_blocks) {
  return prefetch ? PickMinBlocks<kVec4, kUnroll, true>(min_blocks)
                  : PickMinBlocks<kVec4, kUnroll, false>(min_blocks);
}

SpmmKernel PickGather(const SpmmShape& shape, const SpmmTuning& t) {
  if (shape.vec4) {
    return t.unroll == 8 ? PickPrefetch<true, 8>(shape.prefetch, t.min_blocks)
                         : PickPrefetch<true, 4>(shape.prefetch, t.min_blocks);
  }
  return t.unroll == 8 ? PickPrefetch<false, 8>(shape.prefetch, t.min_blocks)
                       : PickPrefetch<false, 4>(shape.prefetch, t.min_blocks);
}

SpmmKernel PickScatter(const SpmmShape& shape) {
  if (shape.vec4) {
    return shape.prefetch ? SpmmScatterKernel<true, true> : SpmmScatterKernel<true, false>;
  }
  return shape.prefetch ? SpmmScatterKernel<false, true> : SpmmScatterKernel<false, false>;
}

}  // namespace

std::string DescribeTuning(const SpmmTuning& t) {
  return "long_row_edges=" + std::to_string(t.long_row_edges) +
         ",max_long_blocks=" + std::to_string(t.max_long_blocks) +
         ",long_slice_cols=" + std::to_string(t.long_slice_cols) +
         ",unroll=" + std::to_string(t.unroll) + ",min_blocks=" + std::to_string(t.min_blocks) +
         ",short_blocks=" + std::to_string(t.short_blocks);
}

Status LaunchSpmmGather(const SpmmArgs& args, cudaStream_t stream, const SpmmTuning& tuning) {
  SKIFF_RETURN_IF_ERROR(CheckTuning(tuning));
  if (args.num_rows == 0 || args.dim == 0 || args.segments == 0) return Status::Ok();
  const SpmmShape shape = Shape(args, tuning);
  PickGather(shape, tuning)<<<shape.grid, kRowBlockThreads, 0, stream>>>(shape.args);
  return CheckLaunch("SpmmGatherKernel");
}

Status LaunchSpmmScatter(const SpmmArgs& args, cudaStream_t stream, const SpmmTuning& tuning) {
  SKIFF_RETURN_IF_ERROR(CheckTuning(tuning));
  if (args.num_rows == 0 || args.dim == 0 || args.segments == 0) return Status::Ok();
  const SpmmShape shape = Shape(args, tuning);
  PickScatter(shape)<<<shape.grid, kRowBlockThreads, 0, stream>>>(shape.args);
  return CheckLaunch("SpmmScatterKernel");
}

}  // namespace skiff::cuda::detail
