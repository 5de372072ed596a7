// DeviceGroup (src/model/cuda/device_group.h): NCCL over the GPUs of one process. The smoke test
// sums buffers across every visible GPU (one on a one-GPU machine: the buffer itself) and checks
// the sums exactly (small integers, exact in float whatever the order); the refusals are checked
// before any device is touched. Where NCCL is absent (the build found no nccl.h, or libnccl.so.2
// does not load) the smoke test says so and does not run.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "src/model/cuda/device_group.h"
#include "tests/gpu/gpu_test_util.h"

using skiff::StatusCode;
using skiff::cuda::DeviceGroup;

TEST_CASE("host: a device group refuses an empty or repeated GPU list") {
  auto empty = DeviceGroup::Create({});
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.status().code() == StatusCode::kInvalidArgument);
  auto twice = DeviceGroup::Create({0, 0});
  REQUIRE_FALSE(twice.ok());
  CHECK(twice.status().code() == StatusCode::kInvalidArgument);
  CHECK(twice.status().message().find("GPU 0 is listed twice") != std::string::npos);
}

TEST_CASE("device group: a GPU the machine lacks is refused, naming it") {
  int n = 0;
  SKIFF_REQUIRE_CUDA(cudaGetDeviceCount(&n));
  auto missing = DeviceGroup::Create({n});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kInvalidArgument);
  CHECK(missing.status().message().find("there is no GPU " + std::to_string(n)) !=
        std::string::npos);
}

TEST_CASE("device group: NCCL all-reduce over every visible GPU sums the buffers (smoke test)") {
  int n = 0;
  SKIFF_REQUIRE_CUDA(cudaGetDeviceCount(&n));
  std::vector<int> devices;
  for (int d = 0; d < n; ++d) devices.push_back(d);
  auto group = DeviceGroup::Create(devices);
  const std::string& why = group.ok() ? std::string() : group.status().message();
  if (why.find("has no NCCL") != std::string::npos ||
      why.find("not installed here") != std::string::npos) {
    MESSAGE("NCCL smoke test not run: " << group.status().ToString());
    return;
  }
  REQUIRE_MESSAGE(group.ok(), group.status().ToString());
  CHECK((*group)->size() == n);

  const size_t count = (size_t{1} << 20) + 3;  // not a multiple of any chunk NCCL cuts
  std::vector<float*> buffers(static_cast<size_t>(n), nullptr);
  std::vector<cudaStream_t> streams(static_cast<size_t>(n), nullptr);
  for (int d = 0; d < n; ++d) {
    SKIFF_REQUIRE_CUDA(cudaSetDevice(d));
    SKIFF_REQUIRE_CUDA(cudaMalloc(&buffers[d], count * sizeof(float)));
    SKIFF_REQUIRE_CUDA(cudaStreamCreateWithFlags(&streams[d], cudaStreamNonBlocking));
    std::vector<float> host(count);
    for (size_t k = 0; k < count; ++k) host[k] = static_cast<float>((d + 1) * (k % 1000));
    SKIFF_REQUIRE_CUDA(
        cudaMemcpy(buffers[d], host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  }
  // Twice: the communicators are reused, and the second sum starts from the first.
  for (int round = 1; round <= 2; ++round) {
    CAPTURE(round);
    SKIFF_REQUIRE_OK((*group)->AllReduceSum(buffers, count, streams));
    const float ranks_sum = static_cast<float>(n * (n + 1) / 2);
    const float factor = round == 1 ? ranks_sum : ranks_sum * static_cast<float>(n);
    for (int d = 0; d < n; ++d) {
      SKIFF_REQUIRE_CUDA(cudaSetDevice(d));
      SKIFF_REQUIRE_CUDA(cudaStreamSynchronize(streams[d]));
      std::vector<float> out(count);
      SKIFF_REQUIRE_CUDA(
          cudaMemcpy(out.data(), buffers[d], count * sizeof(float), cudaMemcpyDeviceToHost));
      size_t wrong = 0;
      for (size_t k = 0; k < count; ++k) {
        wrong += out[k] == factor * static_cast<float>(k % 1000) ? 0 : 1;
      }
      CHECK_MESSAGE(wrong == 0, "GPU " << d << ": " << wrong << " wrong sums");
    }
  }
  CHECK_FALSE(
      (*group)->AllReduceSum(std::span<float* const>(buffers.data(), 0), count, streams).ok());
  for (int d = 0; d < n; ++d) {
    cudaSetDevice(d);
    cudaStreamDestroy(streams[d]);
    cudaFree(buffers[d]);
  }
  cudaSetDevice(0);
}
