#include "kernels/cuda/spmm.cuh"

#include "kernels/cuda/common.cuh"

namespace skiff::cuda::detail {
namespace {

// Columns one lane owns: 4 with float4 loads, else 1.
template <bool kVec4>
constexpr int kColsPerLane = kVec4 ? 4 : 1;

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

// One warp per (row, segment). The warp loads 32 edges' (index, weight) at once -- one per lane,
// coalesced -- and broadcasts them with shuffles. The warp is split into 32 / G lane groups of G
// lanes (G = group_lanes, chosen so a group covers the row: G = 32 for dim >= 128 with float4, so
// one edge's 512-byte row is one warp-wide load; G = 4 for a 16-wide GAT head, so 8 edges are in
// flight at once). Group g accumulates edges g, g + 32/G, ... of its columns; the groups' partial
// sums are combined with shuffles at the end of each column tile.
template <bool kVec4>
__global__ void __launch_bounds__(kRowBlockThreads) SpmmGatherKernel(SpmmArgs a) {
  constexpr int kCpl = kColsPerLane<kVec4>;
  const int lane = Lane();
  const int group_lanes = a.group_lanes;
  const int groups = kWarpSize / group_lanes;
  const int group = lane / group_lanes;
  const int lane_in_group = lane % group_lanes;
  const int64_t tile_cols = static_cast<int64_t>(group_lanes) * kCpl;
  const int64_t row_stride = a.segments * a.dim;
  const int64_t tasks = a.num_rows * a.segments;
  for (int64_t task = GlobalWarp(); task < tasks; task += WarpCount()) {
    const int64_t row = task / a.segments, seg = task % a.segments;
    const int64_t begin = a.indptr[row], end = a.indptr[row + 1];
    const float row_mean = RowMean(a, begin, end);
    const float* x_seg = a.x + seg * a.dim;
    float* out_row = a.out + row * row_stride + seg * a.dim;
    for (int64_t col0 = 0; col0 < a.dim; col0 += tile_cols) {
      const int64_t col = col0 + static_cast<int64_t>(lane_in_group) * kCpl;
      const bool active = col < a.dim;
      float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
      for (int64_t chunk = begin; chunk < end; chunk += kWarpSize) {
        const int64_t j = chunk + lane;
        int32_t my_src = 0;
        float my_w = 0.0f;
        if (j < end) {
          my_src = a.indices[j];
          my_w = EdgeWeight(a, j, seg, row_mean);
        }
        const int n = static_cast<int>(min(static_cast<int64_t>(kWarpSize), end - chunk));
#pragma unroll 4
        for (int k0 = 0; k0 < n; k0 += groups) {
          const int k = k0 + group;  // < 32: k0 < n <= 32 and k0 is a multiple of groups
          const int32_t s = __shfl_sync(0xffffffffu, my_src, k);
          const float w = __shfl_sync(0xffffffffu, my_w, k);
          if (!active || k >= n) continue;
          const float* src = x_seg + static_cast<int64_t>(s) * row_stride + col;
          if constexpr (kVec4) {
            const float4 v = __ldg(reinterpret_cast<const float4*>(src));
            acc.x += w * v.x;
            acc.y += w * v.y;
            acc.z += w * v.z;
            acc.w += w * v.w;
          } else {
            acc.x += w * __ldg(src);
          }
        }
      }
      // Combine the groups' partial sums (lanes with the same lane_in_group hold the same columns).
      for (int offset = group_lanes; offset < kWarpSize; offset *= 2) {
        acc.x += __shfl_xor_sync(0xffffffffu, acc.x, offset);
        if constexpr (kVec4) {
          acc.y += __shfl_xor_sync(0xffffffffu, acc.y, offset);
          acc.z += __shfl_xor_sync(0xffffffffu, acc.z, offset);
          acc.w += __shfl_xor_sync(0xffffffffu, acc.w, offset);
        }
      }
      if (!active || group != 0) continue;
      if constexpr (kVec4) {
        *reinterpret_cast<float4*>(out_row + col) = acc;
      } else {
        out_row[col] = acc.x;
      }
    }
  }
}

// One warp per (row, segment), split into lane groups as in the gather: every group holds the
// row's x tile in registers and adds it, weighted, into the out rows of its own edges with
// atomicAdd (RED.F32 in L2). Contention is limited to sources shared by many walked rows, which
// in sampled blocks are few.
template <bool kVec4>
__global__ void __launch_bounds__(kRowBlockThreads) SpmmScatterKernel(SpmmArgs a) {
  constexpr int kCpl = kColsPerLane<kVec4>;
  const int lane = Lane();
  const int group_lanes = a.group_lanes;
  const int groups = kWarpSize / group_lanes;
  const int group = lane / group_lanes;
  const int lane_in_group = lane % group_lanes;
  const int64_t tile_cols = static_cast<int64_t>(group_lanes) * kCpl;
  const int64_t row_stride = a.segments * a.dim;
  const int64_t tasks = a.num_rows * a.segments;
  for (int64_t task = GlobalWarp(); task < tasks; task += WarpCount()) {
    const int64_t row = task / a.segments, seg = task % a.segments;
    const int64_t begin = a.indptr[row], end = a.indptr[row + 1];
    if (begin == end) continue;
    const float row_mean = RowMean(a, begin, end);
    const float* x_row = a.x + row * row_stride + seg * a.dim;
    float* out_seg = a.out + seg * a.dim;
    for (int64_t col0 = 0; col0 < a.dim; col0 += tile_cols) {
      const int64_t col = col0 + static_cast<int64_t>(lane_in_group) * kCpl;
      const bool active = col < a.dim;
      float4 g = make_float4(0.f, 0.f, 0.f, 0.f);
      if (active) {
        if constexpr (kVec4) {
          g = __ldg(reinterpret_cast<const float4*>(x_row + col));
        } else {
          g.x = __ldg(x_row + col);
        }
      }
      for (int64_t chunk = begin; chunk < end; chunk += kWarpSize) {
        const int64_t j = chunk + lane;
        int32_t my_dst = 0;
        float my_w = 0.0f;
        if (j < end) {
          my_dst = a.indices[j];
          my_w = EdgeWeight(a, j, seg, row_mean);
        }
        const int n = static_cast<int>(min(static_cast<int64_t>(kWarpSize), end - chunk));
        for (int k0 = 0; k0 < n; k0 += groups) {
          const int k = k0 + group;
          const int32_t d = __shfl_sync(0xffffffffu, my_dst, k);
          const float w = __shfl_sync(0xffffffffu, my_w, k);
          if (!active || k >= n) continue;
          float* dst = out_seg + static_cast<int64_t>(d) * row_stride + col;
          atomicAdd(dst, w * g.x);
          if constexpr (kVec4) {
            atomicAdd(dst + 1, w * g.y);
            atomicAdd(dst + 2, w * g.z);
            atomicAdd(dst + 3, w * g.w);
          }
        }
      }
    }
  }
}

bool CanUseVec4(const SpmmArgs& a) {
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return a.dim % 4 == 0 && aligned(a.x) && aligned(a.out);
}

// Grid: one warp per (row, segment) task, 8 warps per 256-thread block, grid-stride beyond
// kMaxGridBlocks. Warp-per-row keeps the per-row edge list in one warp (no inter-warp reduction)
// and gives 128-column tiles full 512-byte coalesced row reads with float4.
unsigned SpmmGrid(const SpmmArgs& a) { return GridFor(a.num_rows * a.segments, kWarpsPerRowBlock); }

// Lanes per edge: the smallest power of two whose lanes cover one tile of the row (dim / 4 lanes
// with float4, dim lanes otherwise), at most 32. Small dims (GAT heads of 8-64, dim 1-31) then
// keep several edges in flight per warp instead of idling lanes.
int GroupLanes(int64_t dim, bool vec4) {
  const int64_t lanes_needed = vec4 ? dim / 4 : dim;
  int g = 1;
  while (g < kWarpSize && g < lanes_needed) g *= 2;
  return g;
}

}  // namespace

Status LaunchSpmmGather(const SpmmArgs& args, cudaStream_t stream) {
  if (args.num_rows == 0 || args.dim == 0 || args.segments == 0) return Status::Ok();
  SpmmArgs a = args;
  a.group_lanes = GroupLanes(a.dim, CanUseVec4(a));
  if (CanUseVec4(a)) {
    SpmmGatherKernel<true><<<SpmmGrid(a), kRowBlockThreads, 0, stream>>>(a);
  } else {
    SpmmGatherKernel<false><<<SpmmGrid(a), kRowBlockThreads, 0, stream>>>(a);
  }
  return CheckLaunch("SpmmGatherKernel");
}

Status LaunchSpmmScatter(const SpmmArgs& args, cudaStream_t stream) {
  if (args.num_rows == 0 || args.dim == 0 || args.segments == 0) return Status::Ok();
  SpmmArgs a = args;
  a.group_lanes = GroupLanes(a.dim, CanUseVec4(a));
  if (CanUseVec4(a)) {
    SpmmScatterKernel<true><<<SpmmGrid(a), kRowBlockThreads, 0, stream>>>(a);
  } else {
    SpmmScatterKernel<false><<<SpmmGrid(a), kRowBlockThreads, 0, stream>>>(a);
  }
  return CheckLaunch("SpmmScatterKernel");
}

}  // namespace skiff::cuda::detail
