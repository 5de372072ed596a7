#include "kernels/cuda/stream.cuh"

#include <string>
#include <utility>

#include "kernels/cuda/common.cuh"

namespace skiff::cuda {
// --- CudaStream / CudaEvent ------------------------------------------------------------------

Result<CudaStream> CudaStream::Create() {
  CudaStream s;
  SKIFF_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s.stream_, cudaStreamNonBlocking));
  return s;
}

Result<CudaStream> CudaStream::CreateHighPriority() {
  int least = 0, greatest = 0;
  SKIFF_CUDA_RETURN_IF_ERROR(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  CudaStream s;
  SKIFF_CUDA_RETURN_IF_ERROR(
      cudaStreamCreateWithPriority(&s.stream_, cudaStreamNonBlocking, greatest));
  return s;
}

CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
  if (this != &other) {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

CudaStream::~CudaStream() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

Status CudaStream::Synchronize() const {
  return FromCudaError(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

Result<CudaEvent> CudaEvent::Create(bool timing) {
  CudaEvent e;
  SKIFF_CUDA_RETURN_IF_ERROR(
      cudaEventCreateWithFlags(&e.event_, timing ? cudaEventDefault : cudaEventDisableTiming));
  return e;
}

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) cudaEventDestroy(event_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

CudaEvent::~CudaEvent() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}

Status CudaEvent::Record(cudaStream_t stream) const {
  return FromCudaError(cudaEventRecord(event_, stream), "cudaEventRecord");
}

Status CudaEvent::Synchronize() const {
  return FromCudaError(cudaEventSynchronize(event_), "cudaEventSynchronize");
}

Result<bool> CudaEvent::Done() const {
  const cudaError_t err = cudaEventQuery(event_);
  if (err == cudaSuccess) return true;
  if (err == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  return FromCudaError(err, "cudaEventQuery");
}

Result<float> CudaEvent::ElapsedMs(const CudaEvent& start, const CudaEvent& end) {
  float ms = 0;
  SKIFF_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.event_, end.event_));
  return ms;
}

Status StreamWaitEvent(cudaStream_t stream, const CudaEvent& event) {
  return FromCudaError(cudaStreamWaitEvent(stream, event.get(), 0), "cudaStreamWaitEvent");
}

Status CopyToDevice(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return Status::Ok();
  cudaPointerAttributes attr{};
  SKIFF_CUDA_RETURN_IF_ERROR(cudaPointerGetAttributes(&attr, src));
  if (attr.type == cudaMemoryTypeUnregistered) {
    return Status::InvalidArgument("CopyToDevice: source of " + DescribeBytes(bytes) +
                                   " is pageable host memory; stage it in a PinnedBuffer so the "
                                   "copy overlaps compute");
  }
  return FromCudaError(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream),
                       "cudaMemcpyAsync (host to device)");
}

}  // namespace skiff::cuda
