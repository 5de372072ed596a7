#include "kernels/cuda/sample.cuh"

#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/cuda/common.cuh"
#include "skiff/neighbor_draw.h"

namespace skiff::cuda {
namespace {

constexpr int kThreads = 256;

// The hop at which local ID u first appeared (the last h <= p.hop with hop_begin[h] <= u).
__device__ int FirstHopOf(const HopParams& p, int64_t u) {
  int h = 0;
  while (h < p.hop && p.hop_begin[h + 1] <= u) ++h;
  return h;
}

__global__ void RowCountKernel(DeviceCsr g, HopParams p, const int64_t* __restrict__ nodes,
                               int64_t* __restrict__ counts) {
  const int64_t num_dst = p.num_dst();
  const int fanout = p.fanout();
  SKIFF_GRID_STRIDE(u, num_dst) {
    const int64_t v = nodes[u];
    const int64_t d = g.indptr[v + 1] - g.indptr[v];
    counts[u] = fanout < 0 || fanout >= d ? d : fanout;
  }
}

// One thread per destination: its whole row, or the first `fanout` of its ordered sample in row
// order (the host sampler's Hop, node by node).
__global__ void PicksKernel(DeviceCsr g, HopParams p, const int64_t* __restrict__ nodes,
                            const int64_t* __restrict__ row_ptr, int64_t* __restrict__ picks) {
  const int64_t num_dst = p.num_dst();
  const int fanout = p.fanout();
  SKIFF_GRID_STRIDE(u, num_dst) {
    const int64_t v = nodes[u];
    const int64_t begin = g.indptr[v];
    const int64_t d = g.indptr[v + 1] - begin;
    const int32_t* row = g.indices + begin;
    int64_t* out = picks + row_ptr[u];
    if (fanout < 0 || fanout >= d) {
      for (int64_t j = 0; j < d; ++j) out[j] = row[j];
      continue;
    }
    if (fanout == 0) continue;
    const int64_t k = SampleLength(p.fanouts, p.num_layers, FirstHopOf(p, u), d);
    int64_t positions[kMaxDeviceSampleLength];
    NodeDrawRng rng = NodeDrawRngFor(p.draw_key, v);
    DrawOrderedSample(d, k, rng, positions);
    if (d <= kMaskPositions) {
      MaskSortPositions(fanout, positions);
    } else {
      for (int64_t i = 1; i < fanout; ++i) {  // insertion sort: fanout is small
        const int64_t x = positions[i];
        int64_t j = i;
        for (; j > 0 && positions[j - 1] > x; --j) positions[j] = positions[j - 1];
        positions[j] = x;
      }
    }
    for (int64_t j = 0; j < fanout; ++j) out[j] = row[positions[j]];
  }
}

__global__ void FirstPickKernel(int64_t n, const int64_t* __restrict__ picks,
                                const int32_t* __restrict__ local, int32_t* __restrict__ first) {
  SKIFF_GRID_STRIDE(i, n) {
    const int64_t v = picks[i];
    if (local[v] < 0) atomicMin(first + v, static_cast<int32_t>(i));
  }
}

__global__ void IsNewKernel(int64_t n, const int64_t* __restrict__ picks,
                            const int32_t* __restrict__ local, const int32_t* __restrict__ first,
                            int32_t* __restrict__ is_new) {
  SKIFF_GRID_STRIDE(i, n) {
    const int64_t v = picks[i];
    is_new[i] = local[v] < 0 && first[v] == static_cast<int32_t>(i) ? 1 : 0;
  }
}

__global__ void NewCountKernel(int64_t n, const int32_t* __restrict__ is_new,
                               const int32_t* __restrict__ rank, int64_t* __restrict__ count) {
  *count = n > 0 ? static_cast<int64_t>(rank[n - 1]) + is_new[n - 1] : 0;
}

__global__ void AssignKernel(int64_t n, const int64_t* __restrict__ picks,
                             const int32_t* __restrict__ is_new, const int32_t* __restrict__ rank,
                             int64_t base, int32_t* __restrict__ local,
                             int64_t* __restrict__ nodes) {
  SKIFF_GRID_STRIDE(i, n) {
    if (is_new[i] == 0) continue;
    const int64_t id = base + rank[i];
    local[picks[i]] = static_cast<int32_t>(id);
    nodes[id] = picks[i];
  }
}

__global__ void MapKernel(int64_t n, const int64_t* __restrict__ picks,
                          const int32_t* __restrict__ local, int32_t* __restrict__ indices) {
  SKIFF_GRID_STRIDE(i, n) { indices[i] = local[picks[i]]; }
}

__global__ void SeedKernel(int64_t n, const int64_t* __restrict__ seeds,
                           int32_t* __restrict__ local) {
  SKIFF_GRID_STRIDE(i, n) { local[seeds[i]] = static_cast<int32_t>(i); }
}

__global__ void ResetKernel(int64_t n, const int64_t* __restrict__ nodes,
                            int32_t* __restrict__ local, int32_t* __restrict__ first) {
  SKIFF_GRID_STRIDE(i, n) {
    local[nodes[i]] = -1;
    first[nodes[i]] = kNoFirstPick;
  }
}

__global__ void SelfLoopIndptrKernel(int64_t num_dst, const int64_t* __restrict__ indptr,
                                     int64_t* __restrict__ out_indptr) {
  SKIFF_GRID_STRIDE(d, num_dst + 1) { out_indptr[d] = indptr[d] + d; }
}

__global__ void SelfLoopRowsKernel(int64_t num_dst, const int64_t* __restrict__ indptr,
                                   const int32_t* __restrict__ indices,
                                   const int64_t* __restrict__ src_degree,
                                   int32_t* __restrict__ out_indices,
                                   float* __restrict__ out_weight) {
  SKIFF_GRID_STRIDE(d, num_dst) {
    const int64_t begin = indptr[d], end = indptr[d + 1];
    const int64_t at = begin + d;
    out_indices[at] = static_cast<int32_t>(d);
    for (int64_t e = begin; e < end; ++e) out_indices[at + 1 + e - begin] = indices[e];
    if (src_degree == nullptr) continue;
    const int64_t sampled = end - begin;
    const double degree = static_cast<double>(src_degree[d]);
    out_weight[at] = static_cast<float>(1.0 / (degree + 1.0));
    const double scale = sampled > 0 ? degree / static_cast<double>(sampled) : 0.0;
    for (int64_t e = begin; e < end; ++e) {
      const double neighbour = static_cast<double>(src_degree[indices[e]]);
      out_weight[at + 1 + e - begin] =
          static_cast<float>(scale / sqrt((degree + 1.0) * (neighbour + 1.0)));
    }
  }
}

__global__ void DegreeKernel(DeviceCsr g, int64_t n, const int64_t* __restrict__ nodes,
                             int64_t* __restrict__ degree) {
  SKIFF_GRID_STRIDE(i, n) {
    const int64_t v = nodes[i];
    degree[i] = g.indptr[v + 1] - g.indptr[v];
  }
}

unsigned Grid(int64_t n) { return GridFor(n, kThreads); }

Status Invalid(const char* op, const std::string& what) {
  return Status::InvalidArgument(std::string(op) + ": " + what);
}

Status CheckGraph(const char* op, const DeviceCsr& g) {
  if (g.num_nodes < 0 || g.num_nodes > INT32_MAX || g.num_edges < 0) {
    return Invalid(op, "graph of " + std::to_string(g.num_nodes) + " nodes and " +
                           std::to_string(g.num_edges) + " edges (nodes must be < 2^31)");
  }
  if (g.indptr == nullptr || (g.num_edges > 0 && g.indices == nullptr)) {
    return Invalid(op, "graph arrays are null");
  }
  return Status::Ok();
}

Status CheckPicks(const char* op, int64_t n) {
  if (n < 0 || n >= kNoFirstPick) {
    return Invalid(op,
                   std::to_string(n) + " picks, outside [0, " + std::to_string(kNoFirstPick) + ")");
  }
  return Status::Ok();
}

}  // namespace

Status CheckHopParams(const HopParams& p) {
  if (p.num_layers < 1 || p.num_layers > kMaxSampleLayers || p.hop < 0 || p.hop >= p.num_layers) {
    return Status::InvalidArgument("device sampling: hop " + std::to_string(p.hop) + " of " +
                                   std::to_string(p.num_layers) + " layers (at most " +
                                   std::to_string(kMaxSampleLayers) + ")");
  }
  for (int l = 0; l < p.num_layers; ++l) {
    if (p.fanouts[l] < -1 || p.fanouts[l] > kMaxDeviceSampleLength) {
      return Status::InvalidArgument("device sampling: fanout " + std::to_string(p.fanouts[l]) +
                                     " of layer " + std::to_string(l) + " is outside [-1, " +
                                     std::to_string(kMaxDeviceSampleLength) + "]");
    }
  }
  for (int h = 0; h <= p.hop; ++h) {
    if (p.hop_begin[h] < 0 || p.hop_begin[h] > p.hop_begin[h + 1]) {
      return Status::InvalidArgument("device sampling: hop boundaries decrease at hop " +
                                     std::to_string(h));
    }
  }
  if (p.hop_begin[p.hop + 1] > INT32_MAX) {
    return Status::InvalidArgument("device sampling: a batch of over 2^31 nodes");
  }
  return Status::Ok();
}

Result<size_t> SampleRowPtrWorkspaceBytes(int64_t num_dst) {
  if (num_dst < 0 || num_dst > INT32_MAX) {
    return Status::InvalidArgument("SampleRowPtr: " + std::to_string(num_dst) + " destinations");
  }
  size_t bytes = 0;
  SKIFF_CUDA_RETURN_IF_ERROR(cub::DeviceScan::InclusiveSum(
      nullptr, bytes, static_cast<int64_t*>(nullptr), static_cast<int64_t*>(nullptr),
      static_cast<int>(std::max<int64_t>(num_dst, 1))));
  // the pick counts + cub's scratch
  return AlignUp(sizeof(int64_t) * static_cast<size_t>(num_dst)) + AlignUp(bytes);
}

Status SampleRowPtr(const DeviceCsr& graph, const HopParams& p, const int64_t* nodes,
                    void* workspace, size_t workspace_bytes, int64_t* row_ptr,
                    cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckGraph("SampleRowPtr", graph));
  SKIFF_RETURN_IF_ERROR(CheckHopParams(p));
  const int64_t num_dst = p.num_dst();
  if (row_ptr == nullptr || (num_dst > 0 && nodes == nullptr)) {
    return Invalid("SampleRowPtr", "null nodes or row_ptr");
  }
  SKIFF_ASSIGN_OR_RETURN(const size_t needed, SampleRowPtrWorkspaceBytes(num_dst));
  if (workspace_bytes < needed) {
    return Invalid("SampleRowPtr", "workspace of " + std::to_string(workspace_bytes) +
                                       " bytes, needs " + std::to_string(needed));
  }
  SKIFF_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(row_ptr, 0, sizeof(int64_t), stream));
  if (num_dst == 0) return Status::Ok();
  auto* counts = static_cast<int64_t*>(workspace);
  const size_t counts_bytes = AlignUp(sizeof(int64_t) * static_cast<size_t>(num_dst));
  RowCountKernel<<<Grid(num_dst), kThreads, 0, stream>>>(graph, p, nodes, counts);
  SKIFF_RETURN_IF_ERROR(CheckLaunch("RowCountKernel"));
  size_t bytes = workspace_bytes - counts_bytes;
  SKIFF_CUDA_RETURN_IF_ERROR(
      cub::DeviceScan::InclusiveSum(static_cast<char*>(workspace) + counts_bytes, bytes, counts,
                                    row_ptr + 1, static_cast<int>(num_dst), stream));
  return Status::Ok();
}

