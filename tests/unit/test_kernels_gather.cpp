#include <doctest/doctest.h>

#include <vector>

#include "kernels/cpu/gather.h"

using namespace skiff;

TEST_CASE(
    "kernels: GatherRows copies rows, ScatterAddRows adds with duplicates, ScatterRows puts") {
  const int64_t dim = 3;
  std::vector<float> src = {0, 1, 2, 10, 11, 12, 20, 21, 22};
  std::vector<int64_t> idx = {2, 0, 2};
  std::vector<float> dst(9, -1.0f);
  cpu::GatherRows(src.data(), dim, idx.data(), 3, dst.data());
  CHECK(dst == std::vector<float>{20, 21, 22, 0, 1, 2, 20, 21, 22});
  std::vector<float> acc(9, 1.0f);
  cpu::ScatterAddRows(dst.data(), dim, idx.data(), 3, acc.data());
  CHECK(acc == std::vector<float>{1, 2, 3, 1, 1, 1, 41, 43, 45});
  cpu::GatherRows(src.data(), dim, idx.data(), 0, nullptr);  // empty
  // ScatterRows undoes a gather by distinct indices and leaves other rows alone.
  const std::vector<int64_t> distinct = {2, 0};
  std::vector<float> put(9, -1.0f);
  cpu::ScatterRows(src.data(), dim, distinct.data(), 2, put.data());
  CHECK(put == std::vector<float>{10, 11, 12, -1, -1, -1, 0, 1, 2});
}
