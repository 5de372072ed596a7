// DeviceSampler: the host sampler's batches (sampler::NeighborSampler), sampled on the device from
// a CSR held in device memory, so that a batch's structure never crosses PCIe and no host thread
// samples.
//
// The graph is uploaded once (Create), through one pinned chunk, and checked as it passes
// (sampler::CsrSource). Device memory: the CSR as int64 offsets and int32 neighbours, and the ID
// map kernels/cuda/sample.cuh describes (8 bytes per node): GraphDeviceBytes.
//
// Sample() runs the hops of kernels/cuda/sample.cuh on the sampler's own stream. The host reads
// back two counts per hop (the hop's picks and its new nodes, which size the next launches), so
// the calling thread waits for the sampling kernels -- not for the model's compute, which runs on
// another stream: while batch i+1 is sampled, batch i computes (the sampler's stream has the
// device's greatest priority, so its short kernels are not queued behind the model's). Outputs
// alternate between two slots, ordered by events as BatchStaging's (the sampler waits for a slot's
// previous batch to be consumed before writing it; compute waits for `sampled`).
//
// Errors: a CUDA failure is returned as the Status of the call (the device context is then
// unusable, as everywhere); a refused argument leaves the sampler as it was, and a batch refused
// part-way (a hop over the pick limit, memory for a larger batch) clears the ID map it had begun
// to fill, so the next batch is sampled as if it had not been tried.
//
// Thread safety: one thread at a time. Owned through unique_ptr (not movable: its streams and
// events are referenced by work in flight).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cuda/pinned_buffer.cuh"
#include "kernels/cuda/sample.cuh"
#include "kernels/cuda/stream.cuh"
#include "skiff/sampler/csr_source.h"
#include "skiff/status.h"
#include "src/model/cuda/batch_staging.h"
#include "src/model/cuda/device_buffer.h"

namespace skiff::cuda {

// A batch sampled on the device (valid until its slot's next use).
struct DeviceSampledBatch {
  std::vector<DeviceBlock> blocks;  // outermost layer first, augmented as asked
  const int64_t* input_ids = nullptr;
  int64_t num_input = 0;
};

class DeviceSampler {
 public:
  // Device bytes the graph and the ID map take.
  static uint64_t GraphDeviceBytes(int64_t num_nodes, int64_t num_edges);
  // Uploads `csr` through a pinned chunk of `upload_bytes` (the only host memory it takes;
  // Corruption naming the entry when the graph is inconsistent; InvalidArgument when it has 2^31
  // nodes or more).
  static Result<std::unique_ptr<DeviceSampler>> Create(const sampler::CsrSource& csr,
                                                       uint64_t upload_bytes);

  DeviceSampler(const DeviceSampler&) = delete;
  DeviceSampler& operator=(const DeviceSampler&) = delete;

  int64_t num_nodes() const { return graph_.num_nodes; }
  cudaStream_t stream() const { return stream_.get(); }

  // Samples the batch of `num_seeds` seeds at `seeds` (device memory; distinct node IDs, checked
  // by the caller; work already queued on stream() may write them) with `fanouts` (input layer
  // first) and the sampler seed `sample_seed`, exactly as NeighborSampler(graph, fanouts,
  // record_degrees = augment == kGcn).Sample(seeds, sample_seed) does, then augments every block
  // as BatchStaging would. `compute` waits for the result.
  Result<DeviceSampledBatch> Sample(const int64_t* seeds, int64_t num_seeds,
                                    const std::vector<int>& fanouts, uint64_t sample_seed,
                                    BlockAugment augment, cudaStream_t compute);
  // The last sampled batch's slot may be reused once `compute`'s work so far is done.
  Status Consumed(cudaStream_t compute);

 private:
  struct Slot {
    DeviceBuffer<int64_t> nodes, degree;
    std::vector<DeviceBuffer<int64_t>> indptr, augmented_indptr;
    std::vector<DeviceBuffer<int32_t>> indices, augmented_indices;
    std::vector<DeviceBuffer<float>> weight;
    CudaEvent sampled, consumed;
  };
  DeviceSampler() = default;
  Status Upload(const sampler::CsrSource& csr, uint64_t upload_bytes);
  // Sample's work; sets *map_touched once the ID map holds entries of this batch.
  Result<DeviceSampledBatch> SampleBatch(const int64_t* seeds, int64_t num_seeds,
                                         const std::vector<int>& fanouts, uint64_t sample_seed,
                                         BlockAugment augment, cudaStream_t compute,
                                         bool* map_touched);
  // Every node unmapped (local -1, first kNoFirstPick); waits for the sampler's stream.
  Status ClearIdMap();
  // One hop: block num_layers - 1 - hop of `slot`, its new nodes appended; advances p->hop_begin.
  Status Hop(HopParams* p, Slot& slot, int64_t* num_edges);
  // Copies the device count at `at` to the host (waits for the sampler's stream).
  Result<int64_t> ReadCount(const int64_t* at);
  // Grows slot.nodes to hold `count` nodes, keeping the first `keep`.
  Status ReserveNodes(Slot& slot, int64_t count, int64_t keep);
  Status Augment(Slot& slot, BlockAugment augment, DeviceSampledBatch* out);

  CudaStream stream_;
  DeviceBuffer<int64_t> indptr_;
  DeviceBuffer<int32_t> indices_;
  DeviceCsr graph_;
  DeviceBuffer<int32_t> local_, first_;  // the ID map (sample.cuh)
  bool map_clean_ = true;                // false: a failed batch's entries could not be cleared
  DeviceBuffer<int64_t> picks_, new_count_;
  DeviceBuffer<int32_t> is_new_, rank_;
  DeviceBuffer<char> workspace_;
  PinnedBuffer count_host_;
  Slot slots_[2];
  int current_ = 1;  // the slot of the last sampled batch
};

}  // namespace skiff::cuda
