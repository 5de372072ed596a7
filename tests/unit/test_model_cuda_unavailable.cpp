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

TEST_CASE("CudaPlacementFor is Unavailable without a CUDA device, and names the way out") {
  if (HaveCudaDevice()) {
    // With a device: an explicit amount is the features' memory; 1M x 128 floats (512 MB) fit in
    // 3 GiB with the graph beside them, not in 256 MiB; fanouts over 128 or more than 8 layers
    // keep the graph off.
    auto fits = Model::CudaPlacementFor(uint64_t{3} << 30, 1000000, 128, 16000000, 3, 15);
    REQUIRE(fits.ok());
    CHECK(fits->feature_memory == uint64_t{3} << 30);
    CHECK(fits->features);
    CHECK(fits->graph);
    auto wide = Model::CudaPlacementFor(uint64_t{3} << 30, 1000000, 128, 16000000, 3, 129);
    REQUIRE(wide.ok());
    CHECK(wide->features);
    CHECK_FALSE(wide->graph);
    auto deep = Model::CudaPlacementFor(uint64_t{3} << 30, 1000000, 128, 16000000, 9, 15);
    REQUIRE(deep.ok());
    CHECK(deep->features);
    CHECK_FALSE(deep->graph);  // the device sampler takes at most 8 layers
    auto small = Model::CudaPlacementFor(uint64_t{256} << 20, 1000000, 128, 16000000, 3, 15);
    REQUIRE(small.ok());
    CHECK_FALSE(small->features);
    CHECK_FALSE(small->graph);
    return;
  }
  for (uint64_t device_bytes : {uint64_t{0}, uint64_t{1} << 30}) {
    auto placement = Model::CudaPlacementFor(device_bytes, 1000, 16, 5000, 2, 10);
    REQUIRE_FALSE(placement.ok());
    CHECK(placement.status().code() == StatusCode::kUnavailable);
    CHECK(placement.status().message().find("--device cpu") != std::string::npos);
  }
}
