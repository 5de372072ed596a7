// CSR aggregation (sum / mean / weighted) and GCN weights: CUDA vs CPU reference over awkward
// blocks and dims, the atomic and transposed backward paths, and the adjoint identity
// <A x, g> = <x, A^T g> as the gradient check of this linear op.
//
// Tolerance: |gpu - cpu| <= 1e-5 * M + 1e-6, where M is the same aggregation applied to |x| and
// |w| (the sum of absolute terms, which bounds fp32 rounding error of any summation order). Rows
// longer than detail::kGatherLongRowEdges (the gather) or kScatterLongRowEdges (the scatter) are
// summed by several warps and blocks (a different order than
// the CPU's); their error is dominated by the CPU's own sequential sum, about sqrt(deg) * 6e-8 * M
// for random signs, 6e-6 * M at degree 10,000.
#include <doctest/doctest.h>

#include <cstring>

#include "kernels/cpu/csr_aggregate.h"
#include "kernels/cuda/csr_aggregate.cuh"
#include "kernels/cuda/spmm.cuh"
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
  // kWeighted without edge_weight is refused where the host can see there is nothing to check the
  // block against (a null indptr). With an indptr it is accepted, and a device-side check traps if
  // the block has edges; that case kills the context, so it is not exercised here.
  for (const int64_t num_dst : {int64_t{0}, int64_t{3}}) {
    const Status no_weights =
        cuda::CsrAggregateForward(num_dst, 4, nullptr, nullptr, nullptr, AggregateMode::kWeighted,
                                  nullptr, 4, nullptr, stream.get());
    CHECK(no_weights.code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(no_weights.message().find(num_dst == 0 ? "edge_weight" : "indptr is null") !=
                      std::string::npos,
                  no_weights.ToString());
  }
  const Status no_weights_bwd = cuda::CsrAggregateBackwardTransposed(
      0, 4, nullptr, cuda::TransposedCsr{}, nullptr, AggregateMode::kWeighted, nullptr, 4, nullptr,
      stream.get());
  CHECK(no_weights_bwd.code() == StatusCode::kInvalidArgument);
  CHECK(no_weights_bwd.message().find("edge_weight") != std::string::npos);
}

TEST_CASE("CsrAggregate kWeighted accepts a null edge_weight for a block without edges") {
  // The CPU contract (kernels/cpu/csr_aggregate.h): edge_weight is only read for edges, so a block
  // with rows but no edges needs none. Every path writes zeros.
  TestStream stream;
  const cudaStream_t s = stream.get();
  const Block b = AwkwardBlocks()[0];  // "no edges": 5 rows, 7 sources
  REQUIRE(b.nnz() == 0);
  REQUIRE(b.num_dst > 0);
  const DeviceBlock db(b, {}, s);
  REQUIRE(db.weight.get() == nullptr);
  for (const int64_t dim : {int64_t{1}, int64_t{4}, int64_t{33}}) {
    CAPTURE(dim);
    const std::vector<float> x = RandomFloats(b.num_src * dim, 31);
    DeviceBuffer<float> dx(x, s), dout(b.num_dst * dim), dgx(b.num_src * dim);
    dout.Fill(0xff, s);
    SKIFF_REQUIRE_OK(cuda::CsrAggregateForward(b.num_dst, b.num_src, db.indptr.get(),
                                               db.indices.get(), nullptr, AggregateMode::kWeighted,
                                               dx.get(), dim, dout.get(), s));
    CHECK(dout.Download(s) == std::vector<float>(b.num_dst * dim, 0.0f));
    const std::vector<float> g = RandomFloats(b.num_dst * dim, 32);
    DeviceBuffer<float> dg(g, s);
    dgx.Fill(0xff, s);
    SKIFF_REQUIRE_OK(cuda::CsrAggregateBackward(b.num_dst, b.num_src, db.indptr.get(),
                                                db.indices.get(), nullptr, AggregateMode::kWeighted,
                                                dg.get(), dim, dgx.get(), s));
    CHECK(dgx.Download(s) == std::vector<float>(b.num_src * dim, 0.0f));
    const Transposed t = Transpose(b, db, s);
    dgx.Fill(0xff, s);
    SKIFF_REQUIRE_OK(cuda::CsrAggregateBackwardTransposed(
        b.num_dst, b.num_src, db.indptr.get(), t.view(), nullptr, AggregateMode::kWeighted,
        dg.get(), dim, dgx.get(), s));
    CHECK(dgx.Download(s) == std::vector<float>(b.num_src * dim, 0.0f));
  }
}

