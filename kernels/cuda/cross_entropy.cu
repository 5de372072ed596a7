#include "kernels/cuda/cross_entropy.cuh"

#include <string>

#include "kernels/cuda/common.cuh"

namespace skiff::cuda {
namespace {

// Counts labelled rows: one block-stride pass, one atomicAdd per warp.
__global__ void CountLabelledKernel(int64_t rows, int64_t classes, const int32_t* labels,
                                    LossStats* stats) {
  int64_t count = 0;
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    count += (labels[r] >= 0 && labels[r] < classes) ? 1 : 0;
  }
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    count += __shfl_xor_sync(0xffffffffu, count, offset);
  }
  if (Lane() == 0 && count > 0) {
    atomicAdd(reinterpret_cast<unsigned long long*>(&stats->labelled_rows),
              static_cast<unsigned long long>(count));
  }
}

// Row max (value and first index) and log-sum-exp of one row, computed by a warp.
struct RowStats {
  float max;
  int argmax;
  float log_sum_exp;  // log(sum exp(x - max))
};

__device__ RowStats WarpRowStats(const float* row, int64_t classes) {
  const int lane = Lane();
  float best = -INFINITY;
  int best_idx = INT_MAX;
  for (int64_t c = lane; c < classes; c += kWarpSize) {
    if (row[c] > best) {
      best = row[c];
      best_idx = static_cast<int>(c);
    }
  }
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, best, offset);
    const int other_idx = __shfl_xor_sync(0xffffffffu, best_idx, offset);
    if (other > best || (other == best && other_idx < best_idx)) {
      best = other;
      best_idx = other_idx;
    }
  }
  float sum = 0.0f;
  for (int64_t c = lane; c < classes; c += kWarpSize) sum += __expf(row[c] - best);
  sum = WarpSum(sum);
  return {best, best_idx, logf(sum)};
}

// One warp per row (classes are tens, so a warp covers a row in one or two strides; rows are the
// parallel dimension). Reads labelled_rows written by CountLabelledKernel earlier on the stream.
__global__ void __launch_bounds__(kRowBlockThreads)
    SoftmaxCrossEntropyKernel(int64_t rows, int64_t classes, const float* __restrict__ logits,
                              const int32_t* __restrict__ labels, float* __restrict__ grad_logits,
                              LossStats* stats) {
  const int lane = Lane();
  const int64_t labelled = stats->labelled_rows;
  const float inv_labelled = labelled > 0 ? 1.0f / static_cast<float>(labelled) : 0.0f;
  for (int64_t r = GlobalWarp(); r < rows; r += WarpCount()) {
    const float* row = logits + r * classes;
    float* grad = grad_logits + r * classes;
    const int32_t label = labels[r];
    if (label < 0 || label >= classes) {
      for (int64_t c = lane; c < classes; c += kWarpSize) grad[c] = 0.0f;
      continue;
    }
    const RowStats s = WarpRowStats(row, classes);
    for (int64_t c = lane; c < classes; c += kWarpSize) {
      const float softmax = __expf(row[c] - s.max - s.log_sum_exp);
      grad[c] = (softmax - (c == label ? 1.0f : 0.0f)) * inv_labelled;
    }
    if (lane == 0) {
      const float loss = s.max + s.log_sum_exp - row[label];
      atomicAdd(&stats->loss_sum, loss);
      if (s.argmax == label)
        atomicAdd(reinterpret_cast<unsigned long long*>(&stats->correct), 1ull);
    }
  }
}

__global__ void FinishLossKernel(LossStats* stats) {
  stats->loss =
      stats->labelled_rows > 0 ? stats->loss_sum / static_cast<float>(stats->labelled_rows) : 0.0f;
}

__global__ void AddLossStatsKernel(const LossStats* stats, LossSums* sums) {
  sums->loss_sum += static_cast<double>(stats->loss_sum);
  sums->labelled_rows += stats->labelled_rows;
  sums->correct += stats->correct;
}

__global__ void __launch_bounds__(kRowBlockThreads)
    LogSoftmaxKernel(int64_t rows, int64_t classes, const float* logits, float* out) {
  const int lane = Lane();
  for (int64_t r = GlobalWarp(); r < rows; r += WarpCount()) {
    const RowStats s = WarpRowStats(logits + r * classes, classes);
    __syncwarp();  // every lane has read the row before any lane overwrites it (out may alias)
    for (int64_t c = lane; c < classes; c += kWarpSize) {
      out[r * classes + c] = logits[r * classes + c] - s.max - s.log_sum_exp;
    }
  }
}

Status CheckSizes(const char* op, int64_t rows, int64_t classes) {
  if (rows < 0 || classes < 0) {
    return Status::InvalidArgument(std::string(op) +
                                   ": negative size (rows=" + std::to_string(rows) +
                                   ", classes=" + std::to_string(classes) + ")");
  }
  return Status::Ok();
}

constexpr int kCountThreads = 256;

}  // namespace

Status SoftmaxCrossEntropy(int64_t rows, int64_t classes, const float* logits,
                           const int32_t* labels, float* grad_logits, LossStats* stats,
                           cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("SoftmaxCrossEntropy", rows, classes));
  if (stats == nullptr) return Status::InvalidArgument("SoftmaxCrossEntropy: stats is null");
  SKIFF_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(stats, 0, sizeof(LossStats), stream));
  if (rows == 0 || classes == 0) return Status::Ok();
  // Counting: a few blocks suffice (4 bytes per row); capped so the atomics stay few.
  CountLabelledKernel<<<static_cast<unsigned>(std::min<int64_t>(CeilDiv(rows, kCountThreads), 256)),
                        kCountThreads, 0, stream>>>(rows, classes, labels, stats);
  SKIFF_RETURN_IF_ERROR(CheckLaunch("CountLabelledKernel"));
  // One warp per row, 8 rows per block.
  SoftmaxCrossEntropyKernel<<<GridFor(rows, kWarpsPerRowBlock), kRowBlockThreads, 0, stream>>>(
      rows, classes, logits, labels, grad_logits, stats);
  SKIFF_RETURN_IF_ERROR(CheckLaunch("SoftmaxCrossEntropyKernel"));
  FinishLossKernel<<<1, 1, 0, stream>>>(stats);
  return CheckLaunch("FinishLossKernel");
}

Status AddLossStats(const LossStats* stats, LossSums* sums, cudaStream_t stream) {
  if (stats == nullptr || sums == nullptr) {
    return Status::InvalidArgument("AddLossStats: null stats or sums");
  }
  AddLossStatsKernel<<<1, 1, 0, stream>>>(stats, sums);
  return CheckLaunch("AddLossStatsKernel");
}

Status LogSoftmax(int64_t rows, int64_t classes, const float* logits, float* out,
                  cudaStream_t stream) {
  SKIFF_RETURN_IF_ERROR(CheckSizes("LogSoftmax", rows, classes));
  if (rows == 0 || classes == 0) return Status::Ok();
  LogSoftmaxKernel<<<GridFor(rows, kWarpsPerRowBlock), kRowBlockThreads, 0, stream>>>(rows, classes,
                                                                                      logits, out);
  return CheckLaunch("LogSoftmaxKernel");
}

}  // namespace skiff::cuda
