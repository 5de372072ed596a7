#include "src/model/cuda/batch_staging.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/csr_aggregate.h"

namespace skiff::cuda {
namespace {

constexpr size_t kAlign = 256;  // every segment starts on a 256-byte boundary (coalesced loads)

size_t Aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Hands out consecutive aligned segments of a packed batch.
class Cursor {
 public:
  size_t Take(size_t bytes) {
    const size_t at = offset_;
    offset_ += Aligned(bytes);
    return at;
  }
  size_t offset() const { return offset_; }

 private:
  size_t offset_ = 0;
};

}  // namespace

Result<BatchStaging> BatchStaging::Create() {
  BatchStaging s;
  SKIFF_ASSIGN_OR_RETURN(s.copy_, CudaStream::Create());
  for (Slot& slot : s.slots_) {
    SKIFF_ASSIGN_OR_RETURN(slot.copied, CudaEvent::Create());
    SKIFF_ASSIGN_OR_RETURN(slot.consumed, CudaEvent::Create());
  }
  for (Chunk& chunk : s.chunks_) {
    SKIFF_ASSIGN_OR_RETURN(chunk.copied, CudaEvent::Create());
  }
  return s;
}

size_t BatchStaging::PackedBytes(const sampler::MiniBatch& batch, BlockAugment augment,
                                 bool input_ids) {
  Cursor c;
  for (const sampler::Block& b : batch.blocks) {
    const auto loops = static_cast<size_t>(augment == BlockAugment::kNone ? 0 : b.num_dst);
    const size_t nnz = static_cast<size_t>(b.num_edges()) + loops;
    c.Take(sizeof(int64_t) * static_cast<size_t>(b.num_dst + 1));
    c.Take(sizeof(int32_t) * nnz);
    if (augment == BlockAugment::kGcn) c.Take(sizeof(float) * nnz);
  }
  c.Take(sizeof(int32_t) * batch.seeds.size());
  if (input_ids) c.Take(sizeof(int64_t) * batch.input_nodes.size());
  return c.offset();
}

size_t BatchStaging::RowSlotBytes(const RowUpload& rows) {
  return Aligned(sizeof(int64_t) * rows.slots.size()) +
         Aligned(sizeof(int64_t) * rows.input_slots.size());
}

void BatchStaging::PackRowSlots(const RowUpload& rows, size_t offset, char* host, char* device,
                                StagedBatch* out) {
  Cursor c;
  c.Take(offset);  // the batch's sections (aligned)
  const size_t slots = c.Take(sizeof(int64_t) * rows.slots.size());
  const size_t input_slots = c.Take(sizeof(int64_t) * rows.input_slots.size());
  out->row_slots = nullptr;
  out->input_slots = nullptr;
  if (!rows.slots.empty()) {
    std::memcpy(host + slots, rows.slots.data(), sizeof(int64_t) * rows.slots.size());
    out->row_slots = reinterpret_cast<const int64_t*>(device + slots);
  }
  if (!rows.input_slots.empty()) {
    std::memcpy(host + input_slots, rows.input_slots.data(),
                sizeof(int64_t) * rows.input_slots.size());
    out->input_slots = reinterpret_cast<const int64_t*>(device + input_slots);
  }
}

Status BatchStaging::UploadRows(const RowUpload& rows, float* device) {
  const auto dim = static_cast<size_t>(rows.dim);
  const size_t row_bytes = sizeof(float) * dim;
  if (dim == 0 || rows.positions.empty()) return Status::Ok();
  const size_t per_chunk = std::max<size_t>(1, kRowChunkBytes / row_bytes);
  for (size_t first = 0; first < rows.positions.size(); first += per_chunk) {
    const size_t n = std::min(per_chunk, rows.positions.size() - first);
    Chunk& chunk = chunks_[next_chunk_];
    next_chunk_ = 1 - next_chunk_;
    // The chunk's previous copy must have left it before it is refilled.
    SKIFF_RETURN_IF_ERROR(chunk.copied.Synchronize());
    if (chunk.host.size_bytes() < n * row_bytes) {  // grown by a quarter, up to a whole chunk
      chunk.host = PinnedBuffer();
      SKIFF_ASSIGN_OR_RETURN(chunk.host,
                             PinnedBuffer::Create(std::min(per_chunk, n + n / 4) * row_bytes));
    }
    auto* packed = static_cast<float*>(chunk.host.data());
    for (size_t k = 0; k < n; ++k) {
      std::memcpy(packed + k * dim, rows.x + static_cast<size_t>(rows.positions[first + k]) * dim,
                  row_bytes);
    }
    SKIFF_RETURN_IF_ERROR(CopyToDevice(device + first * dim, packed, n * row_bytes, copy_.get()));
    SKIFF_RETURN_IF_ERROR(chunk.copied.Record(copy_.get()));
  }
  return Status::Ok();
}

void BatchStaging::Pack(const sampler::MiniBatch& batch, BlockAugment augment, bool input_ids,
                        char* host, char* device, StagedBatch* out) {
  Cursor c;
  out->blocks.assign(batch.blocks.size(), DeviceBlock{});
  for (size_t l = 0; l < batch.blocks.size(); ++l) {
    const sampler::Block& b = batch.blocks[l];
    DeviceBlock& db = out->blocks[l];
    db.num_dst = b.num_dst;
    db.num_src = b.num_src;
    const int64_t loops = augment == BlockAugment::kNone ? 0 : b.num_dst;
    db.nnz = b.num_edges() + loops;
    const size_t ip = c.Take(sizeof(int64_t) * static_cast<size_t>(b.num_dst + 1));
    const size_t ix = c.Take(sizeof(int32_t) * static_cast<size_t>(db.nnz));
    auto* indptr = reinterpret_cast<int64_t*>(host + ip);
    auto* indices = reinterpret_cast<int32_t*>(host + ix);
    db.indptr = reinterpret_cast<const int64_t*>(device + ip);
    db.indices = reinterpret_cast<const int32_t*>(device + ix);
    if (augment == BlockAugment::kNone) {
      std::memcpy(indptr, b.indptr.data(), sizeof(int64_t) * b.indptr.size());
      std::memcpy(indices, b.indices.data(), sizeof(int32_t) * b.indices.size());
      continue;
    }
    float* weight = nullptr;
    if (augment == BlockAugment::kGcn) {
      const size_t w = c.Take(sizeof(float) * static_cast<size_t>(db.nnz));
      weight = reinterpret_cast<float*>(host + w);
      db.edge_weight = reinterpret_cast<const float*>(device + w);
      edge_weight_.resize(b.indices.size());
      self_weight_.resize(static_cast<size_t>(b.num_dst));
      cpu::GcnEdgeWeights(b.num_dst, b.num_src, b.indptr.data(), b.indices.data(),
                          b.src_degree_or_null(), edge_weight_.data(), self_weight_.data());
    }
    int64_t pos = 0;
    indptr[0] = 0;
    for (int64_t d = 0; d < b.num_dst; ++d) {
      if (weight != nullptr) weight[pos] = self_weight_[static_cast<size_t>(d)];
      indices[pos++] = static_cast<int32_t>(d);
      for (int64_t e = b.indptr[static_cast<size_t>(d)]; e < b.indptr[static_cast<size_t>(d + 1)];
           ++e) {
        if (weight != nullptr) weight[pos] = edge_weight_[static_cast<size_t>(e)];
        indices[pos++] = b.indices[static_cast<size_t>(e)];
      }
      indptr[d + 1] = pos;
    }
  }
  const size_t lb = c.Take(sizeof(int32_t) * batch.seeds.size());
  auto* labels = reinterpret_cast<int32_t*>(host + lb);
  if (batch.labels.size() == batch.seeds.size()) {
    std::memcpy(labels, batch.labels.data(), sizeof(int32_t) * batch.labels.size());
  } else {
    std::fill(labels, labels + batch.seeds.size(), -1);
  }
  out->labels = reinterpret_cast<const int32_t*>(device + lb);
  out->num_seeds = static_cast<int64_t>(batch.seeds.size());
  out->num_input = static_cast<int64_t>(batch.input_nodes.size());
  out->input_ids = nullptr;
  if (input_ids) {
    const size_t id = c.Take(sizeof(int64_t) * batch.input_nodes.size());
    std::memcpy(host + id, batch.input_nodes.data(), sizeof(int64_t) * batch.input_nodes.size());
    out->input_ids = reinterpret_cast<const int64_t*>(device + id);
  }
}

Result<StagedBatch> BatchStaging::Stage(const sampler::MiniBatch& batch, BlockAugment augment,
                                        bool input_ids, cudaStream_t compute,
                                        const RowUpload* rows) {
  current_ = 1 - current_;
  Slot& slot = slots_[current_];
  // The slot's previous upload must have left the pinned buffer before it is overwritten.
  SKIFF_RETURN_IF_ERROR(slot.copied.Synchronize());
  const size_t batch_bytes = PackedBytes(batch, augment, input_ids);
  const size_t bytes = batch_bytes + (rows != nullptr ? RowSlotBytes(*rows) : 0);
  const size_t row_bytes =
      rows == nullptr ? 0 : sizeof(float) * rows->positions.size() * static_cast<size_t>(rows->dim);
  if (slot.host.size_bytes() < bytes) {
    slot.host = PinnedBuffer();
    SKIFF_ASSIGN_OR_RETURN(slot.host, PinnedBuffer::Create(bytes + bytes / 4));
  }
  // The device slot also holds the rows, after the packed sections. Growing frees device memory
  // the slot's previous batch may still read: cudaFree waits for it.
  const size_t needed = bytes + row_bytes;
  const size_t device_bytes = slot.device.capacity() >= needed ? needed : needed + needed / 4;
  SKIFF_ASSIGN_OR_RETURN(char* device,
                         slot.device.Ensure(static_cast<int64_t>(device_bytes), "a staged batch"));
  StagedBatch out;
  char* host = static_cast<char*>(slot.host.data());
  Pack(batch, augment, input_ids, host, device, &out);
  if (rows != nullptr) PackRowSlots(*rows, batch_bytes, host, device, &out);
  SKIFF_RETURN_IF_ERROR(StreamWaitEvent(copy_.get(), slot.consumed));
  SKIFF_RETURN_IF_ERROR(CopyToDevice(device, slot.host.data(), bytes, copy_.get()));
  Status uploaded;
  if (rows != nullptr) {
    auto* device_rows = reinterpret_cast<float*>(device + bytes);  // bytes is 256-aligned
    uploaded = UploadRows(*rows, device_rows);
    out.rows = device_rows;
    out.num_rows = static_cast<int64_t>(rows->positions.size());
  }
  // Recorded after a failed upload too: the slot's next use waits for what was queued from it.
  SKIFF_RETURN_IF_ERROR(slot.copied.Record(copy_.get()));
  SKIFF_RETURN_IF_ERROR(uploaded);
  SKIFF_RETURN_IF_ERROR(StreamWaitEvent(compute, slot.copied));
  return out;
}

Status BatchStaging::Consumed(cudaStream_t compute) {
  return slots_[current_].consumed.Record(compute);
}

}  // namespace skiff::cuda
