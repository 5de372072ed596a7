#include "kernels/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>

#include "skiff/status.h"

namespace skiff::cpu {

// Serial over rows: rows x classes is small next to the layers (a batch of seeds times the class
// count), and one pass keeps the loss sum in a fixed order.
float SoftmaxCrossEntropy(int64_t rows, int64_t classes, const float* logits, const int32_t* labels,
                          float* grad_logits, int64_t* correct) {
  SKIFF_CHECK(rows >= 0 && classes > 0);
  int64_t labelled = 0;
  for (int64_t row = 0; row < rows; ++row) {
    SKIFF_CHECK_MSG(labels[row] == -1 || (labels[row] >= 0 && labels[row] < classes),
                    "label out of range [0, classes) and not -1");
    if (labels[row] >= 0) ++labelled;
  }
  const double inv_labelled = labelled > 0 ? 1.0 / static_cast<double>(labelled) : 0.0;
  double loss_sum = 0.0;
  int64_t correct_count = 0;
  for (int64_t row = 0; row < rows; ++row) {
    const float* z = logits + row * classes;
    float* g = grad_logits + row * classes;
    const int32_t label = labels[row];
    if (label < 0) {
      std::fill(g, g + classes, 0.0f);
      continue;
    }
    int64_t argmax = 0;
    for (int64_t c = 1; c < classes; ++c) {
      if (z[c] > z[argmax]) argmax = c;
    }
    const double max_logit = z[argmax];
    double sum_exp = 0.0;
    for (int64_t c = 0; c < classes; ++c)
      sum_exp += std::exp(static_cast<double>(z[c]) - max_logit);
    const double log_sum_exp = max_logit + std::log(sum_exp);
    loss_sum += log_sum_exp - z[label];
    for (int64_t c = 0; c < classes; ++c) {
      const double softmax = std::exp(static_cast<double>(z[c]) - log_sum_exp);
      g[c] = static_cast<float>((softmax - (c == label ? 1.0 : 0.0)) * inv_labelled);
    }
    if (argmax == label) ++correct_count;
  }
  if (correct != nullptr) *correct = correct_count;
  return static_cast<float>(loss_sum * inv_labelled);
}

void LogSoftmax(int64_t rows, int64_t classes, const float* logits, float* out) {
  SKIFF_CHECK(rows >= 0 && classes > 0);
  for (int64_t row = 0; row < rows; ++row) {
    const float* z = logits + row * classes;
    float* o = out + row * classes;
    const double max_logit = *std::max_element(z, z + classes);
    double sum_exp = 0.0;
    for (int64_t c = 0; c < classes; ++c)
      sum_exp += std::exp(static_cast<double>(z[c]) - max_logit);
    const double log_sum_exp = max_logit + std::log(sum_exp);
    for (int64_t c = 0; c < classes; ++c) o[c] = static_cast<float>(z[c] - log_sum_exp);
  }
}

}  // namespace skiff::cpu