Status SamplePicks(const DeviceCsr& graph, const HopParams& p, const int64_t* nodes,
                   const int64_t* row_ptr, int64_t* picks, cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckGraph("SamplePicks", graph));
  SKIFF_RETURN_IF_ERROR(CheckHopParams(p));
  const int64_t num_dst = p.num_dst();
  if (num_dst == 0) return Status::Ok();
  if (nodes == nullptr || row_ptr == nullptr || picks == nullptr) {
    return Invalid("SamplePicks", "null nodes, row_ptr or picks");
  }
  PicksKernel<<<Grid(num_dst), kThreads, 0, stream>>>(graph, p, nodes, row_ptr, picks);
  return CheckLaunch("PicksKernel");
}

Result<size_t> NumberNewPicksWorkspaceBytes(int64_t num_picks) {
  SKIFF_RETURN_IF_ERROR(CheckPicks("NumberNewPicks", num_picks));
  size_t bytes = 0;
  SKIFF_CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(
      nullptr, bytes, static_cast<int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
      static_cast<int>(std::max<int64_t>(num_picks, 1))));
  return AlignUp(bytes);
}

Status NumberNewPicks(int64_t num_picks, const int64_t* picks, const int32_t* local, int32_t* first,
                      int32_t* is_new, int32_t* rank, int64_t* new_count, void* workspace,
                      size_t workspace_bytes, cudaStream_t stream) {
  SKIFF_ASSIGN_OR_RETURN(const size_t needed, NumberNewPicksWorkspaceBytes(num_picks));
  if (new_count == nullptr ||
      (num_picks > 0 && (picks == nullptr || local == nullptr || first == nullptr ||
                         is_new == nullptr || rank == nullptr))) {
    return Invalid("NumberNewPicks", "a null array");
  }
  if (workspace_bytes < needed) {
    return Invalid("NumberNewPicks", "workspace of " + std::to_string(workspace_bytes) +
                                         " bytes, needs " + std::to_string(needed));
  }
  if (num_picks > 0) {
    FirstPickKernel<<<Grid(num_picks), kThreads, 0, stream>>>(num_picks, picks, local, first);
    SKIFF_RETURN_IF_ERROR(CheckLaunch("FirstPickKernel"));
    IsNewKernel<<<Grid(num_picks), kThreads, 0, stream>>>(num_picks, picks, local, first, is_new);
    SKIFF_RETURN_IF_ERROR(CheckLaunch("IsNewKernel"));
    size_t bytes = workspace_bytes;
    SKIFF_CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(workspace, bytes, is_new, rank,
                                                             static_cast<int>(num_picks), stream));
  }
  NewCountKernel<<<1, 1, 0, stream>>>(num_picks, is_new, rank, new_count);
  return CheckLaunch("NewCountKernel");
}

