// Argument checking of the CUDA entry points. These test cases ("host: ...") never reach the
// device -- every call is refused on the host before any CUDA call -- so main() runs them even
// when no GPU is present, and CI without a GPU still exercises the validation layer.
#include <doctest/doctest.h>

#include <climits>

#include "kernels/cuda/arena.cuh"
#include "kernels/cuda/cross_entropy.cuh"
#include "kernels/cuda/csr_aggregate.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/gat.cuh"
#include "kernels/cuda/gather.cuh"
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/layer_norm.cuh"
#include "kernels/cuda/optimizer.cuh"
#include "kernels/cuda/sample.cuh"

namespace skiff::cuda {
namespace {

void ExpectInvalid(const Status& st, const char* needle) {
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK_MESSAGE(st.message().find(needle) != std::string::npos, st.ToString());
}

TEST_CASE("host: aggregation entry points refuse bad shapes before touching the device") {
  ExpectInvalid(CsrAggregateForward(-1, 4, nullptr, nullptr, nullptr, AggregateMode::kSum, nullptr,
                                    8, nullptr, nullptr),
                "negative size");
  ExpectInvalid(CsrAggregateForward(3, 4, nullptr, nullptr, nullptr, AggregateMode::kSum, nullptr,
                                    8, nullptr, nullptr),
                "indptr is null");
  ExpectInvalid(CsrAggregateBackward(0, 0, nullptr, nullptr, nullptr, AggregateMode::kWeighted,
                                     nullptr, 8, nullptr, nullptr),
                "edge_weight");
  const int64_t host_indptr[2] = {0, 0};  // never dereferenced: the call is refused first
  ExpectInvalid(CsrAggregateForward(1, int64_t{1} << 32, host_indptr, nullptr, nullptr,
                                    AggregateMode::kSum, nullptr, 8, nullptr, nullptr),
                "int32");
  const auto bytes = CsrTransposeWorkspaceBytes(int64_t{1} << 31, 10);
  REQUIRE_FALSE(bytes.ok());
  CHECK(bytes.status().code() == StatusCode::kInvalidArgument);
  ExpectInvalid(GcnEdgeWeights(-2, 1, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
                "negative size");
}

TEST_CASE("host: GAT, gather, element-wise, loss, optimiser and LayerNorm argument checks") {
  ExpectInvalid(AttentionDot(-1, 2, 3, nullptr, nullptr, nullptr, nullptr), "negative size");
  ExpectInvalid(GatAggregateBackward(2, -1, nullptr, nullptr, 1, 4, nullptr, nullptr, nullptr,
                                     nullptr, nullptr, nullptr),
                "negative size");
  ExpectInvalid(GatherRows(nullptr, -4, nullptr, 3, nullptr, nullptr), "negative size");
  ExpectInvalid(ScatterAddRows(nullptr, 4, nullptr, -3, nullptr, nullptr), "negative size");
  ExpectInvalid(ScatterRows(nullptr, -1, nullptr, 3, nullptr, nullptr), "negative size");
  ExpectInvalid(DropoutForward(10, 1.0f, 7, nullptr, nullptr, nullptr), "outside [0, 1)");
  ExpectInvalid(DropoutBackward(10, -0.1f, 7, nullptr, nullptr, nullptr), "outside [0, 1)");
  ExpectInvalid(BiasAdd(-1, 4, nullptr, nullptr, nullptr), "negative size");
  ExpectInvalid(SoftmaxCrossEntropy(4, 3, nullptr, nullptr, nullptr, nullptr, nullptr),
                "stats is null");
  ExpectInvalid(LogSoftmax(-4, 3, nullptr, nullptr, nullptr), "negative size");
  ExpectInvalid(AdamStep(10, AdamConfig{}, 0, nullptr, nullptr, nullptr, nullptr, nullptr), "step");
  ExpectInvalid(SgdStep(10, 0.1f, 0.9f, 0.0f, nullptr, nullptr, nullptr, nullptr), "momentum_buf");
  ExpectInvalid(
      LayerNormForward(4, 0, nullptr, nullptr, nullptr, 1e-5f, nullptr, nullptr, nullptr, nullptr),
      "cols >= 1");
}

TEST_CASE("host: Gemm refuses negative sizes, an empty handle and short strides") {
  const CublasHandle empty;
  ExpectInvalid(Gemm(false, false, -1, 2, 2, 1.0f, nullptr, 2, nullptr, 2, 0.0f, nullptr, 2, empty,
                     GemmPrecision::kFp32, nullptr),
                "negative size");
  ExpectInvalid(Gemm(false, false, 2, 2, 2, 1.0f, nullptr, 2, nullptr, 2, 0.0f, nullptr, 2, empty,
                     GemmPrecision::kFp32, nullptr),
                "empty CublasHandle");
}

TEST_CASE("host: sampling entry points refuse bad hops and graphs before touching the device") {
  HopParams p;
  p.num_layers = 2;
  p.hop = 0;
  p.fanouts[0] = 10;
  p.fanouts[1] = 5;
  p.hop_begin[1] = 4;
  const int64_t host_indptr[2] = {0, 0};  // never dereferenced: the calls are refused first
  const DeviceCsr graph{.num_nodes = 1, .num_edges = 0, .indptr = host_indptr};
  CHECK(CheckHopParams(p).ok());
  HopParams wide = p;
  wide.fanouts[0] = static_cast<int>(kMaxDeviceSampleLength) + 1;
  ExpectInvalid(CheckHopParams(wide), "fanout 129 of layer 0");
  HopParams deep = p;
  deep.num_layers = kMaxSampleLayers + 1;
  ExpectInvalid(SamplePicks(graph, deep, nullptr, nullptr, nullptr, nullptr), "layers");
  HopParams shrinking = p;
  shrinking.hop = 1;
  shrinking.hop_begin[2] = 3;  // fewer nodes after the hop than before
  ExpectInvalid(CheckHopParams(shrinking), "decrease at hop 1");
  const DeviceCsr huge{.num_nodes = int64_t{1} << 31, .indptr = host_indptr};
  ExpectInvalid(SampleRowPtr(huge, p, nullptr, nullptr, 0, nullptr, nullptr), "2^31");
  ExpectInvalid(SampleRowPtr(graph, p, nullptr, nullptr, 0, nullptr, nullptr), "null");
  ExpectInvalid(AssignNewIds(4, nullptr, nullptr, nullptr, INT32_MAX, nullptr, nullptr, nullptr),
                "exceeds 2^31");
  ExpectInvalid(MapPicks(-1, nullptr, nullptr, nullptr, nullptr), "picks");
  ExpectInvalid(SeedLocalIds(3, nullptr, nullptr, nullptr), "null");
  int64_t out_indptr[3];  // likewise
  ExpectInvalid(
      AddSelfLoops(2, host_indptr, nullptr, host_indptr, out_indptr, nullptr, nullptr, nullptr),
      "without out_weight");
}

TEST_CASE("host: an empty DeviceArena refuses allocations with the sizes") {
  DeviceArena arena;  // capacity 0, no device memory
  const auto p = arena.Allocate(1000, "edge weights");
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == StatusCode::kResourceExhausted);
  CHECK(p.status().message().find("edge weights") != std::string::npos);
  CHECK(p.status().message().find("1000 bytes") != std::string::npos);
  const auto negative = arena.AllocateArray<float>(-5, "features");
  REQUIRE_FALSE(negative.ok());
  CHECK(negative.status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace skiff::cuda
