// Device arena, pinned staging buffers and the H2D copy stream ordered with events.
#include <doctest/doctest.h>

#include <cstring>

#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/arena.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/pinned_buffer.cuh"
#include "kernels/cuda/stream.cuh"
#include "tests/gpu/gpu_test_util.h"

namespace skiff::gpu_testing {
namespace {

TEST_CASE("DeviceArena bump-allocates aligned blocks, reports exhaustion with sizes, resets") {
  auto arena = cuda::DeviceArena::Create(4096);
  REQUIRE_MESSAGE(arena.ok(), arena.status().ToString());
  auto a = arena->Allocate(1, "a");
  auto b = arena->AllocateArray<float>(100, "b");
  auto empty = arena->Allocate(0, "empty");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(empty.ok());
  CHECK(reinterpret_cast<uintptr_t>(*a) % cuda::DeviceArena::kAlignment == 0);
  CHECK(reinterpret_cast<uintptr_t>(*b) % cuda::DeviceArena::kAlignment == 0);
  CHECK(*a != static_cast<void*>(*b));
  CHECK(*empty != *a);
  CHECK(arena->used_bytes() == 256 + 512 + 256);

  auto too_big = arena->Allocate(8192, "features of batch 7");
  REQUIRE_FALSE(too_big.ok());
  CHECK(too_big.status().code() == StatusCode::kResourceExhausted);
  CHECK(too_big.status().message().find("features of batch 7") != std::string::npos);
  CHECK(too_big.status().message().find("8192 bytes") != std::string::npos);
  CHECK(too_big.status().message().find("4096 bytes") != std::string::npos);

  arena->Reset();
  CHECK(arena->used_bytes() == 0);
  CHECK(arena->peak_bytes() == 1024);
  auto again = arena->Allocate(4096, "whole arena");
  REQUIRE(again.ok());
  CHECK(*again == *a);  // same base after Reset

  // The memory is usable by kernels.
  TestStream stream;
  SKIFF_REQUIRE_CUDA(cudaMemsetAsync(*again, 0, 4096, stream.get()));
  stream.Sync();
}

TEST_CASE("DeviceArena larger than the device fails with ResourceExhausted, not a crash") {
  size_t free_bytes = 0, total_bytes = 0;
  SKIFF_REQUIRE_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  auto arena = cuda::DeviceArena::Create(total_bytes * 4);
  REQUIRE_FALSE(arena.ok());
  CHECK(arena.status().code() == StatusCode::kResourceExhausted);
  CHECK(arena.status().message().find("free") != std::string::npos);
}

TEST_CASE("H2D copies on their own stream feed compute through events") {
  TestStream compute;
  auto copy_stream = cuda::CudaStream::Create();
  REQUIRE(copy_stream.ok());
  constexpr int kSlots = 2, kBatches = 6;
  constexpr int64_t n = 1 << 20;
  std::vector<cuda::PinnedBuffer> staging;
  std::vector<DeviceBuffer<float>> device_in, device_out;
  std::vector<cuda::CudaEvent> copied, consumed;
  for (int i = 0; i < kSlots; ++i) {
    auto buf = cuda::PinnedBuffer::Create(n * sizeof(float));
    REQUIRE_MESSAGE(buf.ok(), buf.status().ToString());
    staging.push_back(std::move(buf).value());
    device_in.emplace_back(n);
    device_out.emplace_back(n);
    auto e1 = cuda::CudaEvent::Create();
    auto e2 = cuda::CudaEvent::Create();
    REQUIRE(e1.ok());
    REQUIRE(e2.ok());
    copied.push_back(std::move(e1).value());
    consumed.push_back(std::move(e2).value());
  }
  std::vector<std::vector<float>> expected;
  for (int batch = 0; batch < kBatches; ++batch) {
    const int slot = batch % kSlots;
    // The host may refill a staging slot only after its previous copy completed.
    if (batch >= kSlots) SKIFF_REQUIRE_OK(copied[slot].Synchronize());
    const std::vector<float> x = RandomFloats(n, 200 + batch, -1.0f, 1.0f);
    std::memcpy(staging[slot].data(), x.data(), n * sizeof(float));
    std::vector<float> y(n);
    cpu::ReluForward(n, x.data(), y.data());
    expected.push_back(std::move(y));
    // The copy must not overwrite device_in[slot] while the previous batch still reads it.
    SKIFF_REQUIRE_OK(cuda::StreamWaitEvent(copy_stream->get(), consumed[slot]));
    SKIFF_REQUIRE_OK(cuda::CopyToDevice(device_in[slot].get(), staging[slot].data(),
                                        n * sizeof(float), copy_stream->get()));
    SKIFF_REQUIRE_OK(copied[slot].Record(copy_stream->get()));
    SKIFF_REQUIRE_OK(cuda::StreamWaitEvent(compute.get(), copied[slot]));
    SKIFF_REQUIRE_OK(
        cuda::ReluForward(n, device_in[slot].get(), device_out[slot].get(), compute.get()));
    SKIFF_REQUIRE_OK(consumed[slot].Record(compute.get()));
    ExpectClose(device_out[slot].Download(compute.get()), expected[batch], 0, 0,
                "batch " + std::to_string(batch));
  }
  auto done = consumed[0].Done();
  REQUIRE(done.ok());
  CHECK(*done);
}

TEST_CASE("CopyToDevice refuses pageable memory") {
  TestStream stream;
  std::vector<float> pageable(16, 1.0f);
  DeviceBuffer<float> dst(16);
  const Status st = cuda::CopyToDevice(dst.get(), pageable.data(), 64, stream.get());
  CHECK(st.code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace skiff::gpu_testing