Status AssignNewIds(int64_t num_picks, const int64_t* picks, const int32_t* is_new,
                    const int32_t* rank, int64_t base, int32_t* local, int64_t* nodes,
                    cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckPicks("AssignNewIds", num_picks));
  if (base < 0 || base + num_picks > INT32_MAX) {
    return Invalid("AssignNewIds", "base " + std::to_string(base) + " with " +
                                       std::to_string(num_picks) + " picks exceeds 2^31 nodes");
  }
  if (num_picks == 0) return Status::Ok();
  if (picks == nullptr || is_new == nullptr || rank == nullptr || local == nullptr ||
      nodes == nullptr) {
    return Invalid("AssignNewIds", "a null array");
  }
  AssignKernel<<<Grid(num_picks), kThreads, 0, stream>>>(num_picks, picks, is_new, rank, base,
                                                         local, nodes);
  return CheckLaunch("AssignKernel");
}

Status MapPicks(int64_t num_picks, const int64_t* picks, const int32_t* local, int32_t* indices,
                cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckPicks("MapPicks", num_picks));
  if (num_picks == 0) return Status::Ok();
  if (picks == nullptr || local == nullptr || indices == nullptr) {
    return Invalid("MapPicks", "a null array");
  }
  MapKernel<<<Grid(num_picks), kThreads, 0, stream>>>(num_picks, picks, local, indices);
  return CheckLaunch("MapKernel");
}