// Blocks for the long-row path (rows of more than kGatherLongRowEdges edges for the gather and
// kScatterLongRowEdges for the scatter, split over warps and blocks; kernels/cuda/spmm.cuh): rows
// exactly at either threshold and just past it, at multiples of the 8-warp chunk round (256
// edges), many long rows, power-law degrees, and more long-row units than one round of the
// long-row blocks' search covers.
std::vector<Block> LongRowBlocks() {
  constexpr int64_t kT = cuda::detail::kScatterLongRowEdges;
  constexpr int64_t kG = cuda::detail::kGatherLongRowEdges;
  std::vector<Block> blocks;
  // Threshold boundaries among short rows; sources few enough that the transpose has long rows.
  blocks.push_back(
      MakeBlock("rows at the long-row thresholds", 211,
                {kT,      kT + 1,  kT - 1,  0,   1,       2 * kT,     kT + 31,   kT + 32,
                 kT + 33, 256 + 1, 512 - 1, 512, 512 + 1, 3 * kT + 7, 5000,      1,
                 kT,      kT + 1,  17,      kG,  kG + 1,  kG - 1,     2 * kG + 1},
                41));
  {
    // Many long rows (every row long, most far past the threshold) next to each other: the units
    // must be spread over many blocks and every row written exactly once.
    blocks.push_back(
        MakeBlock("600 rows of degree T-4..4T", 1000, UniformDegrees(600, kT - 4, 4 * kT, 42), 43));
  }
  {
    // Power-law degrees, mean ~15, capped at 10,000 (the perf block's generator, smaller).
    std::mt19937_64 rng(44);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<int64_t> degrees(20000);
    for (auto& d : degrees) {
      d = std::min<int64_t>(10000, static_cast<int64_t>(5.0 / std::pow(1.0 - u(rng), 1.0 / 1.5)));
    }
    blocks.push_back(MakeBlock("power-law 20000 x 50000", 50000, degrees, 45));
  }
  return blocks;
}

TEST_CASE("CsrAggregate long rows (load-balanced path) match the CPU at and past the threshold") {
  TestStream stream;
  for (const Block& b : LongRowBlocks()) {
    for (int64_t dim : {1, 2, 4, 5, 31, 32, 33, 36, 64, 100, 128, 129, 256, 1000}) {
      if (b.nnz() > 100000 && dim > 128) continue;  // keeps the CPU reference quick
      for (AggregateMode mode :
           {AggregateMode::kSum, AggregateMode::kMean, AggregateMode::kWeighted}) {
        CheckBlockAndDim(b, dim, mode, stream);
      }
    }
  }
}

TEST_CASE("CsrAggregate long rows: more long-row units than one search round of the grid") {
  // 300,000 rows: more units than one round of the long-row blocks' search covers (kMaxLongBlocks
  // blocks x 256 units), at every dim below, with long rows scattered over the whole range: the
  // first and last rows, around multiples of kMaxLongBlocks and around the first round boundaries.
  constexpr int64_t kT =
      std::max(cuda::detail::kGatherLongRowEdges, cuda::detail::kScatterLongRowEdges);
  constexpr int64_t kRound = cuda::detail::kMaxLongBlocks * 256;
  std::vector<int64_t> degrees(300000);
  REQUIRE(static_cast<int64_t>(degrees.size()) > kRound);
  for (size_t i = 0; i < degrees.size(); ++i) degrees[i] = static_cast<int64_t>(i % 3);
  for (const int64_t row :
       {int64_t{0}, int64_t{1}, cuda::detail::kMaxLongBlocks - 1, cuda::detail::kMaxLongBlocks,
        cuda::detail::kMaxLongBlocks + 1, kRound / 2 - 1, kRound / 2, kRound - 1, kRound,
        kRound + 1, int64_t{299998}, int64_t{299999}}) {
    degrees[row] = kT + 1 + row % 700;
  }
  const Block b = MakeBlock("300,000 rows, long rows scattered", 997, degrees, 46);
  TestStream stream;
  for (int64_t dim : {1, 33, 36}) {
    for (AggregateMode mode : {AggregateMode::kSum, AggregateMode::kWeighted}) {
      CheckBlockAndDim(b, dim, mode, stream);
    }
  }
}

TEST_CASE("CsrAggregate forward and transposed backward stay deterministic on long rows") {
  TestStream stream;
  const cudaStream_t s = stream.get();
  const Block b = LongRowBlocks()[2];  // power-law
  const int64_t dim = 128;
  const std::vector<float> x = RandomFloats(b.num_src * dim, 51);
  const std::vector<float> g = RandomFloats(b.num_dst * dim, 52);
  const DeviceBlock db(b, RandomFloats(b.nnz(), 53, 0.1f, 1.0f), s);
  DeviceBuffer<float> dx(x, s), dg(g, s), dout(b.num_dst * dim), dgx(b.num_src * dim);
  const Transposed t = Transpose(b, db, s);
  std::vector<float> first_out, first_gx;
  for (int run = 0; run < 3; ++run) {
    SKIFF_REQUIRE_OK(cuda::CsrAggregateForward(
        b.num_dst, b.num_src, db.indptr.get(), db.indices.get(), db.weight.get(),
        AggregateMode::kWeighted, dx.get(), dim, dout.get(), s));
    SKIFF_REQUIRE_OK(cuda::CsrAggregateBackwardTransposed(
        b.num_dst, b.num_src, db.indptr.get(), t.view(), db.weight.get(), AggregateMode::kWeighted,
        dg.get(), dim, dgx.get(), s));
    std::vector<float> out = dout.Download(s), gx = dgx.Download(s);
    if (run == 0) {
      first_out = std::move(out);
      first_gx = std::move(gx);
      continue;
    }
    CHECK(std::memcmp(out.data(), first_out.data(), out.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(gx.data(), first_gx.data(), gx.size() * sizeof(float)) == 0);
  }
}

}  // namespace
}  // namespace skiff::gpu_testing
