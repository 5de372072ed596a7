// Helpers shared by the GPU tests: device buffers, a test stream, block generators with awkward
// shapes, and the comparison used against the CPU references.
#pragma once

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/device.cuh"
#include "kernels/cuda/stream.cuh"
#include "skiff/status.h"

#define SKIFF_REQUIRE_OK(expr)                             \
  do {                                                     \
    const ::skiff::Status skiff_st_ = (expr);              \
    REQUIRE_MESSAGE(skiff_st_.ok(), skiff_st_.ToString()); \
  } while (0)

#define SKIFF_REQUIRE_CUDA(expr) SKIFF_REQUIRE_OK(::skiff::cuda::FromCudaError((expr), #expr))

namespace skiff::gpu_testing {

// A stream per test case (non-blocking, so nothing hides behind legacy default-stream syncs).
class TestStream {
 public:
  TestStream() {
    auto s = cuda::CudaStream::Create();
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
    stream_ = std::move(s).value();
  }
  cudaStream_t get() const { return stream_.get(); }
  void Sync() const { SKIFF_REQUIRE_OK(stream_.Synchronize()); }

 private:
  cuda::CudaStream stream_;
};

// Device memory for `count` Ts (owning, move-only). Copies go through `stream` and wait for it.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) : count_(count) {
    if (count > 0) SKIFF_REQUIRE_CUDA(cudaMalloc(&ptr_, count * sizeof(T)));
  }
  DeviceBuffer(const std::vector<T>& host, cudaStream_t stream) : DeviceBuffer(host.size()) {
    Upload(host, stream);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), count_(o.count_) {
    o.ptr_ = nullptr;
    o.count_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(count_, o.count_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }

  void Upload(const std::vector<T>& host, cudaStream_t stream) {
    REQUIRE(host.size() == count_);
    if (count_ == 0) return;
    SKIFF_REQUIRE_CUDA(
        cudaMemcpyAsync(ptr_, host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice, stream));
    SKIFF_REQUIRE_CUDA(cudaStreamSynchronize(stream));
  }
  std::vector<T> Download(cudaStream_t stream) const {
    std::vector<T> host(count_);
    if (count_ == 0) return host;
    SKIFF_REQUIRE_CUDA(
        cudaMemcpyAsync(host.data(), ptr_, count_ * sizeof(T), cudaMemcpyDeviceToHost, stream));
    SKIFF_REQUIRE_CUDA(cudaStreamSynchronize(stream));
    return host;
  }
  void Fill(uint8_t byte, cudaStream_t stream) {
    if (count_ == 0) return;
    SKIFF_REQUIRE_CUDA(cudaMemsetAsync(ptr_, byte, count_ * sizeof(T), stream));
  }

  T* get() const { return ptr_; }
  size_t size() const { return count_; }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

inline std::vector<float> RandomFloats(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// A bipartite CSR block (the layout of kernels/cpu/csr_aggregate.h).
struct Block {
  std::string name;
  int64_t num_dst = 0, num_src = 0;
  std::vector<int64_t> indptr{0};
  std::vector<int32_t> indices;
  int64_t nnz() const { return static_cast<int64_t>(indices.size()); }
};

// `count` row degrees drawn uniformly from [lo, hi] with std::mt19937_64(seed).
inline std::vector<int64_t> UniformDegrees(size_t count, int64_t lo, int64_t hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> deg(lo, hi);
  std::vector<int64_t> degrees(count);
  for (auto& d : degrees) d = deg(rng);
  return degrees;
}

inline Block MakeBlock(std::string name, int64_t num_src, const std::vector<int64_t>& degrees,
                       uint64_t seed) {
  Block b;
  b.name = std::move(name);
  b.num_dst = static_cast<int64_t>(degrees.size());
  b.num_src = num_src;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> src(
      0, static_cast<int32_t>(std::max<int64_t>(num_src, 1) - 1));
  for (int64_t deg : degrees) {
    for (int64_t e = 0; e < deg; ++e) b.indices.push_back(src(rng));
    b.indptr.push_back(static_cast<int64_t>(b.indices.size()));
  }
  return b;
}

// The awkward shapes every aggregation-like op is tested on.
inline std::vector<Block> AwkwardBlocks() {
  std::vector<Block> blocks;
  blocks.push_back(MakeBlock("no edges", 7, std::vector<int64_t>(5, 0), 1));
  blocks.push_back(MakeBlock("no destination rows", 4, {}, 2));
  blocks.push_back(MakeBlock("one row", 3, {5}, 3));  // 5 edges over 3 sources: duplicates
  blocks.push_back(MakeBlock("one source", 1, {0, 3, 1, 0, 7, 2, 0, 33}, 4));
  {
    // A hub row of degree 10,000 among rows of degree 0 and small degrees; 37 rows and 10,007
    // sources (neither a multiple of 32).
    std::vector<int64_t> degrees = {10000};
    for (int i = 1; i < 37; ++i)
      degrees.push_back(std::vector<int64_t>{0, 0, 1, 2, 31, 33, 65}[i % 7]);
    blocks.push_back(MakeBlock("degree 0 and 10,000", 10007, degrees, 5));
  }
  blocks.push_back(MakeBlock("random 1000 x 3001", 3001, UniformDegrees(1000, 0, 40, 6), 7));
  return blocks;
}

// Feature dimensions 1..1024: around the warp width, float4 width and the 128-column tile.
inline const std::vector<int64_t>& AwkwardDims() {
  static const std::vector<int64_t> dims = {1,  2,   3,   4,   5,   31,  32,   33,
                                            64, 100, 127, 128, 129, 256, 1000, 1024};
  return dims;
}

// |gpu[i] - cpu[i]| <= atol + rtol * scale[i] for every i, where scale is |cpu| unless the caller
// passes a magnitude (e.g. the same sum over absolute values, which bounds rounding error).
inline void ExpectClose(const std::vector<float>& gpu, const std::vector<float>& cpu, float rtol,
                        float atol, const std::string& what,
                        const std::vector<float>* scale = nullptr) {
  REQUIRE_MESSAGE(gpu.size() == cpu.size(), what);
  size_t bad = 0, first_bad = 0;
  double worst = 0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const double s = scale != nullptr ? std::fabs((*scale)[i]) : std::fabs(cpu[i]);
    const double err = std::fabs(static_cast<double>(gpu[i]) - cpu[i]);
    const bool ok = err <= atol + rtol * s;  // NaN fails
    if (!ok) {
      if (bad == 0) first_bad = i;
      ++bad;
    }
    if (err > worst) worst = err;
  }
  if (bad > 0) {
    FAIL_CHECK(what << ": " << bad << " of " << gpu.size() << " elements out of tolerance (rtol "
                    << rtol << ", atol " << atol << "); first at " << first_bad << ": gpu "
                    << gpu[first_bad] << " vs cpu " << cpu[first_bad] << "; max abs err " << worst);
  }
}

inline std::vector<float> Abs(std::vector<float> v) {
  for (float& f : v) f = std::fabs(f);
  return v;
}

}  // namespace skiff::gpu_testing
