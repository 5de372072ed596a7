// DeviceGroup: the GPUs of one process joined by NCCL, for summing a buffer across them -- the
// collective a model replica per GPU needs to add up its gradients before one optimiser step.
//
// Create() opens one NCCL communicator per listed device (ncclCommInitAll: one process, one thread
// issues every device's call). AllReduceSum() sums a float buffer of the same length on every
// device, in place: each device's buffer holds the sum once its stream reaches the end of the
// call. NCCL chooses the order of the additions (ring or tree), so with more than one device the
// sum is not bitwise the one of a fixed order; with one device it is the buffer itself.
//
// NCCL is loaded on the first Create() (dlopen of libnccl.so.2), so the CUDA library has no link
// dependency on it. Where it is not installed, or the build found no nccl.h, Create() is
// Unavailable, saying which.
//
// Thread safety: one thread at a time. Move-only RAII: the destructor destroys the communicators.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "skiff/status.h"

namespace skiff::cuda {

class DeviceGroup {
 public:
  // Communicators over `devices` (CUDA ordinals). InvalidArgument for an empty list, a repeated
  // ordinal, or one the machine lacks (naming it and the devices there are); Unavailable when NCCL
  // cannot start (its message) or the build has no NCCL.
  static Result<std::unique_ptr<DeviceGroup>> Create(const std::vector<int>& devices);
  ~DeviceGroup();
  DeviceGroup(const DeviceGroup&) = delete;
  DeviceGroup& operator=(const DeviceGroup&) = delete;

  int size() const { return static_cast<int>(devices_.size()); }
  const std::vector<int>& devices() const { return devices_; }

  // Sums `buffers[i]` (`count` floats on devices()[i]) across the group, in place, enqueued on
  // `streams[i]` (a stream of devices()[i]). Returns once every call is enqueued: the caller
  // synchronises the streams. InvalidArgument for lists of the wrong length; Internal with NCCL's
  // message when a call fails.
  Status AllReduceSum(std::span<float* const> buffers, size_t count,
                      std::span<const cudaStream_t> streams);

 private:
  struct Comms;  // the NCCL communicators (nccl.h stays out of this header)
  DeviceGroup(std::vector<int> devices, std::unique_ptr<Comms> comms);

  std::vector<int> devices_;
  std::unique_ptr<Comms> comms_;
};

}  // namespace skiff::cuda
