// RowSlots (skiff/model/row_slots.h), the host index of the CUDA model's row cache, checked against
// a simulated device: every uploaded row is written into its slot, and after each batch every input
// must find its own row in the slot it was given.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "skiff/model/row_slots.h"

using namespace skiff;
using model::RowSlots;

namespace {

// What the device's cache holds: the node whose row each slot has (-1: nothing yet).
struct SimulatedCache {
  explicit SimulatedCache(int64_t capacity) : row_of(static_cast<size_t>(capacity), -1) {}

  // Assigns `ids`, "uploads" the missed rows and checks that every input reads its own row.
  // Returns the number of misses.
  size_t Run(RowSlots& slots, const std::vector<int64_t>& ids) {
    std::vector<int64_t> slot_of, missing;
    auto assigned = slots.Assign(ids, &slot_of, &missing);
    REQUIRE(assigned.ok());
    REQUIRE(*assigned);
    REQUIRE(slot_of.size() == ids.size());
    for (const int64_t i : missing)
      row_of[static_cast<size_t>(slot_of[static_cast<size_t>(i)])] = ids[static_cast<size_t>(i)];
    std::set<int64_t> distinct_slots;
    for (size_t i = 0; i < ids.size(); ++i) {
      CHECK(row_of[static_cast<size_t>(slot_of[i])] == ids[i]);
      distinct_slots.insert(slot_of[i]);
    }
    CHECK(distinct_slots.size() == std::set<int64_t>(ids.begin(), ids.end()).size());
    return missing.size();
  }

  std::vector<int64_t> row_of;
};

std::vector<int64_t> Range(int64_t first, int64_t count) {
  std::vector<int64_t> v(static_cast<size_t>(count));
  std::iota(v.begin(), v.end(), first);
  return v;
}

}  // namespace

TEST_CASE("RowSlots: a row is uploaded once while batches keep using it") {
  RowSlots slots(100, 10);
  SimulatedCache cache(10);
  CHECK(cache.Run(slots, {3, 7, 9}) == 3);
  CHECK(cache.Run(slots, {9, 3, 7}) == 0);  // all hits, any order
  CHECK(cache.Run(slots, {3, 4}) == 1);
  // A node repeated in a batch shares one slot and is uploaded once.
  CHECK(cache.Run(slots, {50, 50, 3}) == 1);
  CHECK(slots.misses() == 5);
  CHECK(slots.hits() == 3 + 1 + 2);
}

TEST_CASE("RowSlots: eviction never takes a slot of the batch being assigned") {
  // Capacity equals the batch: every slot of the first batch must be reused for the second's hits,
  // and the second batch's misses can only take the first batch's unused slots.
  RowSlots slots(1000, 8);
  SimulatedCache cache(8);
  CHECK(cache.Run(slots, Range(0, 8)) == 8);
  CHECK(cache.Run(slots, {7, 6, 100, 101, 102, 103, 104, 105}) == 6);
  CHECK(cache.Run(slots, Range(200, 8)) == 8);  // a whole new batch evicts everything
  CHECK(cache.Run(slots, Range(200, 8)) == 0);
}

TEST_CASE("RowSlots: CLOCK keeps a working set that fits and gives a second chance") {
  RowSlots slots(10000, 64);
  SimulatedCache cache(64);
  const std::vector<int64_t> hot = Range(0, 32);
  CHECK(cache.Run(slots, hot) == 32);
  // Cold batches that each touch 16 new nodes, with the hot set used in between: the hot rows were
  // referenced since the hand last passed, so the cold ones are evicted first.
  for (int round = 0; round < 20; ++round) {
    CHECK(cache.Run(slots, Range(1000 + 16 * round, 16)) == 16);
    CHECK(cache.Run(slots, hot) == 0);
  }
}

TEST_CASE("RowSlots: a batch larger than the cache is declined and changes nothing") {
  RowSlots slots(100, 4);
  SimulatedCache cache(4);
  CHECK(cache.Run(slots, {1, 2, 3}) == 3);
  std::vector<int64_t> slot_of, missing;
  auto declined = slots.Assign(Range(10, 5), &slot_of, &missing);
  REQUIRE(declined.ok());
  CHECK_FALSE(*declined);
  CHECK(missing.empty());
  CHECK(cache.Run(slots, {1, 2, 3}) == 0);
  CHECK(slots.misses() == 3);
}

TEST_CASE("RowSlots: a node out of range is InvalidArgument, before anything changes") {
  RowSlots slots(100, 4);
  SimulatedCache cache(4);
  CHECK(cache.Run(slots, {1, 2}) == 2);
  std::vector<int64_t> slot_of, missing;
  for (const int64_t bad : {int64_t{100}, int64_t{-1}}) {
    auto refused = slots.Assign(std::vector<int64_t>{2, 3, bad}, &slot_of, &missing);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == StatusCode::kInvalidArgument);
    CHECK(refused.status().message().find(std::to_string(bad)) != std::string::npos);
  }
  CHECK(missing.empty());
  CHECK(cache.Run(slots, {1, 2}) == 0);
}

TEST_CASE("RowSlots: skewed random batches always read their own rows") {
  // Power-law node popularity, batches of up to the capacity, many evictions.
  const int64_t num_nodes = 5000, capacity = 700;
  RowSlots slots(num_nodes, capacity);
  SimulatedCache cache(capacity);
  std::mt19937_64 rng(7);
  std::vector<double> weight(static_cast<size_t>(num_nodes));
  for (size_t v = 0; v < weight.size(); ++v) weight[v] = 1.0 / (1.0 + static_cast<double>(v));
  std::discrete_distribution<int64_t> popular(weight.begin(), weight.end());
  size_t misses = 0, rows = 0;
  for (int batch = 0; batch < 300; ++batch) {
    const auto size = static_cast<size_t>(1 + rng() % capacity);
    std::vector<int64_t> ids;
    for (size_t i = 0; i < size; ++i) ids.push_back(popular(rng));
    misses += cache.Run(slots, ids);
    rows += ids.size();
  }
  CHECK(slots.hits() + slots.misses() == rows);
  CHECK(slots.misses() == misses);
  CHECK(misses < rows / 2);  // popular rows stay: the cache serves most reads
}

TEST_CASE("RowSlots: Clear forgets every row, so each is uploaded again") {
  RowSlots slots(100, 4);
  SimulatedCache cache(4);
  CHECK(cache.Run(slots, {1, 2, 3}) == 3);
  slots.Clear();
  CHECK(cache.Run(slots, {3, 2, 1, 0}) == 4);
  CHECK(cache.Run(slots, {0, 1, 2, 3}) == 0);
}

TEST_CASE("RowSlots: host bytes") { CHECK(RowSlots::HostBytes(1000, 10) == 4000 + 80); }
