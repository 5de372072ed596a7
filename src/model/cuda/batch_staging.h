// BatchStaging: moves a sampled mini-batch's structure to the device while the previous batch
// computes.
//
// Each batch is packed -- block CSRs (augmented as the layer kind needs), seed labels, and the
// input nodes' IDs when the model gathers features itself -- into one of two pinned host slots, and
// uploaded with a single copy on a copy stream into the matching device slot. Double buffering,
// ordered by events only (kernels/cuda/stream.h describes the protocol):
//   host:        waits slot.copied   (the slot's previous upload has left the pinned buffer)
//   copy stream: waits slot.consumed (compute is done with the slot's previous batch), copies,
//                records slot.copied
//   compute:     waits slot.copied, runs the batch, then Consumed() records slot.consumed.
// So batch i+1 is packed and uploaded while batch i computes, and nothing waits on the host
// unless the device is two batches behind.
//
// Block augmentation (O(edges) on the host, while the device computes the previous batch):
//   kNone      the sampled CSR as is (GraphSAGE);
//   kSelfLoop  a self-loop d -> d first in every row (GAT, as the CPU layer builds it);
//   kGcn       the self-loop first, carrying the self weight, and every edge's weight from
//              cpu::GcnEdgeWeights, so propagation is one weighted aggregation.
//
// Thread safety: one thread at a time.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/pinned_buffer.cuh"
#include "kernels/cuda/stream.cuh"
#include "skiff/sampler/minibatch.h"
#include "skiff/status.h"
#include "src/model/cuda/device_buffer.h"

namespace skiff::cuda {

enum class BlockAugment { kNone, kSelfLoop, kGcn };

// A block of the staged batch, in device memory (valid until the slot's next use).
struct DeviceBlock {
  int64_t num_dst = 0, num_src = 0, nnz = 0;  // nnz counts added self-loops
  const int64_t* indptr = nullptr;
  const int32_t* indices = nullptr;
  const float* edge_weight = nullptr;  // kGcn only
};

struct StagedBatch {
  std::vector<DeviceBlock> blocks;     // outermost layer first
  const int32_t* labels = nullptr;     // num_seeds labels (-1: unlabelled)
  const int64_t* input_ids = nullptr;  // num_input global IDs, when asked for
  int64_t num_seeds = 0, num_input = 0;
};

class BatchStaging {
 public:
  static Result<BatchStaging> Create();

  // Packs `batch` into the next slot and queues its upload; `compute` waits for it on the device.
  Result<StagedBatch> Stage(const sampler::MiniBatch& batch, BlockAugment augment, bool input_ids,
                            cudaStream_t compute);
  // The last staged batch's device memory may be reused once `compute`'s work so far is done.
  Status Consumed(cudaStream_t compute);

 private:
  struct Slot {
    PinnedBuffer host;
    DeviceBuffer<char> device;
    CudaEvent copied, consumed;
  };
  BatchStaging() = default;
  // Bytes the packed batch takes, with every segment 256-byte aligned.
  static size_t PackedBytes(const sampler::MiniBatch& batch, BlockAugment augment, bool input_ids);
  // Writes the packed batch at `host`, and its device view as if the slot started at `device`.
  void Pack(const sampler::MiniBatch& batch, BlockAugment augment, bool input_ids, char* host,
            char* device, StagedBatch* out);

  CudaStream copy_;
  Slot slots_[2];
  int current_ = 1;                               // the slot of the last staged batch
  std::vector<float> edge_weight_, self_weight_;  // kGcn scratch
};

}  // namespace skiff::cuda
