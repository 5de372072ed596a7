#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "skiff/pipeline/epoch_plan.h"

using namespace skiff;
using namespace skiff::pipeline;

namespace {

// k partitions of `per_part` nodes each; every third node is a training node (partition 1 has none,
// to cover empty partitions).
std::vector<std::vector<int64_t>> MakeTrainNodes(uint32_t k, int64_t per_part) {
  std::vector<std::vector<int64_t>> by_part(k);
  for (uint32_t p = 0; p < k; ++p) {
    if (p == 1) continue;
    for (int64_t v = p * per_part; v < (p + 1) * per_part; ++v) {
      if (v % 3 == 0) by_part[p].push_back(v);
    }
  }
  return by_part;
}

EpochPlan MustBuild(const std::vector<std::vector<int64_t>>& nodes, uint32_t c, uint64_t seed,
                    uint64_t epoch) {
  auto plan = EpochPlan::Build(nodes, {.buffer_capacity = c, .seed = seed, .epoch = epoch});
  REQUIRE(plan.ok());
  return std::move(plan).value();
}

uint32_t PartitionOf(int64_t node, int64_t per_part) {
  return static_cast<uint32_t>(node / per_part);
}

}  // namespace

TEST_CASE("epoch plan: every training node exactly once, only while its partition is resident") {
  const int64_t per_part = 100;
  for (uint32_t k : {1u, 2u, 5u, 16u}) {
    for (uint32_t c : {1u, 2u, 3u, 16u, 40u}) {
      const auto nodes = MakeTrainNodes(k, per_part);
      const EpochPlan plan = MustBuild(nodes, c, 7, 3);
      std::multiset<int64_t> seen;
      for (const BufferState& state : plan.states()) {
        CHECK(state.resident.size() == std::min(c, k));
        const std::set<uint32_t> resident(state.resident.begin(), state.resident.end());
        CHECK(resident.size() == state.resident.size());  // no duplicates
        for (int64_t v : state.train_nodes) {
          CHECK(resident.count(PartitionOf(v, per_part)) == 1);
          seen.insert(v);
        }
      }
      std::multiset<int64_t> expected;
      for (const auto& part : nodes) expected.insert(part.begin(), part.end());
      CHECK(seen == expected);
      CHECK(plan.num_train_nodes() == static_cast<int64_t>(expected.size()));

      // Batches cover the same nodes, never span states, and respect the batch size.
      int64_t batched = 0;
      for (size_t s = 0; s < plan.states().size(); ++s) {
        for (auto batch : plan.Batches(s, 32)) {
          CHECK(batch.size() >= 1);
          CHECK(batch.size() <= 32);
          batched += static_cast<int64_t>(batch.size());
        }
      }
      CHECK(batched == plan.num_train_nodes());
    }
  }
}

TEST_CASE("epoch plan: consecutive states differ by one swap; access sequence lists each once") {
  const auto nodes = MakeTrainNodes(12, 50);
  const EpochPlan plan = MustBuild(nodes, 4, 1, 0);
  REQUIRE(plan.states().size() == 12 - 4 + 1);
  for (size_t s = 1; s < plan.states().size(); ++s) {
    const BufferState& prev = plan.states()[s - 1];
    const BufferState& cur = plan.states()[s];
    std::vector<uint32_t> gone, added;
    std::set_difference(prev.resident.begin(), prev.resident.end(), cur.resident.begin(),
                        cur.resident.end(), std::back_inserter(gone));
    std::set_difference(cur.resident.begin(), cur.resident.end(), prev.resident.begin(),
                        prev.resident.end(), std::back_inserter(added));
    REQUIRE(gone.size() == 1);
    REQUIRE(added.size() == 1);
    CHECK(gone[0] == cur.evicted);
    CHECK(added[0] == cur.admitted);
  }
  std::vector<uint32_t> sequence = plan.PartitionAccessSequence();
  CHECK(sequence.size() == 12);
  std::sort(sequence.begin(), sequence.end());
  for (uint32_t p = 0; p < 12; ++p) CHECK(sequence[p] == p);
  // The first c entries are state 0's residents.
  const std::vector<uint32_t> seq = plan.PartitionAccessSequence();
  CHECK(std::vector<uint32_t>(seq.begin(), seq.begin() + 4) == plan.states()[0].resident);
}

TEST_CASE("epoch plan: deterministic per (seed, epoch), different across epochs and seeds") {
  const auto nodes = MakeTrainNodes(10, 200);
  auto flatten = [](const EpochPlan& plan) {
    std::vector<int64_t> order;
    for (const BufferState& state : plan.states()) {
      order.push_back(-1 - static_cast<int64_t>(state.admitted));
      order.insert(order.end(), state.train_nodes.begin(), state.train_nodes.end());
    }
    return order;
  };
  const auto a = flatten(MustBuild(nodes, 3, 42, 5));
  const auto b = flatten(MustBuild(nodes, 3, 42, 5));
  const auto other_epoch = flatten(MustBuild(nodes, 3, 42, 6));
  const auto other_seed = flatten(MustBuild(nodes, 3, 43, 5));
  CHECK(a == b);
  CHECK(a != other_epoch);
  CHECK(a != other_seed);
  // The access order itself changes across epochs (not only the node shuffle).
  std::set<std::vector<uint32_t>> orders;
  for (uint64_t epoch = 0; epoch < 5; ++epoch) {
    orders.insert(MustBuild(nodes, 3, 42, epoch).PartitionAccessSequence());
  }
  CHECK(orders.size() > 1);
}

