// CUDA log-softmax cross-entropy: the GPU mirror of kernels/cpu/cross_entropy.h.
//
// Difference from the CPU signature: the CPU returns the mean loss and writes *correct; here both
// land in a device-resident LossStats (so the op never synchronises the stream -- the caller copies
// the 24 bytes back when it wants to log them). grad_logits has the CPU semantics exactly.
//
// Errors: InvalidArgument for negative sizes or a null stats pointer; Internal from the runtime.
// Labels are trusted to be in [0, classes) or -1 (out-of-range labels are ignored like -1 on the
// device rather than asserted). Thread safety: stateless; calls on different streams independent.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "skiff/status.h"

namespace skiff::cuda {

struct LossStats {
  float loss = 0;             // mean loss over labelled rows (0 when none)
  float loss_sum = 0;         // sum over labelled rows (internal accumulator)
  int64_t labelled_rows = 0;  // rows whose label is not -1
  int64_t correct = 0;        // labelled rows whose argmax equals the label
};

// Totals over many batches, kept on the device (the host reads them once per pass).
struct LossSums {
  double loss_sum = 0;  // sum of per-row losses
  int64_t labelled_rows = 0;
  int64_t correct = 0;
};

// `stats` is device memory; it is overwritten.
Status SoftmaxCrossEntropy(int64_t rows, int64_t classes, const float* logits,
                           const int32_t* labels, float* grad_logits, LossStats* stats,
                           cudaStream_t stream);
// *sums += *stats (both device memory; one thread). InvalidArgument for null pointers.
Status AddLossStats(const LossStats* stats, LossSums* sums, cudaStream_t stream);
// Row-wise log-softmax; out may alias logits.
Status LogSoftmax(int64_t rows, int64_t classes, const float* logits, float* out,
                  cudaStream_t stream);

}  // namespace skiff::cuda
