// BatchStaging: moves a sampled mini-batch's structure to the device while the previous batch
// computes.
//
// Each batch is packed -- block CSRs (augmented as the layer kind needs), seed labels, the input
// nodes' IDs when the model gathers features itself, and the cache slots of a RowUpload -- into one
// of two pinned host slots, and uploaded with a single copy on a copy stream into the matching
// device slot. Input rows the host gives with a batch (RowUpload: every row, or those a device row
// cache misses) follow on the same stream into the device slot through a ring of two pinned chunks
// of kRowChunkBytes: the host fills one while the other is copied, so their pinned memory is a
// constant whatever the batch (pipeline::kDeviceRowChunkBytes in the memory plan), and rows cross
// PCIe from pinned memory, overlapped with the previous batch's compute. Double buffering, ordered
// by events only (kernels/cuda/stream.h describes the protocol):
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
#include <span>
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

// Input rows the host gives with a batch (its x: num_input rows of `dim` floats, host memory).
struct RowUpload {
  const float* x = nullptr;
  int64_t dim = 0;
  std::span<const int64_t> positions;    // the rows of x to upload, in this order
  std::span<const int64_t> slots;        // with a row cache: the cache slot of each uploaded row
  std::span<const int64_t> input_slots;  // with a row cache: every input's slot (num_input)
};

struct StagedBatch {
  std::vector<DeviceBlock> blocks;     // outermost layer first
  const int32_t* labels = nullptr;     // num_seeds labels (-1: unlabelled)
  const int64_t* input_ids = nullptr;  // num_input global IDs, when asked for
  int64_t num_seeds = 0, num_input = 0;
  // With a RowUpload: the uploaded rows (num_rows x dim), and the RowUpload's slots and
  // input_slots (null when it has none).
  const float* rows = nullptr;
  const int64_t* row_slots = nullptr;
  const int64_t* input_slots = nullptr;
  int64_t num_rows = 0;
};

class BatchStaging {
 public:
  // The most each of the two pinned chunks input rows are uploaded through holds (a chunk grows to
  // a quarter over the largest batch's rows up to this; pipeline::kDeviceRowChunkBytes counts
  // both).
  static constexpr size_t kRowChunkBytes = size_t{4} << 20;

  static Result<BatchStaging> Create();

  // Packs `batch` (and `rows`, when given) into the next slot and queues its upload; `compute`
  // waits for it on the device.
  Result<StagedBatch> Stage(const sampler::MiniBatch& batch, BlockAugment augment, bool input_ids,
                            cudaStream_t compute, const RowUpload* rows = nullptr);
  // The last staged batch's device memory may be reused once `compute`'s work so far is done.
  Status Consumed(cudaStream_t compute);

 private:
  struct Slot {
    PinnedBuffer host;
    DeviceBuffer<char> device;
    CudaEvent copied, consumed;
  };
  struct Chunk {
    PinnedBuffer host;
    CudaEvent copied;
  };
  BatchStaging() = default;
  // Bytes the packed batch takes in the pinned slot, with every segment 256-byte aligned; a
  // RowUpload's slot sections follow (RowSlotBytes; its rows go through the chunks).
  static size_t PackedBytes(const sampler::MiniBatch& batch, BlockAugment augment, bool input_ids);
  static size_t RowSlotBytes(const RowUpload& rows);
  // Writes the packed batch at `host`, and its device view as if the slot started at `device`.
  void Pack(const sampler::MiniBatch& batch, BlockAugment augment, bool input_ids, char* host,
            char* device, StagedBatch* out);
  // Writes the RowUpload's slot sections (RowSlotBytes' order) at `offset`, after the batch's.
  static void PackRowSlots(const RowUpload& rows, size_t offset, char* host, char* device,
                           StagedBatch* out);
  // Queues the upload of the RowUpload's rows to `device` on the copy stream, chunk by chunk.
  Status UploadRows(const RowUpload& rows, float* device);

  CudaStream copy_;
  Slot slots_[2];
  Chunk chunks_[2];
  int next_chunk_ = 0;
  int current_ = 1;                               // the slot of the last staged batch
  std::vector<float> edge_weight_, self_weight_;  // kGcn scratch
};

}  // namespace skiff::cuda
