// Neighbour sampling on the device: the steps of one hop of sampler::NeighborSampler (its
// header is the specification) over a CSR held in device memory.
//
// A batch's nodes are numbered as the host sampler numbers them: seeds first, then each hop's new
// nodes in order of first appearance among the hop's picks. Every node draws its sample through
// skiff/neighbor_draw.h from its own generator, so the batch is the host sampler's bit for bit
// (tests/gpu/test_sample.cpp compares them). One hop, for destinations [0, num_dst):
//   SampleRowPtr    row_ptr: each destination's pick count (its fanout, or its whole row), summed;
//   SamplePicks     each destination's picks (global IDs) in row order, at row_ptr;
//   NumberNewPicks  which picks are the first appearance of a node not yet in the batch, and their
//                   rank among those (an exclusive sum), with the count of new nodes;
//   AssignNewIds    gives the new nodes local IDs from `base` on and appends them to `nodes`;
//   MapPicks        every pick's local ID: the block's indices.
// The ID map is two arrays over the whole graph, `local` (a node's local ID, -1 when not in the
// batch) and `first` (its first pick position during a hop, kNoFirstPick when none): O(1) per
// pick without hashing, 8 bytes per graph node. SeedLocalIds enters the seeds; ResetLocalIds
// empties both for the batch's nodes when the batch is done.
//
// Shapes are checked on the host (InvalidArgument naming the op); nothing synchronises or
// allocates. IDs: graph nodes < 2^31 (indices are int32), picks per hop < kNoFirstPick.
//
// Thread safety: stateless; usable from any host thread.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "skiff/neighbor_draw.h"
#include "skiff/status.h"

namespace skiff::cuda {

// Most blocks a device-sampled batch may have, and the longest sample a node may draw (a thread
// keeps its sample in a local array of this many positions).
inline constexpr int kMaxSampleLayers = 8;
inline constexpr int64_t kMaxDeviceSampleLength = 128;
// `first` of a node not picked during the hop (a memset byte pattern, above any pick position).
inline constexpr int32_t kNoFirstPick = 0x7f7f7f7f;
inline constexpr int kNoFirstPickByte = 0x7f;

// A graph's CSR in device memory.
struct DeviceCsr {
  int64_t num_nodes = 0;
  int64_t num_edges = 0;
  const int64_t* indptr = nullptr;   // num_nodes + 1
  const int32_t* indices = nullptr;  // num_edges, each in [0, num_nodes)
};

// One hop of one batch, as the kernels see it (passed by value).
struct HopParams {
  uint64_t draw_key = 0;               // NodeDrawKey(the batch's sampler seed)
  int num_layers = 0;                  // blocks of the batch, <= kMaxSampleLayers
  int hop = 0;                         // 0: expanding the seeds; builds block num_layers - 1 - hop
  int fanouts[kMaxSampleLayers] = {};  // per block, input layer first (-1: every neighbour)
  // hop_begin[h]: the first local ID of hop h, for h = 0 .. hop + 1; hop_begin[hop + 1] is the
  // number of destinations of this hop (every node so far).
  int64_t hop_begin[kMaxSampleLayers + 2] = {};
  SKIFF_HOST_DEVICE int64_t num_dst() const { return hop_begin[hop + 1]; }
  SKIFF_HOST_DEVICE int fanout() const { return fanouts[num_layers - 1 - hop]; }
};

// Checks `p` against kMaxSampleLayers and kMaxDeviceSampleLength (every fanout a node may have
// to draw). InvalidArgument naming what is out of range.
Status CheckHopParams(const HopParams& p);

// Device bytes of scratch SampleRowPtr needs for `num_dst` destinations.
Result<size_t> SampleRowPtrWorkspaceBytes(int64_t num_dst);
// row_ptr[0] = 0 and row_ptr[u + 1] = row_ptr[u] + the number of picks of destination u
// (nodes[u]): min(fanout, degree), or the degree with fanout -1. row_ptr has num_dst + 1 entries.
Status SampleRowPtr(const DeviceCsr& graph, const HopParams& p, const int64_t* nodes,
                    void* workspace, size_t workspace_bytes, int64_t* row_ptr, cudaStream_t stream);
// picks[row_ptr[u] .. row_ptr[u + 1]) = destination u's picks, global IDs in row order: its whole
// row, or the first `fanout` positions of its ordered sample (DrawOrderedSample of SampleLength
// positions, its first hop being the hop whose local ID range holds u), ascending.
Status SamplePicks(const DeviceCsr& graph, const HopParams& p, const int64_t* nodes,
                   const int64_t* row_ptr, int64_t* picks, cudaStream_t stream);

// Device bytes of scratch NumberNewPicks needs for `num_picks` picks.
Result<size_t> NumberNewPicksWorkspaceBytes(int64_t num_picks);
// For the hop's `num_picks` picks: is_new[i] = 1 when picks[i] is not in the batch (local < 0)
// and i is its first position among the picks, else 0; rank[i] = the sum of is_new[0 .. i); and
// *new_count (device) = the sum of all. Leaves `first` set for the new nodes.
Status NumberNewPicks(int64_t num_picks, const int64_t* picks, const int32_t* local, int32_t* first,
                      int32_t* is_new, int32_t* rank, int64_t* new_count, void* workspace,
                      size_t workspace_bytes, cudaStream_t stream);
// For each new pick i: local[picks[i]] = base + rank[i] and nodes[base + rank[i]] = picks[i].
Status AssignNewIds(int64_t num_picks, const int64_t* picks, const int32_t* is_new,
                    const int32_t* rank, int64_t base, int32_t* local, int64_t* nodes,
                    cudaStream_t stream);
// indices[i] = local[picks[i]] (every pick is in the batch by now).
Status MapPicks(int64_t num_picks, const int64_t* picks, const int32_t* local, int32_t* indices,
                cudaStream_t stream);

// local[seeds[i]] = i for the batch's `num_seeds` seeds (distinct, checked by the caller).
Status SeedLocalIds(int64_t num_seeds, const int64_t* seeds, int32_t* local, cudaStream_t stream);
// local[v] = -1 and first[v] = kNoFirstPick for each of the batch's `num_nodes` nodes.
Status ResetLocalIds(int64_t num_nodes, const int64_t* nodes, int32_t* local, int32_t* first,
                     cudaStream_t stream);

// Block augmentation on the device, the host's BatchStaging kinds kSelfLoop (GAT) and kGcn: out
// gets a self-loop d -> d first in every row, then the row's edges. With `src_degree` (the
// whole-graph degree of every source, NodeDegrees), out_weight gets the weights of
// cpu::GcnEdgeWeights with those degrees (in double, as the CPU), the self-loop's first.
// out_indptr has num_dst + 1 entries, out_indices (and out_weight) num_edges + num_dst.
Status AddSelfLoops(int64_t num_dst, const int64_t* indptr, const int32_t* indices,
                    const int64_t* src_degree, int64_t* out_indptr, int32_t* out_indices,
                    float* out_weight, cudaStream_t stream);
// degree[i] = the whole-graph degree of nodes[i], for `n` nodes (GCN's normalisation).
Status NodeDegrees(const DeviceCsr& graph, int64_t n, const int64_t* nodes, int64_t* degree,
                   cudaStream_t stream);

}  // namespace skiff::cuda
