#include "kernels/cuda/gemm.cuh"

#include <climits>
#include <string>

#include "kernels/cuda/common.cuh"

namespace skiff::cuda {
namespace {

// C = beta * C for k == 0 (cuBLAS is not asked to handle an empty inner dimension). beta == 0
// writes zeros so that NaNs in an uninitialised C do not survive. One thread per element of a
// row-major m x n view with stride ldc; 256 threads, grid-stride.
__global__ void ScaleMatrixKernel(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < m * n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float* p = c + (i / n) * ldc + i % n;
    *p = beta == 0.0f ? 0.0f : beta * *p;
  }
}

Status CheckStride(const char* name, int64_t rows, int64_t cols, int64_t ld) {
  if (ld < (cols > 0 ? cols : 1) || ld > INT_MAX || rows > INT_MAX || cols > INT_MAX) {
    return Status::InvalidArgument(
        "Gemm: " + std::string(name) + " is " + std::to_string(rows) + " x " +
        std::to_string(cols) + " with row stride " + std::to_string(ld) +
        " (need stride >= max(1, cols), all <= " + std::to_string(INT_MAX) + ")");
  }
  return Status::Ok();
}

cublasComputeType_t ComputeType(GemmPrecision precision) {
  switch (precision) {
    case GemmPrecision::kFp32:
      return CUBLAS_COMPUTE_32F;
    case GemmPrecision::kTf32:
      return CUBLAS_COMPUTE_32F_FAST_TF32;
    case GemmPrecision::kBf16:
      return CUBLAS_COMPUTE_32F_FAST_16BF;
  }
  return CUBLAS_COMPUTE_32F;
}

}  // namespace

Status FromCublasStatus(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  std::string msg = std::string(what) + ": " + cublasGetStatusName(status) + " (" +
                    cublasGetStatusString(status) + ")";
  if (status == CUBLAS_STATUS_ALLOC_FAILED) return Status::ResourceExhausted(msg);
  if (status == CUBLAS_STATUS_NOT_INITIALIZED) return Status::Unavailable(msg);
  return Status::Internal(msg);
}

Result<CublasHandle> CublasHandle::Create() {
  cublasHandle_t handle = nullptr;
  SKIFF_RETURN_IF_ERROR(FromCublasStatus(cublasCreate(&handle), "cublasCreate"));
  return CublasHandle(handle);
}

CublasHandle& CublasHandle::operator=(CublasHandle&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) cublasDestroy(handle_);
    handle_ = other.handle_;
    other.handle_ = nullptr;
  }
  return *this;
}

CublasHandle::~CublasHandle() {
  if (handle_ != nullptr) cublasDestroy(handle_);
}

Status Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
            const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
            int64_t ldc, const CublasHandle& handle, GemmPrecision precision, cudaStream_t stream) {
  if (m < 0 || n < 0 || k < 0) {
    return Status::InvalidArgument("Gemm: negative size (m=" + std::to_string(m) +
                                   ", n=" + std::to_string(n) + ", k=" + std::to_string(k) + ")");
  }
  if (handle.get() == nullptr) return Status::InvalidArgument("Gemm: empty CublasHandle");
  SKIFF_RETURN_IF_ERROR(CheckStride("A", trans_a ? k : m, trans_a ? m : k, lda));
  SKIFF_RETURN_IF_ERROR(CheckStride("B", trans_b ? n : k, trans_b ? k : n, ldb));
  SKIFF_RETURN_IF_ERROR(CheckStride("C", m, n, ldc));
  if (m == 0 || n == 0) return Status::Ok();
  if (k == 0) {
    ScaleMatrixKernel<<<GridFor(m * n, 256), 256, 0, stream>>>(m, n, beta, c, ldc);
    return CheckLaunch("ScaleMatrixKernel");
  }
  SKIFF_RETURN_IF_ERROR(FromCublasStatus(cublasSetStream(handle.get(), stream), "cublasSetStream"));
  // Column-major view: C^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m).
  return FromCublasStatus(
      cublasGemmEx(handle.get(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                   trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                   static_cast<int>(k), &alpha, b, CUDA_R_32F, static_cast<int>(ldb), a, CUDA_R_32F,
                   static_cast<int>(lda), &beta, c, CUDA_R_32F, static_cast<int>(ldc),
                   ComputeType(precision), CUBLAS_GEMM_DEFAULT),
      "cublasGemmEx");
}

}  // namespace skiff::cuda
