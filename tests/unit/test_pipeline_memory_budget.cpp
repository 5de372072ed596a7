#include <doctest/doctest.h>

#include "skiff/pipeline/memory_budget.h"

using namespace skiff;
using namespace skiff::pipeline;

namespace {
MemoryBudgetInputs Inputs() {
  MemoryBudgetInputs in;
  in.num_nodes = 100000;
  in.split_nodes = 50000;
  in.feature_dim = 64;
  in.partition_slot_bytes = 4 << 20;
  in.pool_fixed_bytes = 4 << 20;
  in.num_partitions = 16;
  in.num_parameters = 50000;
  in.max_layer_width = 128;
  in.batch_size = 256;
  in.fanouts = {10, 5};
  in.in_flight_batches = 4;
  return in;
}
}  // namespace

TEST_CASE("memory budget: batch bounds follow the fanouts and are capped by the node count") {
  MemoryBudgetInputs in = Inputs();
  int64_t nodes = 0, edges = 0;
  BatchBounds(in, &nodes, &edges);
  CHECK(nodes == 256 + 2560 + 12800);
  CHECK(edges == 2560 + 12800);
  in.num_nodes = 1000;
  BatchBounds(in, &nodes, &edges);
  CHECK(nodes == 1000);
  in.fanouts = {-1};
  in.max_degree = 7;
  in.num_nodes = 100000;
  BatchBounds(in, &nodes, &edges);
  CHECK(edges == 256 * 7);
}

TEST_CASE("memory budget: slots are what is left, capped at the partition count") {
  MemoryBudgetInputs in = Inputs();
  in.budget_bytes = 1ull << 30;
  auto plan = PlanMemory(in);
  REQUIRE(plan.ok());
  CHECK(plan->pool_slots == 16);
  CHECK(plan->fully_resident);
  CHECK(plan->fixed_bytes + plan->pool_bytes <= in.budget_bytes);

  // Just enough for the fixed part plus 5 slots.
  in.budget_bytes = plan->fixed_bytes + in.pool_fixed_bytes + 5 * in.partition_slot_bytes + 100;
  plan = PlanMemory(in);
  REQUIRE(plan.ok());
  CHECK(plan->pool_slots == 5);
  CHECK_FALSE(plan->fully_resident);
  CHECK(plan->fixed_bytes + plan->pool_bytes <= in.budget_bytes);
  CHECK(plan->Describe().find("5 partition slots") != std::string::npos);
}

TEST_CASE("memory budget: a budget too small is refused with the minimum it needs") {
  MemoryBudgetInputs in = Inputs();
  in.budget_bytes = 1 << 20;
  auto plan = PlanMemory(in);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == StatusCode::kResourceExhausted);
  CHECK(plan.status().message().find("needs at least") != std::string::npos);
  // The minimum it names is enough.
  in.budget_bytes = 1ull << 30;
  auto big = PlanMemory(in);
  REQUIRE(big.ok());
  in.budget_bytes = big->fixed_bytes + in.pool_fixed_bytes + 2 * in.partition_slot_bytes;
  auto exact = PlanMemory(in);
  REQUIRE(exact.ok());
  CHECK(exact->pool_slots == 2);
  in.budget_bytes -= 1;
  CHECK_FALSE(PlanMemory(in).ok());
}
