// Log-softmax + cross-entropy over rows of logits (rows x classes).
// Rows whose label is -1 are ignored. Returns the mean loss over labelled rows (0 when none) and
// writes grad_logits (rows x classes, overwritten) = (softmax - onehot) / labelled_rows, zero rows
// for unlabelled ones. Labels must be in [0, classes) or -1 (asserted). Also counts correct
// predictions (argmax == label) into *correct when non-null.
#pragma once
#include <cstdint>

namespace skiff::cpu {
float SoftmaxCrossEntropy(int64_t rows, int64_t classes, const float* logits,
                          const int32_t* labels, float* grad_logits, int64_t* correct);
// Row-wise log-softmax (for predictions): out may alias logits.
void LogSoftmax(int64_t rows, int64_t classes, const float* logits, float* out);
}  // namespace skiff::cpu
