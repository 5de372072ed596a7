// Benchmarks (skipped in a normal run; `skiff_gpu_tests --perf` runs them): CSR aggregation vs
// cuSPARSE SpMM on the same block and dims, and the two backward paths. Prints one line per
// configuration to stdout:
//   perf aggregate <graph> dim=<d> skiff_ms=.. cusparse_ms=.. speedup=.. skiff_GBps=.. pct_peak=..
//
// Bytes model (stated, so the GB/s figures can be reproduced): each edge reads its 4-byte index
// and the source row (dim * 4 bytes); each destination row reads two 8-byte offsets and writes
// dim * 4 bytes. With num_src rows far larger than L2 and random sources, the model's bytes are
// close to the DRAM traffic. "unique" counts each source row once (the lower bound on traffic).
#include <cusparse.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>

#include "kernels/cuda/csr_aggregate.cuh"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/spmm.cuh"
#include "kernels/cuda/stream.cuh"
#include "tests/gpu/gpu_test_util.h"

namespace skiff::gpu_testing {
namespace {

constexpr int kWarmup = 3;
constexpr int kIterations = 20;

#define SKIFF_REQUIRE_CUSPARSE(expr)                                                               \
  do {                                                                                             \
    const cusparseStatus_t st_ = (expr);                                                           \
    REQUIRE_MESSAGE(st_ == CUSPARSE_STATUS_SUCCESS, #expr << ": " << cusparseGetErrorString(st_)); \
  } while (0)

// Median milliseconds of `iterations` timed runs of `fn` on `stream`, after warm-up runs.
template <typename Fn>
double MedianMs(cudaStream_t stream, Fn&& fn) {
  auto start = cuda::CudaEvent::Create(true);
  auto stop = cuda::CudaEvent::Create(true);
  REQUIRE(start.ok());
  REQUIRE(stop.ok());
  for (int i = 0; i < kWarmup; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < kIterations; ++i) {
    SKIFF_REQUIRE_OK(start->Record(stream));
    fn();
    SKIFF_REQUIRE_OK(stop->Record(stream));
    SKIFF_REQUIRE_OK(stop->Synchronize());
    auto elapsed = cuda::CudaEvent::ElapsedMs(*start, *stop);
    REQUIRE(elapsed.ok());
    ms.push_back(*elapsed);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// A sampled-block shape: `num_dst` rows with `fanout` uniformly random sources among `num_src`
// (skewed = power-law degrees with the same mean, capped at 10,000: Pareto with shape 1.5 and
// minimum fanout / 3, so ~0.8% of rows exceed the 128-edge long-row threshold of
// kernels/cuda/spmm.cuh and they hold ~20% of the edges).
Block BenchBlock(const std::string& name, int64_t num_dst, int64_t num_src, int64_t fanout,
                 bool skewed) {
  std::vector<int64_t> degrees(num_dst, fanout);
  if (skewed) {
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    double total = 0;
    for (auto& d : degrees) {
      // Pareto with shape 1.5 and scale chosen for mean ~= fanout.
      const double x = (fanout / 3.0) / std::pow(1.0 - u(rng), 1.0 / 1.5);
      d = std::min<int64_t>(10000, static_cast<int64_t>(x));
      total += d;
    }
    (void)total;
  }
  return MakeBlock(name, num_src, degrees, 77);
}

void RunAggregateBench(const Block& b, int64_t dim, double peak_gbs, const TestStream& stream) {
  const cudaStream_t s = stream.get();
  DeviceBuffer<int64_t> indptr(b.indptr, s);
  DeviceBuffer<int32_t> indices(b.indices, s);
  std::vector<int32_t> indptr32(b.indptr.begin(), b.indptr.end());
  DeviceBuffer<int32_t> indptr_i32(indptr32, s);
  DeviceBuffer<float> x(b.num_src * dim), out(b.num_dst * dim), out_ref(b.num_dst * dim);
  DeviceBuffer<float> grad_x(b.num_src * dim);
  x.Upload(RandomFloats(b.num_src * dim, 3), s);

  const double skiff_ms = MedianMs(s, [&] {
    SKIFF_REQUIRE_OK(cuda::CsrAggregateForward(b.num_dst, b.num_src, indptr.get(), indices.get(),
                                               nullptr, cuda::AggregateMode::kSum, x.get(), dim,
                                               out.get(), s));
  });

  // cuSPARSE SpMM, CSR (int32 offsets and indices), row-major dense operands, sum semantics.
  cusparseHandle_t handle = nullptr;
  SKIFF_REQUIRE_CUSPARSE(cusparseCreate(&handle));
  SKIFF_REQUIRE_CUSPARSE(cusparseSetStream(handle, s));
  cusparseSpMatDescr_t mat_a = nullptr;
  cusparseDnMatDescr_t mat_x = nullptr, mat_out = nullptr;
  SKIFF_REQUIRE_CUSPARSE(cusparseCreateCsr(
      &mat_a, b.num_dst, b.num_src, b.nnz(), indptr_i32.get(), indices.get(), nullptr,
      CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  // cuSPARSE needs values; unit weights give the same sum as kSum.
  DeviceBuffer<float> ones(std::vector<float>(b.nnz(), 1.0f), s);
  SKIFF_REQUIRE_CUSPARSE(
      cusparseCsrSetPointers(mat_a, indptr_i32.get(), indices.get(), ones.get()));
  SKIFF_REQUIRE_CUSPARSE(
      cusparseCreateDnMat(&mat_x, b.num_src, dim, dim, x.get(), CUDA_R_32F, CUSPARSE_ORDER_ROW));
  SKIFF_REQUIRE_CUSPARSE(cusparseCreateDnMat(&mat_out, b.num_dst, dim, dim, out_ref.get(),
                                             CUDA_R_32F, CUSPARSE_ORDER_ROW));
  const float alpha = 1.0f, beta = 0.0f;
  double cusparse_ms = 1e30;
  const char* best_alg = "";
  for (const auto& [alg, alg_name] : {std::pair{CUSPARSE_SPMM_ALG_DEFAULT, "default"},
                                      std::pair{CUSPARSE_SPMM_CSR_ALG2, "csr_alg2"}}) {
    size_t buffer_bytes = 0;
    SKIFF_REQUIRE_CUSPARSE(cusparseSpMM_bufferSize(
        handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat_a,
        mat_x, &beta, mat_out, CUDA_R_32F, alg, &buffer_bytes));
    DeviceBuffer<char> buffer(buffer_bytes);
    const double ms = MedianMs(s, [&] {
      SKIFF_REQUIRE_CUSPARSE(cusparseSpMM(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                          CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat_a, mat_x,
                                          &beta, mat_out, CUDA_R_32F, alg, buffer.get()));
    });
    if (ms < cusparse_ms) {
      cusparse_ms = ms;
      best_alg = alg_name;
    }
  }
  // Same answer as cuSPARSE (sum): a sanity check, so a fast wrong kernel cannot pass for fast.
  std::vector<float> ours = out.Download(s), theirs = out_ref.Download(s);
  ExpectClose(ours, theirs, 1e-4f, 1e-4f, "skiff vs cuSPARSE sum");
  cusparseDestroyDnMat(mat_out);
  cusparseDestroyDnMat(mat_x);
  cusparseDestroySpMat(mat_a);
  cusparseDestroy(handle);

  // Backward: atomic scatter vs transpose (timed separately) + gather.
  const double bwd_atomic_ms = MedianMs(s, [&] {
    SKIFF_REQUIRE_OK(cuda::CsrAggregateBackward(b.num_dst, b.num_src, indptr.get(), indices.get(),
                                                nullptr, cuda::AggregateMode::kSum, out.get(), dim,
                                                grad_x.get(), s));
  });
  DeviceBuffer<int64_t> t_indptr(b.num_src + 1);
  DeviceBuffer<int32_t> t_indices(b.nnz()), t_ids(b.nnz());
  const cuda::TransposedCsr t{t_indptr.get(), t_indices.get(), t_ids.get()};
  auto ws_bytes = cuda::CsrTransposeWorkspaceBytes(b.nnz(), b.num_src);
  REQUIRE(ws_bytes.ok());
  DeviceBuffer<char> ws(*ws_bytes);
  const double transpose_ms = MedianMs(s, [&] {
    SKIFF_REQUIRE_OK(cuda::CsrTranspose(b.num_dst, b.num_src, indptr.get(), indices.get(), b.nnz(),
                                        t, ws.get(), *ws_bytes, s));
  });
  const double bwd_gather_ms = MedianMs(s, [&] {
    SKIFF_REQUIRE_OK(cuda::CsrAggregateBackwardTransposed(b.num_dst, b.num_src, indptr.get(), t,
                                                          nullptr, cuda::AggregateMode::kSum,
                                                          out.get(), dim, grad_x.get(), s));
  });

  const double edge_bytes = static_cast<double>(b.nnz()) * (4.0 + 4.0 * dim) +
                            static_cast<double>(b.num_dst) * (16.0 + 4.0 * dim);
  std::vector<char> seen(b.num_src, 0);
  int64_t unique_src = 0;
  for (int32_t src : b.indices) unique_src += seen[src] ? 0 : (seen[src] = 1);
  const double unique_bytes = static_cast<double>(b.nnz()) * 4.0 +
                              static_cast<double>(unique_src) * 4.0 * dim +
                              static_cast<double>(b.num_dst) * (16.0 + 4.0 * dim);
  const double gbs = edge_bytes / (skiff_ms * 1e6);
  int64_t max_degree = 0, long_rows = 0, long_edges = 0;
  for (int64_t d = 0; d < b.num_dst; ++d) {
    const int64_t degree = b.indptr[d + 1] - b.indptr[d];
    max_degree = std::max(max_degree, degree);
    if (degree > cuda::detail::kLongRowEdges) {
      ++long_rows;
      long_edges += degree;
    }
  }
  std::printf(
      "perf aggregate %s num_dst=%lld num_src=%lld nnz=%lld dim=%lld skiff_ms=%.4f "
      "cusparse_ms=%.4f (%s) speedup=%.2f skiff_GBps=%.1f pct_peak=%.1f unique_GBps=%.1f "
      "bwd_atomic_ms=%.4f transpose_ms=%.4f bwd_gather_ms=%.4f max_deg=%lld long_rows=%lld "
      "long_edge_pct=%.1f\n",
      b.name.c_str(), static_cast<long long>(b.num_dst), static_cast<long long>(b.num_src),
      static_cast<long long>(b.nnz()), static_cast<long long>(dim), skiff_ms, cusparse_ms, best_alg,
      cusparse_ms / skiff_ms, gbs, 100.0 * gbs / peak_gbs, unique_bytes / (skiff_ms * 1e6),
      bwd_atomic_ms, transpose_ms, bwd_gather_ms, static_cast<long long>(max_degree),
      static_cast<long long>(long_rows),
      b.nnz() > 0 ? 100.0 * static_cast<double>(long_edges) / static_cast<double>(b.nnz()) : 0.0);
  std::fflush(stdout);
}

TEST_CASE("perf: CSR aggregation vs cuSPARSE SpMM" * doctest::skip()) {
  auto device = cuda::FirstDevice();
  REQUIRE(device.ok());
  std::printf("perf device %s sm_%d%d peak_GBps=%.0f\n", device->name.c_str(), device->sm_major,
              device->sm_minor, device->memory_bandwidth_gbs);
  TestStream stream;
  // Uniform fanout 15 over 2M sources (x = 1 GiB at dim 128, far beyond L2), then a power-law
  // block with the same mean degree (hub rows up to 10,000 edges: the long-row path), then a
  // full-neighbourhood-like block where every row is long (4,000 rows of 1,000 edges).
  const Block uniform = BenchBlock("uniform-fanout15", 200000, 2000000, 15, false);
  const Block skewed = BenchBlock("powerlaw-mean15", 200000, 2000000, 15, true);
  const Block wide = BenchBlock("uniform-fanout1000", 4000, 2000000, 1000, false);
  for (int64_t dim : {128, 32, 64, 256, 100}) {
    RunAggregateBench(uniform, dim, device->memory_bandwidth_gbs, stream);
  }
  for (int64_t dim : {128, 32, 256}) {
    RunAggregateBench(skewed, dim, device->memory_bandwidth_gbs, stream);
  }
  RunAggregateBench(wide, 128, device->memory_bandwidth_gbs, stream);
}

}  // namespace
}  // namespace skiff::gpu_testing
