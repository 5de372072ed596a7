// CSR aggregation (sum / mean / weighted) and GCN weights: CUDA vs CPU reference over awkward
// blocks and dims, the atomic and transposed backward paths, and the adjoint identity
// <A x, g> = <x, A^T g> as the gradient check of this linear op.
//
// Tolerance: |gpu - cpu| <= 1e-5 * M + 1e-6, where M is the same aggregation applied to |x| and
// |w| (the sum of absolute terms, which bounds fp32 rounding error of any summation order).
#include <doctest/doctest.h>

#include "kernels/cpu/csr_aggregate.h"
#include "kernels/cuda/csr_aggregate.cuh"
#include "tests/gpu/gpu_test_util.h"

namespace skiff::gpu_testing {
namespace {

using cpu::AggregateMode;

constexpr float kRtol = 1e-5f;
constexpr float kAtol = 1e-6f;

const char* ModeName(AggregateMode mode) {
  switch (mode) {
    case AggregateMode::kSum:
      return "sum";
    case AggregateMode::kMean:
      return "mean";
    case AggregateMode::kWeighted:
      return "weighted";
  }
  return "?";
}

struct DeviceBlock {
  DeviceBuffer<int64_t> indptr;
  DeviceBuffer<int32_t> indices;
  DeviceBuffer<float> weight;
  DeviceBlock(const Block& b, const std::vector<float>& w, cudaStream_t s)
      : indptr(b.indptr, s), indices(b.indices, s), weight(w, s) {}
};

struct Transposed {
  DeviceBuffer<int64_t> indptr;
  DeviceBuffer<int32_t> indices, edge_ids;
  cuda::TransposedCsr view() const { return {indptr.get(), indices.get(), edge_ids.get()}; }
};

Transposed Transpose(const Block& b, const DeviceBlock& db, cudaStream_t s) {
  Transposed t{DeviceBuffer<int64_t>(b.num_src + 1), DeviceBuffer<int32_t>(b.nnz()),
               DeviceBuffer<int32_t>(b.nnz())};
  const auto bytes = cuda::CsrTransposeWorkspaceBytes(b.nnz(), b.num_src);
  REQUIRE_MESSAGE(bytes.ok(), bytes.status().ToString());
  DeviceBuffer<char> workspace(*bytes);
  SKIFF_REQUIRE_OK(cuda::CsrTranspose(b.num_dst, b.num_src, db.indptr.get(), db.indices.get(),
                                      b.nnz(), t.view(), workspace.get(), *bytes, s));
  return t;
}

void CheckBlockAndDim(const Block& b, int64_t dim, AggregateMode mode, const TestStream& stream) {
  const cudaStream_t s = stream.get();
  const std::string what = b.name + ", dim " + std::to_string(dim) + ", " + ModeName(mode);
  CAPTURE(what);
  const std::vector<float> w = RandomFloats(b.nnz(), 11, 0.1f, 1.0f);
  const std::vector<float> x = RandomFloats(b.num_src * dim, 12);
  const std::vector<float> g = RandomFloats(b.num_dst * dim, 13);
  const float* w_cpu = mode == AggregateMode::kWeighted ? w.data() : nullptr;
  const DeviceBlock db(b, w, s);
  const float* w_gpu = mode == AggregateMode::kWeighted ? db.weight.get() : nullptr;

  // Forward.
  std::vector<float> out_cpu(b.num_dst * dim), mag_out(b.num_dst * dim);
  cpu::CsrAggregateForward(b.num_dst, b.num_src, b.indptr.data(), b.indices.data(), w_cpu, mode,
                           x.data(), dim, out_cpu.data());
  const std::vector<float> abs_x = Abs(x);
  cpu::CsrAggregateForward(b.num_dst, b.num_src, b.indptr.data(), b.indices.data(), w_cpu, mode,
                           abs_x.data(), dim, mag_out.data());
  DeviceBuffer<float> dx(x, s), dout(b.num_dst * dim);
  dout.Fill(0xff, s);  // NaN pattern: every element must be written
  SKIFF_REQUIRE_OK(cuda::CsrAggregateForward(b.num_dst, b.num_src, db.indptr.get(),
                                             db.indices.get(), w_gpu, mode, dx.get(), dim,
                                             dout.get(), s));
  const std::vector<float> out_gpu = dout.Download(s);
  ExpectClose(out_gpu, out_cpu, kRtol, kAtol, what + " forward", &mag_out);

  // Backward, atomic scatter and transposed gather.
  std::vector<float> gx_cpu(b.num_src * dim), mag_gx(b.num_src * dim);
  cpu::CsrAggregateBackward(b.num_dst, b.num_src, b.indptr.data(), b.indices.data(), w_cpu, mode,
                            g.data(), dim, gx_cpu.data());
  const std::vector<float> abs_g = Abs(g);
  cpu::CsrAggregateBackward(b.num_dst, b.num_src, b.indptr.data(), b.indices.data(), w_cpu, mode,
                            abs_g.data(), dim, mag_gx.data());
  DeviceBuffer<float> dg(g, s), dgx(b.num_src * dim);
  dgx.Fill(0xff, s);
  SKIFF_REQUIRE_OK(cuda::CsrAggregateBackward(b.num_dst, b.num_src, db.indptr.get(),
                                              db.indices.get(), w_gpu, mode, dg.get(), dim,
                                              dgx.get(), s));
  const std::vector<float> gx_atomic = dgx.Download(s);
  ExpectClose(gx_atomic, gx_cpu, kRtol, kAtol, what + " backward (atomic)", &mag_gx);

  const Transposed t = Transpose(b, db, s);
  dgx.Fill(0xff, s);
  SKIFF_REQUIRE_OK(cuda::CsrAggregateBackwardTransposed(
      b.num_dst, b.num_src, db.indptr.get(), t.view(), w_gpu, mode, dg.get(), dim, dgx.get(), s));
  ExpectClose(dgx.Download(s), gx_cpu, kRtol, kAtol, what + " backward (transposed)", &mag_gx);

  // Gradient check of a linear op: <A x, g> == <x, A^T g>, both sides from the GPU, in double.
  double lhs = 0, rhs = 0, mag = 0;
  for (size_t i = 0; i < out_gpu.size(); ++i) {
    lhs += static_cast<double>(out_gpu[i]) * g[i];
    mag += std::fabs(static_cast<double>(mag_out[i]));
  }
  for (size_t i = 0; i < gx_atomic.size(); ++i) rhs += static_cast<double>(gx_atomic[i]) * x[i];
  CHECK_MESSAGE(std::fabs(lhs - rhs) <= 1e-5 * mag + 1e-5,
                what << ": <Ax,g>=" << lhs << " vs <x,A^T g>=" << rhs);
}

TEST_CASE("CsrAggregate forward/backward match the CPU over awkward blocks and dims") {
  TestStream stream;
  for (const Block& b : AwkwardBlocks()) {
    for (int64_t dim : AwkwardDims()) {
      for (AggregateMode mode :
           {AggregateMode::kSum, AggregateMode::kMean, AggregateMode::kWeighted}) {
        CheckBlockAndDim(b, dim, mode, stream);
      }
    }
  }
}

TEST_CASE("CsrAggregate takes the scalar path for misaligned rows and still matches") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  const Block b = AwkwardBlocks()[5];
  const int64_t dim = 128;
  const std::vector<float> x = RandomFloats(b.num_src * dim, 21);
  std::vector<float> out_cpu(b.num_dst * dim);
  cpu::CsrAggregateForward(b.num_dst, b.num_src, b.indptr.data(), b.indices.data(), nullptr,
                           AggregateMode::kMean, x.data(), dim, out_cpu.data());
  const DeviceBlock db(b, {}, s);
  // One float of padding in front of x and out: rows are 4-byte but not 16-byte aligned.
  std::vector<float> x_padded(1, 0.0f);
  x_padded.insert(x_padded.end(), x.begin(), x.end());
  DeviceBuffer<float> dx(x_padded, s), dout(b.num_dst * dim + 1);
  SKIFF_REQUIRE_OK(cuda::CsrAggregateForward(b.num_dst, b.num_src, db.indptr.get(),
                                             db.indices.get(), nullptr, AggregateMode::kMean,
                                             dx.get() + 1, dim, dout.get() + 1, s));
  std::vector<float> out_gpu = dout.Download(s);
  out_gpu.erase(out_gpu.begin());
  ExpectClose(out_gpu, out_cpu, 1e-5f, 1e-6f, "misaligned mean forward");
}

TEST_CASE("CsrTranspose is the exact transpose with original edge positions") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  for (const Block& b : AwkwardBlocks()) {
    CAPTURE(b.name);
    const DeviceBlock db(b, {}, s);
    const Transposed t = Transpose(b, db, s);
    const std::vector<int64_t> t_indptr = t.indptr.Download(s);
    const std::vector<int32_t> t_indices = t.indices.Download(s);
    const std::vector<int32_t> t_ids = t.edge_ids.Download(s);
    // Reference: stable counting sort by source.
    std::vector<int64_t> ref_indptr(b.num_src + 1, 0);
    for (int32_t src : b.indices) ++ref_indptr[src + 1];
    for (int64_t i = 0; i < b.num_src; ++i) ref_indptr[i + 1] += ref_indptr[i];
    std::vector<int64_t> cursor(ref_indptr.begin(), ref_indptr.end() - 1);
    std::vector<int32_t> ref_indices(b.nnz()), ref_ids(b.nnz());
    for (int64_t d = 0; d < b.num_dst; ++d) {
      for (int64_t e = b.indptr[d]; e < b.indptr[d + 1]; ++e) {
        const int64_t pos = cursor[b.indices[e]]++;
        ref_indices[pos] = static_cast<int32_t>(d);
        ref_ids[pos] = static_cast<int32_t>(e);
      }
    }
    CHECK(t_indptr == ref_indptr);
    CHECK(t_indices == ref_indices);
    CHECK(t_ids == ref_ids);
  }
}