TEST_CASE("epoch plan: a buffer holding every partition is one state, still shuffled per epoch") {
  const auto nodes = MakeTrainNodes(6, 40);
  for (uint32_t c : {6u, 7u, 100u}) {
    const EpochPlan plan = MustBuild(nodes, c, 9, 0);
    CHECK(plan.fully_resident());
    REQUIRE(plan.states().size() == 1);
    CHECK(plan.states()[0].resident == std::vector<uint32_t>{0, 1, 2, 3, 4, 5});
    CHECK(plan.states()[0].admitted == kNoPartition);
  }
  CHECK(MustBuild(nodes, 6, 9, 0).states()[0].train_nodes !=
        MustBuild(nodes, 6, 9, 1).states()[0].train_nodes);
}

TEST_CASE("epoch plan: bad arguments are errors") {
  const std::vector<std::vector<int64_t>> none;
  CHECK(EpochPlan::Build(none, {.buffer_capacity = 2}).status().code() ==
        StatusCode::kInvalidArgument);
  const auto nodes = MakeTrainNodes(3, 10);
  CHECK(EpochPlan::Build(nodes, {.buffer_capacity = 0}).status().code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("epoch plan: several rounds reload partitions, still one swap and exactly-once") {
  const int64_t per_part = 100;
  const auto nodes = MakeTrainNodes(12, per_part);
  auto built = EpochPlan::Build(nodes, {.buffer_capacity = 3, .seed = 4, .epoch = 2, .rounds = 4});
  REQUIRE(built.ok());
  const EpochPlan& plan = *built;
  const std::vector<uint32_t> sequence = plan.PartitionAccessSequence();
  CHECK(sequence.size() > 12);  // partitions come back
  std::set<uint32_t> distinct(sequence.begin(), sequence.end());
  CHECK(distinct.size() == 12);
  std::multiset<int64_t> seen;
  for (size_t s = 0; s < plan.states().size(); ++s) {
    const BufferState& state = plan.states()[s];
    CHECK(state.resident.size() == 3);
    if (s > 0) {
      const BufferState& prev = plan.states()[s - 1];
      std::vector<uint32_t> gone;
      std::set_difference(prev.resident.begin(), prev.resident.end(), state.resident.begin(),
                          state.resident.end(), std::back_inserter(gone));
      REQUIRE(gone.size() == 1);
      CHECK(gone[0] == state.evicted);
      CHECK(std::binary_search(state.resident.begin(), state.resident.end(), state.admitted));
      CHECK_FALSE(std::binary_search(prev.resident.begin(), prev.resident.end(), state.admitted));
    }
    for (int64_t v : state.train_nodes) {
      CHECK(std::binary_search(state.resident.begin(), state.resident.end(),
                               PartitionOf(v, per_part)));
      seen.insert(v);
    }
  }
  std::multiset<int64_t> expected;
  for (const auto& part : nodes) expected.insert(part.begin(), part.end());
  CHECK(seen == expected);
}

TEST_CASE(
    "epoch plan: partition count advice keeps the buffer fraction, asks for enough resident") {
  // Everything resident, or already enough resident partitions: no change, no advice.
  CHECK(RecommendedPartitionCount(16, 16) == 16);
  CHECK(RecommendedPartitionCount(16, 20) == 16);
  CHECK(RecommendedPartitionCount(64, kMinMixingResidentPartitions) == 64);
  CHECK(RecommendedPartitionCount(256, 69) == 256);
  CHECK(PartitionCountAdvice(16, 16).empty());
  CHECK(PartitionCountAdvice(64, 17).empty());
  // 3 of 16 resident (a 25% buffer with one slot loading): ceil(16 * 16 / 3) = 86 keeps 3/16 of the
  // partitions resident, which is 16.125 >= 16.
  CHECK(RecommendedPartitionCount(16, 3) == 86);
  CHECK(RecommendedPartitionCount(8, 1) == 8 * kMinMixingResidentPartitions);
  CHECK(RecommendedPartitionCount(32, 8) == 64);
  for (uint32_t k : {2u, 5u, 16u, 100u}) {
    for (uint32_t c = 1; c < k; ++c) {
      const uint32_t r = RecommendedPartitionCount(k, c);
      CHECK(r >= k);
      // The recommended count holds at least kMin.. partitions at the same buffer fraction.
      if (c < kMinMixingResidentPartitions) CHECK(uint64_t{r} * c >= uint64_t{k} * 16);
    }
  }
  const std::string advice = PartitionCountAdvice(16, 3);
  CHECK(advice.find("3 of 16") != std::string::npos);
  CHECK(advice.find("-k 86") != std::string::npos);
}
