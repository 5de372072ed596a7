#include "kernels/cuda/pinned_buffer.cuh"

#include <string>
#include <utility>

#include "kernels/cuda/common.cuh"

namespace skiff::cuda {
// --- PinnedBuffer ----------------------------------------------------------------------------

Result<PinnedBuffer> PinnedBuffer::Create(size_t bytes) {
  PinnedBuffer buf;
  if (bytes == 0) return buf;
  const cudaError_t err =
      cudaHostAlloc(&buf.data_, bytes, cudaHostAllocPortable | cudaHostAllocMapped);
  if (err != cudaSuccess) {
    cudaGetLastError();
    buf.data_ = nullptr;
    const Status st = FromCudaError(err, "cudaHostAlloc");
    return Status::ResourceExhausted("pinned staging buffer of " + DescribeBytes(bytes) +
                                     " could not be allocated (" + st.message() +
                                     "); check `ulimit -l` and free RAM, or lower the staging "
                                     "budget");
  }
  buf.size_bytes_ = bytes;
  SKIFF_CUDA_RETURN_IF_ERROR(cudaHostGetDevicePointer(&buf.device_pointer_, buf.data_, 0));
  return buf;
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      device_pointer_(std::exchange(other.device_pointer_, nullptr)),
      size_bytes_(std::exchange(other.size_bytes_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = std::exchange(other.data_, nullptr);
    device_pointer_ = std::exchange(other.device_pointer_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
  }
  return *this;
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) cudaFreeHost(data_);
}

}  // namespace skiff::cuda