TEST_CASE("GcnEdgeWeights matches the CPU") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  for (const Block& b : AwkwardBlocks()) {
    CAPTURE(b.name);
    std::vector<float> w_cpu(b.nnz()), self_cpu(b.num_dst);
    cpu::GcnEdgeWeights(b.num_dst, b.num_src, b.indptr.data(), b.indices.data(), nullptr,
                        w_cpu.data(), self_cpu.data());
    const DeviceBlock db(b, {}, s);
    DeviceBuffer<float> w(b.nnz()), self(b.num_dst);
    DeviceBuffer<int32_t> workspace(b.num_src);
    SKIFF_REQUIRE_OK(cuda::GcnEdgeWeights(b.num_dst, b.num_src, db.indptr.get(), db.indices.get(),
                                          w.get(), self.get(), workspace.get(), s));
    ExpectClose(w.Download(s), w_cpu, 1e-6f, 0, "edge weights");
    ExpectClose(self.Download(s), self_cpu, 1e-6f, 0, "self weights");
  }
}

TEST_CASE("CsrAggregate rejects bad arguments with a message") {
  TestStream stream;
  const Status st = cuda::CsrAggregateForward(-1, 1, nullptr, nullptr, nullptr, AggregateMode::kSum,
                                              nullptr, 4, nullptr, stream.get());
  CHECK(st.code() == StatusCode::kInvalidArgument);
  const Block b = AwkwardBlocks()[2];
  const DeviceBlock db(b, {}, stream.get());
  DeviceBuffer<float> x(b.num_src * 4), out(b.num_dst * 4);
  const Status no_weights =
      cuda::CsrAggregateForward(b.num_dst, b.num_src, db.indptr.get(), db.indices.get(), nullptr,
                                AggregateMode::kWeighted, x.get(), 4, out.get(), stream.get());
  CHECK(no_weights.code() == StatusCode::kInvalidArgument);
  CHECK(no_weights.message().find("edge_weight") != std::string::npos);
}

}  // namespace
}  // namespace skiff::gpu_testing
