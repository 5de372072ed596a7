#include "src/model/cuda/device_sampler.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/cuda/device.cuh"
#include "skiff/neighbor_draw.h"

namespace skiff::cuda {
namespace {

#define SKIFF_SAMPLER_CUDA(expr) SKIFF_RETURN_IF_ERROR(FromCudaError(static_cast<int>(expr), #expr))

// Room for `count` with a quarter more, so sizes settle after the first batches.
int64_t WithSlack(int64_t count) { return count + count / 4; }

// `buffer` with room for `count` elements, grown (contents dropped) to WithSlack(count) when it
// has less.
template <typename T>
Result<T*> Reserve(DeviceBuffer<T>& buffer, int64_t count, const char* what) {
  if (static_cast<int64_t>(buffer.capacity()) >= std::max<int64_t>(count, 1)) return buffer.get();
  return buffer.Ensure(WithSlack(count), what);
}

}  // namespace

uint64_t DeviceSampler::GraphDeviceBytes(int64_t num_nodes, int64_t num_edges) {
  const auto n = static_cast<uint64_t>(num_nodes), e = static_cast<uint64_t>(num_edges);
  return (n + 1) * sizeof(int64_t) + e * sizeof(int32_t) + 2 * n * sizeof(int32_t);
}

Result<std::unique_ptr<DeviceSampler>> DeviceSampler::Create(const sampler::CsrSource& csr,
                                                             uint64_t upload_bytes) {
  if (csr.num_nodes() < 0 || csr.num_nodes() >= INT32_MAX || csr.num_edges() < 0) {
    return Status::InvalidArgument("device sampling: " + csr.Describe() + " has " +
                                   std::to_string(csr.num_nodes()) +
                                   " nodes; the device sampler takes fewer than 2^31");
  }
  std::unique_ptr<DeviceSampler> s(new DeviceSampler());
  // The host waits for the sampling kernels (two counts per hop): they go ahead of the model's.
  SKIFF_ASSIGN_OR_RETURN(s->stream_, CudaStream::CreateHighPriority());
  for (Slot& slot : s->slots_) {
    SKIFF_ASSIGN_OR_RETURN(slot.sampled, CudaEvent::Create());
    SKIFF_ASSIGN_OR_RETURN(slot.consumed, CudaEvent::Create());
  }
  SKIFF_ASSIGN_OR_RETURN(s->count_host_, PinnedBuffer::Create(sizeof(int64_t)));
  SKIFF_RETURN_IF_ERROR(s->new_count_.Ensure(1, "sampling counts").status());
  SKIFF_RETURN_IF_ERROR(s->Upload(csr, upload_bytes));
  const int64_t n = csr.num_nodes();
  SKIFF_RETURN_IF_ERROR(s->local_.Ensure(n, "the sampler's ID map").status());
  SKIFF_RETURN_IF_ERROR(s->first_.Ensure(n, "the sampler's ID map").status());
  SKIFF_RETURN_IF_ERROR(s->ClearIdMap());
  return s;
}

Status DeviceSampler::ClearIdMap() {
  const auto n = static_cast<size_t>(graph_.num_nodes);
  cudaStream_t st = stream();
  SKIFF_SAMPLER_CUDA(cudaMemsetAsync(local_.get(), 0xff, sizeof(int32_t) * n, st));  // -1
  SKIFF_SAMPLER_CUDA(cudaMemsetAsync(first_.get(), kNoFirstPickByte, sizeof(int32_t) * n, st));
  return stream_.Synchronize();
}

// Through one pinned chunk of `upload_bytes`: each range is read into it, checked, (neighbours)
// narrowed to int32 in place, front to back, and copied; the next range waits for the copy.
Status DeviceSampler::Upload(const sampler::CsrSource& csr, uint64_t upload_bytes) {
  const int64_t n = csr.num_nodes(), e = csr.num_edges();
  SKIFF_ASSIGN_OR_RETURN(int64_t * indptr, indptr_.Ensure(n + 1, "the sampled graph's offsets"));
  SKIFF_ASSIGN_OR_RETURN(int32_t * indices, indices_.Ensure(e, "the sampled graph's neighbours"));
  graph_ = DeviceCsr{.num_nodes = n, .num_edges = e, .indptr = indptr, .indices = indices};
  const int64_t entries =
      std::max<int64_t>(1, static_cast<int64_t>(upload_bytes / sizeof(int64_t)));
  SKIFF_ASSIGN_OR_RETURN(PinnedBuffer chunk,
                         PinnedBuffer::Create(sizeof(int64_t) * static_cast<size_t>(entries)));
  auto* staged = static_cast<int64_t*>(chunk.data());
  cudaStream_t st = stream();
  int64_t previous = 0;
  for (int64_t at = 0; at < n + 1; at += entries) {
    const int64_t count = std::min(entries, n + 1 - at);
    SKIFF_RETURN_IF_ERROR(stream_.Synchronize());  // the chunk's previous copy is done
    SKIFF_RETURN_IF_ERROR(csr.ReadOffsets(at, count, staged));
    SKIFF_RETURN_IF_ERROR(sampler::CheckOffsetsRange(csr, at, count, staged, previous));
    previous = staged[count - 1];
    SKIFF_RETURN_IF_ERROR(CopyToDevice(indptr + at, staged, sizeof(int64_t) * count, st));
  }
  for (int64_t at = 0; at < e; at += entries) {
    const int64_t count = std::min(entries, e - at);
    SKIFF_RETURN_IF_ERROR(stream_.Synchronize());
    SKIFF_RETURN_IF_ERROR(csr.ReadNeighbors(at, count, staged));
    SKIFF_RETURN_IF_ERROR(sampler::CheckNeighborsRange(csr, at, count, staged));
    // narrow[i] overwrites bytes below staged[i + 1]: only entries already narrowed.
    auto* narrow = reinterpret_cast<int32_t*>(staged);
    for (int64_t i = 0; i < count; ++i) narrow[i] = static_cast<int32_t>(staged[i]);
    SKIFF_RETURN_IF_ERROR(CopyToDevice(indices + at, narrow, sizeof(int32_t) * count, st));
  }
  return stream_.Synchronize();
}

Result<int64_t> DeviceSampler::ReadCount(const int64_t* at) {
  SKIFF_SAMPLER_CUDA(
      cudaMemcpyAsync(count_host_.data(), at, sizeof(int64_t), cudaMemcpyDeviceToHost, stream()));
  SKIFF_RETURN_IF_ERROR(stream_.Synchronize());
  int64_t value = 0;
  std::memcpy(&value, count_host_.data(), sizeof(value));
  return value;
}

Status DeviceSampler::ReserveNodes(Slot& slot, int64_t count, int64_t keep) {
  if (static_cast<int64_t>(slot.nodes.capacity()) >= count) return Status::Ok();
  DeviceBuffer<int64_t> grown;
  SKIFF_ASSIGN_OR_RETURN(int64_t * to, Reserve(grown, count, "a sampled batch's nodes"));
  if (keep > 0) {
    SKIFF_SAMPLER_CUDA(cudaMemcpyAsync(to, slot.nodes.get(), sizeof(int64_t) * keep,
                                       cudaMemcpyDeviceToDevice, stream()));
  }
  slot.nodes = std::move(grown);  // frees the old buffer: cudaFree waits for the copy
  return Status::Ok();
}

Status DeviceSampler::Hop(HopParams* p, Slot& slot, int64_t* num_edges) {
  cudaStream_t st = stream();
  const int block = p->num_layers - 1 - p->hop;
  const int64_t num_dst = p->num_dst();
  SKIFF_ASSIGN_OR_RETURN(const size_t row_bytes, SampleRowPtrWorkspaceBytes(num_dst));
  SKIFF_ASSIGN_OR_RETURN(int64_t * row_ptr, Reserve(slot.indptr[static_cast<size_t>(block)],
                                                    num_dst + 1, "a sampled block"));
  SKIFF_ASSIGN_OR_RETURN(char* ws,
                         workspace_.Ensure(static_cast<int64_t>(row_bytes), "sampling scratch"));
  SKIFF_RETURN_IF_ERROR(
      SampleRowPtr(graph_, *p, slot.nodes.get(), ws, workspace_.capacity(), row_ptr, st));
  SKIFF_ASSIGN_OR_RETURN(const int64_t picks, ReadCount(row_ptr + num_dst));
  *num_edges = picks;
  SKIFF_ASSIGN_OR_RETURN(const size_t number_bytes, NumberNewPicksWorkspaceBytes(picks));
  SKIFF_ASSIGN_OR_RETURN(int64_t * flat, Reserve(picks_, picks, "sampling scratch"));
  SKIFF_ASSIGN_OR_RETURN(int32_t * is_new, Reserve(is_new_, picks, "sampling scratch"));
  SKIFF_ASSIGN_OR_RETURN(int32_t * rank, Reserve(rank_, picks, "sampling scratch"));
  SKIFF_ASSIGN_OR_RETURN(int32_t * indices, Reserve(slot.indices[static_cast<size_t>(block)], picks,
                                                    "a sampled block"));
  SKIFF_ASSIGN_OR_RETURN(ws,
                         workspace_.Ensure(static_cast<int64_t>(number_bytes), "sampling scratch"));
  SKIFF_RETURN_IF_ERROR(ReserveNodes(slot, num_dst + picks, num_dst));
  SKIFF_RETURN_IF_ERROR(SamplePicks(graph_, *p, slot.nodes.get(), row_ptr, flat, st));
  SKIFF_RETURN_IF_ERROR(NumberNewPicks(picks, flat, local_.get(), first_.get(), is_new, rank,
                                       new_count_.get(), ws, workspace_.capacity(), st));
  SKIFF_RETURN_IF_ERROR(
      AssignNewIds(picks, flat, is_new, rank, num_dst, local_.get(), slot.nodes.get(), st));
  SKIFF_RETURN_IF_ERROR(MapPicks(picks, flat, local_.get(), indices, st));
  SKIFF_ASSIGN_OR_RETURN(const int64_t added, ReadCount(new_count_.get()));
  p->hop_begin[p->hop + 2] = num_dst + added;
  return Status::Ok();
}

Result<DeviceSampledBatch> DeviceSampler::Sample(const int64_t* seeds, int64_t num_seeds,
                                                 const std::vector<int>& fanouts,
                                                 uint64_t sample_seed, BlockAugment augment,
                                                 cudaStream_t compute) {
  if (!map_clean_) {
    return Status::Internal(
        "device sampling: an earlier batch failed part-way and its ID map could not be cleared");
  }
  bool map_touched = false;
  Result<DeviceSampledBatch> out =
      SampleBatch(seeds, num_seeds, fanouts, sample_seed, augment, compute, &map_touched);
  // A batch that failed once its seeds were entered leaves entries in the ID map (and `first`
  // positions of picks that got no ID), which would corrupt every later batch: clear the map whole
  // (a rare path), or refuse later batches if even that fails.
  if (!out.ok() && map_touched) map_clean_ = ClearIdMap().ok();
  return out;
}

Result<DeviceSampledBatch> DeviceSampler::SampleBatch(const int64_t* seeds, int64_t num_seeds,
                                                      const std::vector<int>& fanouts,
                                                      uint64_t sample_seed, BlockAugment augment,
                                                      cudaStream_t compute, bool* map_touched) {
  const int layers = static_cast<int>(fanouts.size());
  HopParams p;
  p.draw_key = NodeDrawKey(sample_seed);
  p.num_layers = layers;
  if (layers < 1 || layers > kMaxSampleLayers) {
    return Status::InvalidArgument("device sampling: " + std::to_string(layers) +
                                   " layers, at most " + std::to_string(kMaxSampleLayers));
  }
  std::copy(fanouts.begin(), fanouts.end(), p.fanouts);
  p.hop_begin[1] = num_seeds;
  // Refused before the ID map is touched (an error after it clears the whole map: Sample).
  SKIFF_RETURN_IF_ERROR(CheckHopParams(p));
  current_ = 1 - current_;
  Slot& slot = slots_[current_];
  cudaStream_t st = stream();
  SKIFF_RETURN_IF_ERROR(StreamWaitEvent(st, slot.consumed));
  slot.indptr.resize(static_cast<size_t>(layers));
  slot.indices.resize(static_cast<size_t>(layers));
  SKIFF_RETURN_IF_ERROR(ReserveNodes(slot, num_seeds, 0));
  if (num_seeds > 0) {
    SKIFF_SAMPLER_CUDA(cudaMemcpyAsync(slot.nodes.get(), seeds, sizeof(int64_t) * num_seeds,
                                       cudaMemcpyDeviceToDevice, st));
  }
  *map_touched = true;
  SKIFF_RETURN_IF_ERROR(SeedLocalIds(num_seeds, seeds, local_.get(), st));
  p.hop_begin[0] = 0;
  p.hop_begin[1] = num_seeds;
  DeviceSampledBatch out;
  out.blocks.assign(static_cast<size_t>(layers), DeviceBlock{});
  for (p.hop = 0; p.hop < layers; ++p.hop) {
    int64_t edges = 0;
    SKIFF_RETURN_IF_ERROR(Hop(&p, slot, &edges));
    const auto block = static_cast<size_t>(layers - 1 - p.hop);
    out.blocks[block] = DeviceBlock{.num_dst = p.hop_begin[p.hop + 1],
                                    .num_src = p.hop_begin[p.hop + 2],
                                    .nnz = edges,
                                    .indptr = slot.indptr[block].get(),
                                    .indices = slot.indices[block].get()};
  }
  out.num_input = p.hop_begin[layers + 1];
  out.input_ids = slot.nodes.get();
  SKIFF_RETURN_IF_ERROR(Augment(slot, augment, &out));
  SKIFF_RETURN_IF_ERROR(
      ResetLocalIds(out.num_input, slot.nodes.get(), local_.get(), first_.get(), st));
  SKIFF_RETURN_IF_ERROR(slot.sampled.Record(st));
  SKIFF_RETURN_IF_ERROR(StreamWaitEvent(compute, slot.sampled));
  return out;
}

// GAT: a self-loop first in every row; GCN: the same, with the weights of whole-graph degrees.
Status DeviceSampler::Augment(Slot& slot, BlockAugment augment, DeviceSampledBatch* out) {
  if (augment == BlockAugment::kNone) return Status::Ok();
  cudaStream_t st = stream();
  const int64_t* degree = nullptr;
  if (augment == BlockAugment::kGcn) {
    SKIFF_ASSIGN_OR_RETURN(int64_t * d, Reserve(slot.degree, out->num_input, "degrees"));
    SKIFF_RETURN_IF_ERROR(NodeDegrees(graph_, out->num_input, out->input_ids, d, st));
    degree = d;
  }
  const size_t layers = out->blocks.size();
  slot.augmented_indptr.resize(layers);
  slot.augmented_indices.resize(layers);
  slot.weight.resize(layers);
  for (size_t l = 0; l < layers; ++l) {
    DeviceBlock& b = out->blocks[l];
    const int64_t nnz = b.nnz + b.num_dst;
    SKIFF_ASSIGN_OR_RETURN(int64_t * indptr,
                           Reserve(slot.augmented_indptr[l], b.num_dst + 1, "a sampled block"));
    SKIFF_ASSIGN_OR_RETURN(int32_t * indices,
                           Reserve(slot.augmented_indices[l], nnz, "a sampled block"));
    float* weight = nullptr;
    if (degree != nullptr) {
      SKIFF_ASSIGN_OR_RETURN(weight, Reserve(slot.weight[l], nnz, "edge weights"));
    }
    SKIFF_RETURN_IF_ERROR(
        AddSelfLoops(b.num_dst, b.indptr, b.indices, degree, indptr, indices, weight, st));
    b = DeviceBlock{.num_dst = b.num_dst,
                    .num_src = b.num_src,
                    .nnz = nnz,
                    .indptr = indptr,
                    .indices = indices,
                    .edge_weight = weight};
  }
  return Status::Ok();
}

Status DeviceSampler::Consumed(cudaStream_t compute) {
  return slots_[current_].consumed.Record(compute);
}

}  // namespace skiff::cuda
