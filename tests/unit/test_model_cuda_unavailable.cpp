// Model::CreateCuda on a machine without a usable CUDA device (or in a build without CUDA): it
// must fail cleanly with Unavailable and a message that says why, and reject a bad config with
// InvalidArgument first, as CreateCpu does. On a machine with a device the case is skipped (the
// device path is covered by skiff_gpu_tests).
#include <doctest/doctest.h>

#include "skiff/model/model.h"

using namespace skiff;
using namespace skiff::model;

namespace {

ModelConfig SmallConfig();

bool HaveCudaDevice() { return Model::CreateCuda(SmallConfig()).ok(); }

ModelConfig SmallConfig() {
  ModelConfig c;
  c.in_dim = 8;
  c.hidden_dim = 4;
  c.num_classes = 3;
  return c;
}

}  // namespace

TEST_CASE("CreateCuda rejects a bad config with InvalidArgument before probing a device") {
  ModelConfig c = SmallConfig();
  c.num_classes = 0;
  auto m = Model::CreateCuda(c);
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == StatusCode::kInvalidArgument);
  CHECK(m.status().message().find("num_classes") != std::string::npos);
}

TEST_CASE("CreateCuda is Unavailable without a CUDA device") {
  if (HaveCudaDevice()) {
    MESSAGE("a CUDA device is present; covered by skiff_gpu_tests");
    return;
  }
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat}) {
    ModelConfig c = SmallConfig();
    c.kind = kind;
    auto m = Model::CreateCuda(c);
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().code() == StatusCode::kUnavailable);
    CHECK(m.status().message().find("CUDA") != std::string::npos);
    CHECK(m.status().message().find("--device cpu") != std::string::npos);
  }
}

TEST_CASE("CudaFeatureMemory is Unavailable without a CUDA device, and names the way out") {
  if (HaveCudaDevice()) {
    // With a device, an explicit amount is given back as it is (docs/cuda.md).
    auto bytes = Model::CudaFeatureMemory(uint64_t{3} << 30);
    REQUIRE(bytes.ok());
    CHECK(*bytes == uint64_t{3} << 30);
    return;
  }
  for (uint64_t device_bytes : {uint64_t{0}, uint64_t{1} << 30}) {
    auto bytes = Model::CudaFeatureMemory(device_bytes);
    REQUIRE_FALSE(bytes.ok());
    CHECK(bytes.status().code() == StatusCode::kUnavailable);
    CHECK(bytes.status().message().find("--device cpu") != std::string::npos);
  }
}
