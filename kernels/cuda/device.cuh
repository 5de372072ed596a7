// CUDA device discovery and the one seam where cudaError_t becomes a skiff::Status.
//
// Thread safety: all functions are thread-safe (the CUDA runtime serialises device queries).
#pragma once

#include <string>

#include "skiff/status.h"

namespace skiff::cuda {

struct DeviceInfo {
  int index = -1;
  std::string name;
  int sm_major = 0, sm_minor = 0;
  int multiprocessors = 0;
  size_t global_memory_bytes = 0;
  double memory_bandwidth_gbs = 0;  // theoretical peak from clock and bus width
};

// Returns the first CUDA device, or Unavailable (with the runtime's reason) when none is usable.
Result<DeviceInfo> FirstDevice();

// Converts a CUDA runtime error code (as int, so callers need no CUDA headers) into a Status.
Status FromCudaError(int error, const char* what);

// "1048576 bytes (1.0 MiB)": sizes in CUDA error messages.
std::string DescribeBytes(size_t bytes);

}  // namespace skiff::cuda
