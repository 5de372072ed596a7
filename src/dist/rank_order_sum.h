// The ordered sum every all-reduce of the communicators computes (dist/communicator.h): the ranks'
// vectors, received as bytes indexed by rank, added in rank order starting from rank 0's, into
// `values`. The caller has checked that every part holds values.size() elements.
#pragma once

#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace skiff::dist {

template <typename T>
void SumInRankOrder(const std::vector<std::string>& parts, std::span<T> values) {
  std::vector<T> sum(values.size());
  std::memcpy(sum.data(), parts[0].data(), values.size_bytes());
  for (size_t r = 1; r < parts.size(); ++r) {
    const auto* other = reinterpret_cast<const T*>(parts[r].data());
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += other[i];
  }
  std::memcpy(values.data(), sum.data(), values.size_bytes());
}

}  // namespace skiff::dist
