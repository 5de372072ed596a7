// The pieces of a step over several batches: ShardBatches (every batch of a pass on exactly one
// rank, step s = batches s*W .. s*W+W-1) and GradientSum (batch-order sums, mean into the grads),
// whose arithmetic is the rank-order all-reduce's.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "skiff/train/batch_plan.h"
#include "skiff/train/gradient_sum.h"

namespace skiff::train {
namespace {

TEST_CASE("ShardBatches gives every batch of the plan to exactly one rank, round robin") {
  std::vector<int64_t> nodes(23);
  std::iota(nodes.begin(), nodes.end(), 100);
  const auto plan = PlanBatches(nodes, 4, true, 7, 3);  // 6 batches, the last of 3
  for (int ranks : {1, 2, 4, 7}) {
    std::vector<int> taken(plan.size(), 0);
    std::vector<int64_t> seeds;
    for (int rank = 0; rank < ranks; ++rank) {
      std::vector<uint64_t> numbers;
      const auto mine = ShardBatches(plan, rank, ranks, &numbers);
      REQUIRE(mine.size() == numbers.size());
      for (size_t i = 0; i < mine.size(); ++i) {
        CHECK(numbers[i] % static_cast<uint64_t>(ranks) == static_cast<uint64_t>(rank));
        CHECK(mine[i] == plan[numbers[i]]);
        ++taken[numbers[i]];
        seeds.insert(seeds.end(), mine[i].begin(), mine[i].end());
      }
    }
    CHECK(std::all_of(taken.begin(), taken.end(), [](int n) { return n == 1; }));
    std::sort(seeds.begin(), seeds.end());
    CHECK(seeds == nodes);  // every seed once per epoch
  }
}

// Two parameters of 2 and 1 values whose gradients the test sets.
struct TwoParams {
  std::vector<float> a_data = {0, 0}, a_grad = {0, 0}, b_data = {0}, b_grad = {0};
  std::vector<model::Parameter> params() {
    return {{"a", {2}, a_data.data(), a_grad.data()}, {"b", {1}, b_data.data(), b_grad.data()}};
  }
  void SetGrad(float a0, float a1, float b0) {
    a_grad = {a0, a1};
    b_grad = {b0};
  }
};

TEST_CASE("GradientSum adds in batch order and stores the mean") {
  TwoParams p;
  GradientSum sum(3);
  p.SetGrad(1e8f, 1.0f, -2.0f);
  sum.Add(p.params());
  p.SetGrad(1.0f, 3.0f, 4.0f);
  sum.Add(p.params());
  p.SetGrad(-1e8f, 5.0f, 1.0f);
  sum.Add(p.params());
  CHECK(sum.batches() == 3);
  // (1e8 + 1) - 1e8 in float: the 1 is lost, as in one process adding batch after batch.
  const float a0 = (1e8f + 1.0f) + -1e8f;
  CHECK(sum.values()[0] == a0);
  CHECK(sum.values()[1] == 9.0f);
  CHECK(sum.values()[2] == 3.0f);
  sum.Store(p.params(), 3);
  CHECK(p.a_grad[0] == a0 * (1.0f / 3.0f));
  CHECK(p.a_grad[1] == 9.0f * (1.0f / 3.0f));
  CHECK(p.b_grad[0] == 1.0f);
  sum.Clear();
  CHECK(sum.batches() == 0);
  CHECK(sum.values()[1] == 0.0f);
}

TEST_CASE("GradientSum of one batch stores that batch's gradients unscaled") {
  TwoParams p;
  GradientSum sum(3);
  p.SetGrad(0.1f, -0.0f, 7.0f);
  sum.Add(p.params());
  p.SetGrad(9, 9, 9);
  sum.Store(p.params(), 1);
  CHECK(p.a_grad == std::vector<float>{0.1f, -0.0f});
  CHECK(p.b_grad == std::vector<float>{7.0f});
}

}  // namespace
}  // namespace skiff::train
