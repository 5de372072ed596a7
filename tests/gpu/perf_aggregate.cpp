// Benchmarks (skipped in a normal run; `skiff_gpu_tests --perf` runs them): CSR aggregation vs
// cuSPARSE SpMM on the same block and dims, and the two backward paths (the atomic scatter, and
// the transpose + gather) vs cuSPARSE's transposed SpMM (A^T g). Prints one line per
// configuration to stdout:
//   perf aggregate <graph> dim=<d> skiff_ms=.. cusparse_ms=.. speedup=.. skiff_GBps=.. pct_peak=..
//     .. bwd_atomic_ms=.. transpose_ms=.. bwd_gather_ms=.. cusparse_bwd_ms=.. bwd_speedup_*=..
// where bwd_speedup_transpose_gather counts the transpose and bwd_speedup_gather does not (a
// transpose used more than once); the CUDA model's backward is the atomic one.
//
// Bytes model (stated, so the GB/s figures can be reproduced): each edge reads its 4-byte index
// and the source row (dim * 4 bytes); each destination row reads two 8-byte offsets and writes
// dim * 4 bytes. With num_src rows far larger than L2 and random sources, the model's bytes are
// close to the DRAM traffic. "unique" counts each source row once (the lower bound on traffic).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>

#include "kernels/cuda/csr_aggregate.cuh"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/spmm.cuh"
#include "tests/gpu/perf_util.h"

namespace skiff::gpu_testing {
namespace {

void RunAggregateBench(const Block& b, int64_t dim, double peak_gbs, const TestStream& stream) {
  const cudaStream_t s = stream.get();
  DeviceBuffer<int64_t> indptr(b.indptr, s);
  DeviceBuffer<int32_t> indices(b.indices, s);
  DeviceBuffer<float> x(b.num_src * dim), out(b.num_dst * dim), out_ref(b.num_dst * dim);
  DeviceBuffer<float> grad_x(b.num_src * dim), grad_x_ref(b.num_src * dim);
  x.Upload(RandomFloats(b.num_src * dim, 3), s);

  const double skiff_ms = MedianMs(s, [&] {
    SKIFF_REQUIRE_OK(cuda::CsrAggregateForward(b.num_dst, b.num_src, indptr.get(), indices.get(),
                                               nullptr, cuda::AggregateMode::kSum, x.get(), dim,
                                               out.get(), s));
  });

  CusparseSum cusparse(b, s);
  const auto [cusparse_ms, best_alg] =
      cusparse.BestMs(CUSPARSE_OPERATION_NON_TRANSPOSE, x.get(), out_ref.get(), dim);
  // Same answer as cuSPARSE (sum): a sanity check, so a fast wrong kernel cannot pass for fast.
  std::vector<float> ours = out.Download(s), theirs = out_ref.Download(s);
  ExpectClose(ours, theirs, 1e-4f, 1e-4f, "skiff vs cuSPARSE sum");

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
  // The backward's reference: cuSPARSE's A^T g, timed and compared like the forward.
  const auto [cusparse_bwd_ms, bwd_alg] =
      cusparse.BestMs(CUSPARSE_OPERATION_TRANSPOSE, out.get(), grad_x_ref.get(), dim);
  ExpectClose(grad_x.Download(s), grad_x_ref.Download(s), 1e-4f, 1e-4f,
              "skiff vs cuSPARSE backward (A^T g)");

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
    if (degree > cuda::detail::kGatherLongRowEdges) {
      ++long_rows;
      long_edges += degree;
    }
  }
  std::printf(
      "perf aggregate %s num_dst=%lld num_src=%lld nnz=%lld dim=%lld skiff_ms=%.4f "
      "cusparse_ms=%.4f (%s) speedup=%.2f skiff_GBps=%.1f pct_peak=%.1f unique_GBps=%.1f "
      "bwd_atomic_ms=%.4f transpose_ms=%.4f bwd_gather_ms=%.4f cusparse_bwd_ms=%.4f (%s) "
      "bwd_speedup_atomic=%.2f bwd_speedup_transpose_gather=%.2f bwd_speedup_gather=%.2f "
      "max_deg=%lld long_rows=%lld long_edge_pct=%.1f\n",
      b.name.c_str(), static_cast<long long>(b.num_dst), static_cast<long long>(b.num_src),
      static_cast<long long>(b.nnz()), static_cast<long long>(dim), skiff_ms, cusparse_ms, best_alg,
      cusparse_ms / skiff_ms, gbs, 100.0 * gbs / peak_gbs, unique_bytes / (skiff_ms * 1e6),
      bwd_atomic_ms, transpose_ms, bwd_gather_ms, cusparse_bwd_ms, bwd_alg,
      cusparse_bwd_ms / bwd_atomic_ms, cusparse_bwd_ms / (transpose_ms + bwd_gather_ms),
      cusparse_bwd_ms / bwd_gather_ms, static_cast<long long>(max_degree),
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
