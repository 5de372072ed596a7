// StepAccumulator: which batches make a step, when a step ends, and its mean -- in one process
// (the batch count not known ahead), over W replicated ranks (bitwise one process's steps of W * A
// batches, ranks without a batch in the last round included), and over owned partitions (weighted
// parts, all-reduced per step).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "skiff/dist/communicator.h"
#include "skiff/train/step_accumulator.h"

namespace skiff::train {
namespace {

constexpr int64_t kValues = 3;

// Batch b's gradients: values of very different magnitudes, so that adding them in another order
// gives other floats.
std::vector<float> BatchGradient(int64_t b) {
  const float x = static_cast<float>(b + 1);
  return {std::pow(10.0f, static_cast<float>(b % 5) * 2.0f) / x, 0.1f * x - 0.3f, -1.0f / (x * x)};
}

// One parameter of kValues values; records the gradient of every update.
struct Recorder {
  std::vector<float> data = std::vector<float>(kValues, 0.0f);
  std::vector<float> grad = std::vector<float>(kValues, 0.0f);
  std::vector<std::vector<float>> updates;
  StepAccumulator::Hooks hooks() {
    return {.params =
                [this] {
                  return std::vector<model::Parameter>{{"w", {kValues}, data.data(), grad.data()}};
                },
            .update =
                [this] {
                  updates.push_back(grad);
                  return Status::Ok();
                }};
  }
};

// What one process's steps of `per_step` batches over batches 0 .. n-1 update with.
std::vector<std::vector<float>> OneProcessUpdates(int64_t n, int per_step, bool known) {
  Recorder r;
  StepAccumulator steps(StepAccumulator::Kind::kOneProcess, kValues, per_step, nullptr, r.hooks());
  steps.BeginPass(known ? n : -1);
  for (int64_t b = 0; b < n; ++b) {
    r.grad = BatchGradient(b);
    REQUIRE(steps.Add(b).ok());
  }
  REQUIRE(steps.EndPass().ok());
  CHECK(steps.steps() == (n + per_step - 1) / per_step);
  return r.updates;
}

TEST_CASE("StepAccumulator in one process: steps of `accumulate` batches, the last one shorter") {
  const std::vector<std::vector<float>> updates = OneProcessUpdates(7, 3, /*known=*/false);
  REQUIRE(updates.size() == 3);
  for (int s = 0; s < 3; ++s) {
    CAPTURE(s);
    const int64_t first = 3 * s, count = s < 2 ? 3 : 1;
    std::vector<float> expect = BatchGradient(first);
    for (int64_t b = first + 1; b < first + count; ++b) {
      const std::vector<float> g = BatchGradient(b);
      for (int64_t i = 0; i < kValues; ++i) expect[i] += g[i];
    }
    if (count > 1) {
      for (float& v : expect) v *= 1.0f / static_cast<float>(count);
    }
    CHECK(updates[s] == expect);  // bitwise: batch order, then the mean
  }
  CHECK(OneProcessUpdates(7, 3, /*known=*/true) == updates);
  CHECK(OneProcessUpdates(6, 3, /*known=*/false).size() == 2);  // no empty trailing step
}

TEST_CASE("StepAccumulator over replicated ranks steps as one process over W * A batches") {
  for (const auto& [ranks, accumulate, batches] :
       std::vector<std::tuple<int, int, int64_t>>{{2, 1, 5}, {2, 2, 7}, {3, 2, 8}, {3, 1, 2}}) {
    CAPTURE(ranks);
    CAPTURE(accumulate);
    CAPTURE(batches);
    auto comms = dist::CreateThreadCommunicators(ranks, {});
    std::vector<Recorder> recorders(static_cast<size_t>(ranks));
    std::vector<Status> results(static_cast<size_t>(ranks), Status::Ok());
    std::vector<std::thread> threads;
    for (int rank = 0; rank < ranks; ++rank) {
      threads.emplace_back([&, rank] {
        Recorder& r = recorders[static_cast<size_t>(rank)];
        StepAccumulator steps(StepAccumulator::Kind::kReplicated, kValues, accumulate,
                              comms[static_cast<size_t>(rank)].get(), r.hooks());
        steps.BeginPass(batches);
        Status st = Status::Ok();
        for (int64_t b = rank; b < batches && st.ok(); b += ranks) {
          r.grad = BatchGradient(b);
          st = steps.Add(b);
        }
        if (st.ok()) st = steps.EndPass();
        results[static_cast<size_t>(rank)] = st;
      });
    }
    for (auto& t : threads) t.join();
    const auto expect = OneProcessUpdates(batches, ranks * accumulate, /*known=*/true);
    for (int rank = 0; rank < ranks; ++rank) {
      CAPTURE(rank);
      CHECK(results[static_cast<size_t>(rank)].ok());
      CHECK(recorders[static_cast<size_t>(rank)].updates == expect);  // bitwise, every rank
    }
  }
}

TEST_CASE("StepAccumulator over owned partitions: weighted parts summed per step of plan batches") {
  // Two ranks, three plan batches, accumulate 2: rank 0 owns all of batch 0, rank 1 all of batch
  // 2, and batch 1 is split 1/4 : 3/4. Steps: batches {0, 1}, then {2}.
  constexpr int kRanks = 2;
  auto comms = dist::CreateThreadCommunicators(kRanks, {});
  const std::vector<std::vector<float>> weights = {{1.0f, 0.25f, 0.0f}, {0.0f, 0.75f, 1.0f}};
  std::vector<Recorder> recorders(kRanks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] {
      Recorder& r = recorders[static_cast<size_t>(rank)];
      StepAccumulator steps(StepAccumulator::Kind::kOwned, kValues, 2,
                            comms[static_cast<size_t>(rank)].get(), r.hooks());
      steps.BeginPass(3);
      for (int64_t b = 0; b < 3; ++b) {
        const float w = weights[static_cast<size_t>(rank)][static_cast<size_t>(b)];
        r.grad = BatchGradient(b);
        SKIFF_CHECK(steps.AddWeighted(w > 0, w).ok());
      }
      SKIFF_CHECK(steps.EndPass().ok());
      SKIFF_CHECK(steps.steps() == 2);
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(recorders[0].updates.size() == 2);
  const auto g0 = BatchGradient(0), g1 = BatchGradient(1), g2 = BatchGradient(2);
  for (int64_t i = 0; i < kValues; ++i) {
    CAPTURE(i);
    CHECK(recorders[0].updates[0][i] ==
          doctest::Approx((g0[i] + g1[i]) / 2).epsilon(1e-6));  // ranks' parts of batch 1
    CHECK(recorders[0].updates[1][i] == doctest::Approx(g2[i]).epsilon(1e-6));
  }
  CHECK(recorders[1].updates == recorders[0].updates);  // the same step on every rank
}

}  // namespace
}  // namespace skiff::train