Status SeedLocalIds(int64_t num_seeds, const int64_t* seeds, int32_t* local, cudaStream_t stream) {
  if (num_seeds < 0 || num_seeds > INT32_MAX) {
    return Invalid("SeedLocalIds", std::to_string(num_seeds) + " seeds");
  }
  if (num_seeds == 0) return Status::Ok();
  if (seeds == nullptr || local == nullptr) return Invalid("SeedLocalIds", "a null array");
  SeedKernel<<<Grid(num_seeds), kThreads, 0, stream>>>(num_seeds, seeds, local);
  return CheckLaunch("SeedKernel");
}

Status ResetLocalIds(int64_t num_nodes, const int64_t* nodes, int32_t* local, int32_t* first,
                     cudaStream_t stream) {
  if (num_nodes < 0) return Invalid("ResetLocalIds", std::to_string(num_nodes) + " nodes");
  if (num_nodes == 0) return Status::Ok();
  if (nodes == nullptr || local == nullptr || first == nullptr) {
    return Invalid("ResetLocalIds", "a null array");
  }
  ResetKernel<<<Grid(num_nodes), kThreads, 0, stream>>>(num_nodes, nodes, local, first);
  return CheckLaunch("ResetKernel");
}

Status AddSelfLoops(int64_t num_dst, const int64_t* indptr, const int32_t* indices,
                    const int64_t* src_degree, int64_t* out_indptr, int32_t* out_indices,
                    float* out_weight, cudaStream_t stream) {
  if (num_dst < 0) return Invalid("AddSelfLoops", std::to_string(num_dst) + " destinations");
  if (indptr == nullptr || out_indptr == nullptr) {
    return Invalid("AddSelfLoops", "null indptr or out_indptr");
  }
  if (src_degree != nullptr && out_weight == nullptr) {
    return Invalid("AddSelfLoops", "src_degree given without out_weight");
  }
  SelfLoopIndptrKernel<<<Grid(num_dst + 1), kThreads, 0, stream>>>(num_dst, indptr, out_indptr);
  SKIFF_RETURN_IF_ERROR(CheckLaunch("SelfLoopIndptrKernel"));
  if (num_dst == 0) return Status::Ok();
  if (out_indices == nullptr) return Invalid("AddSelfLoops", "null out_indices");
  SelfLoopRowsKernel<<<Grid(num_dst), kThreads, 0, stream>>>(num_dst, indptr, indices, src_degree,
                                                             out_indices, out_weight);
  return CheckLaunch("SelfLoopRowsKernel");
}

Status NodeDegrees(const DeviceCsr& graph, int64_t n, const int64_t* nodes, int64_t* degree,
                   cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckGraph("NodeDegrees", graph));
  if (n < 0) return Invalid("NodeDegrees", std::to_string(n) + " nodes");
  if (n == 0) return Status::Ok();
  if (nodes == nullptr || degree == nullptr) return Invalid("NodeDegrees", "a null array");
  DegreeKernel<<<Grid(n), kThreads, 0, stream>>>(graph, n, nodes, degree);
  return CheckLaunch("DegreeKernel");
}

}  // namespace skiff::cuda
