// Dense GEMM on the GPU through cuBLAS: the mirror of kernels/cpu/gemm.h (row-major,
// C = alpha * op(A) * op(B) + beta * C, lda/ldb/ldc row strides in elements), with the cuBLAS
// handle and a precision choice before the trailing stream.
//
// Row-major over column-major: a row-major M x N matrix is the column-major N x M transpose, so
// C^T = op(B)^T * op(A)^T is one column-major GEMM with A and B swapped and m and n swapped -- no
// copies. All three precisions go through cublasGemmEx with fp32 inputs and outputs:
//   kFp32  CUBLAS_COMPUTE_32F            (bitwise-stable IEEE fp32; the default)
//   kTf32  CUBLAS_COMPUTE_32F_FAST_TF32  (tensor cores, 10-bit mantissa inputs, fp32 accumulate)
//   kBf16  CUBLAS_COMPUTE_32F_FAST_16BF  (tensor cores, bf16 inputs, fp32 accumulate)
//
// Errors: InvalidArgument for negative sizes, strides shorter than a row, or sizes above INT_MAX;
// Internal (with cuBLAS's status name) for cuBLAS failures.
// Thread safety: a CublasHandle may be used by one host thread at a time (cuBLAS's rule); Gemm
// binds the handle to `stream` on every call.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "skiff/status.h"

namespace skiff::cuda {

enum class GemmPrecision : int { kFp32 = 0, kTf32 = 1, kBf16 = 2 };

// Owns one cublasHandle_t (move-only).
class CublasHandle {
 public:
  // Returns the handle, or Unavailable/Internal when cuBLAS cannot initialise (no device).
  static Result<CublasHandle> Create();
  CublasHandle() = default;
  CublasHandle(CublasHandle&& other) noexcept : handle_(other.handle_) { other.handle_ = nullptr; }
  CublasHandle& operator=(CublasHandle&& other) noexcept;
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle();

  cublasHandle_t get() const { return handle_; }

 private:
  explicit CublasHandle(cublasHandle_t handle) : handle_(handle) {}
  cublasHandle_t handle_ = nullptr;
};

// Converts a cuBLAS status into a Status naming the call.
Status FromCublasStatus(cublasStatus_t status, const char* what);

Status Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
            const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
            int64_t ldc, const CublasHandle& handle, GemmPrecision precision, cudaStream_t stream);

}  // namespace skiff::cuda
