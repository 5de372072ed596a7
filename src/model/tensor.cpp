#include <cmath>

#include "src/model/layer.h"

namespace skiff::model {

Tensor::Tensor(std::string tensor_name, std::vector<int64_t> tensor_shape, float fill)
    : name(std::move(tensor_name)), shape(std::move(tensor_shape)) {
  int64_t size = 1;
  for (int64_t d : shape) size *= d;
  data.assign(static_cast<size_t>(size), fill);
  grad.assign(static_cast<size_t>(size), 0.0f);
}

Parameter Tensor::AsParameter() {
  Parameter p;
  p.name = name;
  p.shape = shape;
  p.data = data.data();
  p.grad = grad.data();
  return p;
}

void Tensor::GlorotUniform(int64_t fan_in, int64_t fan_out, std::mt19937_64& rng) {
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  for (float& value : data) {
    // 24 random bits -> [0, 1): the same sequence on every platform (unlike the std
    // distributions, whose algorithms are implementation-defined).
    const double unit = static_cast<double>(rng() >> 40) * (1.0 / 16777216.0);
    value = static_cast<float>((2.0 * unit - 1.0) * limit);
  }
}

float* EnsureSize(std::vector<float>& buffer, int64_t size) {
  if (static_cast<int64_t>(buffer.size()) < size) {
    buffer = std::vector<float>();  // release first: the old contents are not kept
    buffer.resize(static_cast<size_t>(size + size / 8));
  }
  return buffer.data();
}

}  // namespace skiff::model
