#include <cuda_runtime.h>

#include "kernels/cuda/device.cuh"

#include <cstdio>

namespace skiff::cuda {

Status FromCudaError(int error, const char* what) {
  if (error == cudaSuccess) return Status::Ok();
  const auto err = static_cast<cudaError_t>(error);
  std::string msg =
      std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
  if (err == cudaErrorMemoryAllocation) return Status::ResourceExhausted(msg);
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver)
    return Status::Unavailable(msg);
  return Status::Internal(msg);
}

std::string DescribeBytes(size_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%zu bytes (%.1f MiB)", bytes,
                static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

Result<DeviceInfo> FirstDevice() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error
    return Status::Unavailable(std::string("no CUDA device: ") + cudaGetErrorString(err));
  }
  if (count == 0) return Status::Unavailable("no CUDA device found");
  cudaDeviceProp prop{};
  SKIFF_RETURN_IF_ERROR(
      FromCudaError(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties"));
  DeviceInfo info;
  info.index = 0;
  info.name = prop.name;
  info.sm_major = prop.major;
  info.sm_minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  info.global_memory_bytes = prop.totalGlobalMem;
  int mem_clock_khz = 0, bus_width_bits = 0;
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, 0);
  cudaDeviceGetAttribute(&bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, 0);
  info.memory_bandwidth_gbs = 2.0 * mem_clock_khz * 1e3 * (bus_width_bits / 8.0) / 1e9;
  return info;
}

}  // namespace skiff::cuda
