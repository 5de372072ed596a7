// CUDA streams and events as RAII handles, and the H2D copy that overlaps compute.
//
// Overlapping copies with compute (one H2D stream, double-buffered slots):
//   gather stage: wait slot.copied (host) -> fill pinned[slot] ->
//   CopyToDevice(dev[slot], pinned[slot]) on the copy stream -> copied.Record(copy stream)
//   compute:      StreamWaitEvent(compute, copied) -> kernels -> consumed.Record(compute)
//   before the copy stream overwrites dev[slot] again: StreamWaitEvent(copy stream, consumed)
// Waiting is always on events, never on whole-device synchronisation.
//
// Thread safety: CudaStream and CudaEvent objects are not thread-safe; give each to one thread
// (events may be recorded and waited on by different streams, which CUDA itself orders).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "skiff/status.h"

namespace skiff::cuda {
// A non-blocking CUDA stream (does not synchronise with the legacy default stream). Move-only.
class CudaStream {
 public:
  static Result<CudaStream> Create();
  // The same at the device's greatest priority: its kernels are scheduled ahead of those of
  // ordinary streams as blocks free up (for short work a host thread waits on).
  static Result<CudaStream> CreateHighPriority();
  CudaStream() = default;
  CudaStream(CudaStream&& other) noexcept : stream_(other.stream_) { other.stream_ = nullptr; }
  CudaStream& operator=(CudaStream&& other) noexcept;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream();

  cudaStream_t get() const { return stream_; }
  Status Synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

// A CUDA event. Without timing it is the cheapest cross-stream dependency. Move-only.
class CudaEvent {
 public:
  static Result<CudaEvent> Create(bool timing = false);
  CudaEvent() = default;
  CudaEvent(CudaEvent&& other) noexcept : event_(other.event_) { other.event_ = nullptr; }
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent();

  cudaEvent_t get() const { return event_; }
  Status Record(cudaStream_t stream) const;
  // Blocks the host until the recorded work completes.
  Status Synchronize() const;
  // True when the recorded work has completed (never blocks).
  Result<bool> Done() const;
  // Milliseconds between two timing events (both recorded and complete).
  static Result<float> ElapsedMs(const CudaEvent& start, const CudaEvent& end);

 private:
  cudaEvent_t event_ = nullptr;
};

// Makes `stream` wait (on the device, not the host) for `event`'s recorded work.
Status StreamWaitEvent(cudaStream_t stream, const CudaEvent& event);

// Asynchronous host-to-device copy on `stream`. `src` must be pinned for the copy to be truly
// asynchronous; InvalidArgument when it is pageable (the copy would silently serialise).
Status CopyToDevice(void* dst, const void* src, size_t bytes, cudaStream_t stream);

}  // namespace skiff::cuda
