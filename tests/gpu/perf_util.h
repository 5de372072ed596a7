// Helpers shared by the GPU benchmarks (test cases named "perf: ..."): event timing, the sampled
// block shapes they run on, and cuSPARSE SpMM as the reference both for speed and for the answer.
#pragma once

#include <cusparse.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/stream.cuh"
#include "tests/gpu/gpu_test_util.h"

#define SKIFF_REQUIRE_CUSPARSE(expr)                                                               \
  do {                                                                                             \
    const cusparseStatus_t st_ = (expr);                                                           \
    REQUIRE_MESSAGE(st_ == CUSPARSE_STATUS_SUCCESS, #expr << ": " << cusparseGetErrorString(st_)); \
  } while (0)

namespace skiff::gpu_testing {

inline constexpr int kPerfWarmup = 3;
inline constexpr int kPerfIterations = 20;

// Median milliseconds of kPerfIterations timed runs of `fn` on `stream`, after warm-up runs.
template <typename Fn>
double MedianMs(cudaStream_t stream, Fn&& fn) {
  auto start = cuda::CudaEvent::Create(true);
  auto stop = cuda::CudaEvent::Create(true);
  REQUIRE(start.ok());
  REQUIRE(stop.ok());
  for (int i = 0; i < kPerfWarmup; ++i) fn();
  std::vector<double> ms;
  for (int i = 0; i < kPerfIterations; ++i) {
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
// minimum fanout / 3, so ~0.8% of rows exceed 128 edges, the scatter's long-row threshold in
// kernels/cuda/spmm.cuh, and they hold ~20% of the edges).
inline Block BenchBlock(const std::string& name, int64_t num_dst, int64_t num_src, int64_t fanout,
                        bool skewed) {
  std::vector<int64_t> degrees(num_dst, fanout);
  if (skewed) {
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (auto& d : degrees) {
      const double x = (fanout / 3.0) / std::pow(1.0 - u(rng), 1.0 / 1.5);
      d = std::min<int64_t>(10000, static_cast<int64_t>(x));
    }
  }
  return MakeBlock(name, num_src, degrees, 77);
}

// cuSPARSE SpMM (CSR with int32 offsets and indices, unit values, row-major dense operands) on a
// block: out = A in (the sum aggregation) or out = A^T in (its backward). Owns its handle and the
// sparse descriptor.
class CusparseSum {
 public:
  CusparseSum(const Block& b, cudaStream_t stream)
      : stream_(stream),
        num_dst_(b.num_dst),
        num_src_(b.num_src),
        indptr_(std::vector<int32_t>(b.indptr.begin(), b.indptr.end()), stream),
        indices_(b.indices, stream),
        ones_(std::vector<float>(b.nnz(), 1.0f), stream) {
    SKIFF_REQUIRE_CUSPARSE(cusparseCreate(&handle_));
    SKIFF_REQUIRE_CUSPARSE(cusparseSetStream(handle_, stream));
    SKIFF_REQUIRE_CUSPARSE(cusparseCreateCsr(
        &a_, b.num_dst, b.num_src, b.nnz(), indptr_.get(), indices_.get(), ones_.get(),
        CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  }
  ~CusparseSum() {
    cusparseDestroySpMat(a_);
    cusparseDestroy(handle_);
  }
  CusparseSum(const CusparseSum&) = delete;
  CusparseSum& operator=(const CusparseSum&) = delete;

  // The fastest of cuSPARSE's default, CSR_ALG1 and CSR_ALG2 algorithms that accept the operation
  // (A: `in` num_src x dim, `out` num_dst x dim; A^T: the other way round): median ms and its name.
  // Leaves the result in `out`.
  std::pair<double, const char*> BestMs(cusparseOperation_t op, const float* in, float* out,
                                        int64_t dim) {
    const bool transpose = op != CUSPARSE_OPERATION_NON_TRANSPOSE;
    const int64_t in_rows = transpose ? num_dst_ : num_src_;
    const int64_t out_rows = transpose ? num_src_ : num_dst_;
    cusparseDnMatDescr_t in_mat = nullptr, out_mat = nullptr;
    SKIFF_REQUIRE_CUSPARSE(cusparseCreateDnMat(&in_mat, in_rows, dim, dim, const_cast<float*>(in),
                                               CUDA_R_32F, CUSPARSE_ORDER_ROW));
    SKIFF_REQUIRE_CUSPARSE(
        cusparseCreateDnMat(&out_mat, out_rows, dim, dim, out, CUDA_R_32F, CUSPARSE_ORDER_ROW));
    const float alpha = 1.0f, beta = 0.0f;
    double best_ms = 1e30;
    const char* best = "";
    for (const auto& [alg, name] : {std::pair{CUSPARSE_SPMM_ALG_DEFAULT, "default"},
                                    std::pair{CUSPARSE_SPMM_CSR_ALG1, "csr_alg1"},
                                    std::pair{CUSPARSE_SPMM_CSR_ALG2, "csr_alg2"}}) {
      size_t buffer_bytes = 0;
      // An algorithm that does not take this operation says so here: skip it.
      if (cusparseSpMM_bufferSize(handle_, op, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a_, in_mat,
                                  &beta, out_mat, CUDA_R_32F, alg,
                                  &buffer_bytes) != CUSPARSE_STATUS_SUCCESS) {
        continue;
      }
      DeviceBuffer<char> buffer(buffer_bytes);
      if (cusparseSpMM(handle_, op, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a_, in_mat, &beta,
                       out_mat, CUDA_R_32F, alg, buffer.get()) != CUSPARSE_STATUS_SUCCESS) {
        continue;
      }
      const double ms = MedianMs(stream_, [&] {
        SKIFF_REQUIRE_CUSPARSE(cusparseSpMM(handle_, op, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                                            a_, in_mat, &beta, out_mat, CUDA_R_32F, alg,
                                            buffer.get()));
      });
      if (ms < best_ms) {
        best_ms = ms;
        best = name;
      }
    }
    cusparseDestroyDnMat(out_mat);
    cusparseDestroyDnMat(in_mat);
    REQUIRE_MESSAGE(best_ms < 1e30, "no cuSPARSE SpMM algorithm accepted the operation");
    return {best_ms, best};
  }

 private:
  cudaStream_t stream_;
  int64_t num_dst_, num_src_;
  DeviceBuffer<int32_t> indptr_;
  DeviceBuffer<int32_t> indices_;
  DeviceBuffer<float> ones_;
  cusparseHandle_t handle_ = nullptr;
  cusparseSpMatDescr_t a_ = nullptr;
};

}  // namespace skiff::gpu_testing
