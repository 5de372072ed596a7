#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

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
  in.model = {.in_dim = 64, .hidden = 128, .num_classes = 8, .num_parameters = 50000};
  in.batch_size = 256;
  in.fanouts = {10, 5};
  in.max_in_flight_batches = 4;
  return in;
}
}  // namespace

TEST_CASE("memory budget: degree profile means cap at the fanout and weight by degree") {
  // Half the nodes have degree 2, half degree 20.
  const DegreeProfile p = DegreeProfile::Build(10, [](int64_t v) { return v % 2 ? 20 : 2; });
  CHECK(p.NodeMean(-1) == doctest::Approx(11.0));
  CHECK(p.NodeMean(5) == doctest::Approx(3.5));  // (2 + 5) / 2
  // Edge-weighted: a node of degree 20 is reached 10x as often as one of degree 2.
  CHECK(p.EdgeMean(-1) == doctest::Approx((2.0 * 2 + 20.0 * 20) / 22));
  CHECK(p.EdgeMean(5) == doctest::Approx((2.0 * 2 + 20.0 * 5) / 22));
  // Degrees above the exact histogram still cap at the fanout.
  const DegreeProfile big = DegreeProfile::Uniform(4, 10000);
  CHECK(big.NodeMean(15) == doctest::Approx(15.0));
  CHECK(big.EdgeMean(-1) == doctest::Approx(10000.0));
}

TEST_CASE("memory budget: the expected batch follows the fanouts and deduplicates") {
  // A huge graph: hardly any duplicates, so the batch is close to the product of fanouts.
  const DegreeProfile huge = DegreeProfile::Uniform(int64_t{1} << 40, 50);
  BatchShape s = EstimateBatch(huge, 256, {10, 5});
  CHECK(s.seeds == 256);
  CHECK(s.dst[1] == 256);        // the seeds
  CHECK(s.edges[1] == 256 * 5);  // 5 each
  CHECK(s.src[1] == doctest::Approx(256 + 1280).epsilon(0.001));
  CHECK(s.dst[0] == s.src[1]);             // destinations are a prefix of sources
  CHECK(s.edges[0] == (256 + 1280) * 10);  // every node of hops 0..1 draws 10
  // New at hop 2: the draws beyond the 5 each node already drew for block 1.
  CHECK(s.input_nodes == doctest::Approx(256 + 1280 + (15360 - 1280)).epsilon(0.001));
  // A small graph saturates: never more nodes than it has.
  const DegreeProfile small = DegreeProfile::Uniform(1000, 50);
  s = EstimateBatch(small, 256, {10, 5});
  CHECK(s.input_nodes <= 1000);
  CHECK(s.input_nodes > 900);
  // Degrees below the fanout cap the draws.
  s = EstimateBatch(DegreeProfile::Uniform(int64_t{1} << 40, 3), 100, {10, 5});
  CHECK(s.edges[1] == 300);
  // Fanout 0 samples nothing: an MLP batch is its seeds.
  s = EstimateBatch(huge, 100, {0});
  CHECK(s.input_nodes == 100);
}

TEST_CASE("memory budget: slots are what is left after the expected batches, capped at k") {
  MemoryBudgetInputs in = Inputs();
  const DegreeProfile degrees = DegreeProfile::Uniform(in.num_nodes, 12);
  in.budget_bytes = 1ull << 30;
  auto plan = PlanMemory(in, degrees);
  REQUIRE(plan.ok());
  CHECK(plan->pool_slots == 16);
  CHECK(plan->fully_resident);
  CHECK(plan->planned_in_flight == 4);  // plenty of room: the pipeline's full capacity
  CHECK(plan->fixed_bytes + plan->pool_bytes <= in.budget_bytes);
  CHECK(plan->batch_allowance == 4 * plan->batch_bytes);

  // Tight: fewer batches in flight, never fewer than one; the budget still holds.
  const uint64_t one_batch = plan->batch_bytes;
  const uint64_t fixed_without_batches = plan->fixed_bytes - plan->batch_allowance;
  in.budget_bytes =
      fixed_without_batches + one_batch + in.pool_fixed_bytes + 5 * in.partition_slot_bytes + 100;
  plan = PlanMemory(in, degrees);
  REQUIRE(plan.ok());
  CHECK(plan->planned_in_flight == 1);
  CHECK(plan->pool_slots == 5);
  CHECK_FALSE(plan->fully_resident);
  CHECK(plan->fixed_bytes + plan->pool_bytes <= in.budget_bytes);
  CHECK(plan->Describe().find("5 partition slots") != std::string::npos);
  CHECK(plan->row_cache_bytes == 0);  // no cache asked for

  // With a row cache: half of what the batches leave goes to it, two slots at least remain.
  in.cache_row_bytes = 64 * 4 + 8;
  plan = PlanMemory(in, degrees);
  REQUIRE(plan.ok());
  CHECK(plan->row_cache_bytes > 0);
  CHECK(plan->pool_slots >= 2);
  CHECK(plan->pool_slots < 5);
  CHECK(plan->fixed_bytes + plan->pool_bytes <= in.budget_bytes);
  // Every partition fits: no cache.
  in.budget_bytes = 1ull << 30;
  plan = PlanMemory(in, degrees);
  REQUIRE(plan.ok());
  CHECK(plan->fully_resident);
  CHECK(plan->row_cache_bytes == 0);
}

TEST_CASE("memory budget: labels count only when the run holds them") {
  MemoryBudgetInputs in = Inputs();
  const DegreeProfile degrees = DegreeProfile::Uniform(in.num_nodes, 12);
  in.budget_bytes = 1ull << 30;
  auto metadata = [&](const MemoryPlan& plan) {
    REQUIRE(!plan.items.empty());
    return plan.items[0];
  };
  auto plan = PlanMemory(in, degrees);
  REQUIRE(plan.ok());
  const uint64_t n = static_cast<uint64_t>(in.num_nodes);
  const uint64_t ids = 8 * static_cast<uint64_t>(in.split_nodes);
  CHECK(metadata(*plan).name == "CSR offsets + labels + splits");
  CHECK(metadata(*plan).bytes == 8 * (n + 1) + 4 * n + ids);
  in.node_labels = false;  // link prediction: its IDs are in split_nodes, no labels
  auto link = PlanMemory(in, degrees);
  REQUIRE(link.ok());
  CHECK(metadata(*link).name == "CSR offsets + splits");
  CHECK(metadata(*link).bytes == 8 * (n + 1) + ids);
  CHECK(link->fixed_bytes + 4 * n == plan->fixed_bytes);
}

TEST_CASE("memory budget: every partition resident when they fit packed at their own sizes") {
  MemoryBudgetInputs in = Inputs();
  const DegreeProfile degrees = DegreeProfile::Uniform(in.num_nodes, 12);
  // The 16 partitions sum to 6 slots of the largest: a budget for 6 slots holds them all packed.
  // (One batch in flight at most, so that the batches' share does not depend on their size.)
  in.packed_pool_bytes = 6 * in.partition_slot_bytes;
  in.max_in_flight_batches = 1;
  in.budget_bytes = 1ull << 30;
  auto plan = PlanMemory(in, degrees);
  REQUIRE(plan.ok());
  const uint64_t fixed_without_batches = plan->fixed_bytes - plan->batch_allowance;
  const uint64_t one_batch = plan->batch_bytes;
  in.cache_row_bytes = 64 * 4 + 8;  // not wanted when everything is resident
  in.budget_bytes = fixed_without_batches + one_batch + in.pool_fixed_bytes + in.packed_pool_bytes;
  plan = PlanMemory(in, degrees);
  REQUIRE(plan.ok());
  CHECK(plan->fully_resident);
  CHECK(plan->pool_slots == 16);
  CHECK(plan->pool_bytes == in.packed_pool_bytes + in.pool_fixed_bytes);
  CHECK(plan->row_cache_bytes == 0);
  CHECK(plan->fixed_bytes + plan->pool_bytes <= in.budget_bytes);
  CHECK(plan->Describe().find("all 16 partitions") != std::string::npos);
  // A byte less: slots of the largest partition, five of them.
  --in.budget_bytes;
  plan = PlanMemory(in, degrees);
  REQUIRE(plan.ok());
  CHECK_FALSE(plan->fully_resident);
  CHECK(plan->pool_slots <= 5);
  CHECK(plan->fixed_bytes + plan->pool_bytes <= in.budget_bytes);
}

TEST_CASE("memory budget: refused only when one batch and two slots cannot fit") {
  MemoryBudgetInputs in = Inputs();
  const DegreeProfile degrees = DegreeProfile::Uniform(in.num_nodes, 12);
  in.budget_bytes = 1 << 20;
  auto plan = PlanMemory(in, degrees);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == StatusCode::kResourceExhausted);
  CHECK(plan.status().message().find("needs at least") != std::string::npos);
  CHECK(plan.status().message().find("--batch-size") != std::string::npos);
  // The minimum it names is enough, and one byte less is not.
  in.budget_bytes = 1ull << 30;
  auto big = PlanMemory(in, degrees);
  REQUIRE(big.ok());
  in.budget_bytes = big->fixed_bytes - big->batch_allowance + big->batch_bytes +
                    in.pool_fixed_bytes + 2 * in.partition_slot_bytes;
  auto exact = PlanMemory(in, degrees);
  REQUIRE(exact.ok());
  CHECK(exact->pool_slots == 2);
  CHECK(exact->planned_in_flight == 1);
  in.budget_bytes -= 1;
  CHECK_FALSE(PlanMemory(in, degrees).ok());
}

TEST_CASE("memory budget: evaluation batches are cut to need no more than a training batch") {
  MemoryBudgetInputs in = Inputs();
  const DegreeProfile degrees = DegreeProfile::Uniform(in.num_nodes, 12);
  in.budget_bytes = 1ull << 30;
  in.eval_batch_size = 4096;
  in.eval_fanouts = {-1, -1};  // every neighbour: a larger batch per seed
  auto plan = PlanMemory(in, degrees);
  REQUIRE(plan.ok());
  CHECK(plan->eval_batch_size < 4096);
  CHECK(plan->eval_batch_size >= 1);
  const BatchShape eval = EstimateBatch(degrees, plan->eval_batch_size, in.eval_fanouts);
  CHECK(BatchBytes(eval, in.feature_dim) + SamplerScratchBytes(eval) <= plan->batch_bytes);
  const BatchShape bigger = EstimateBatch(degrees, plan->eval_batch_size + 1, in.eval_fanouts);
  CHECK((BatchBytes(bigger, in.feature_dim) + SamplerScratchBytes(bigger) > plan->batch_bytes ||
         ActivationBytes(bigger, in.model) > ActivationBytes(plan->train_batch, in.model)));
  // Evaluation no larger than training keeps the requested size.
  in.eval_batch_size = 200;
  in.eval_fanouts = {5, 5};
  plan = PlanMemory(in, degrees);
  REQUIRE(plan.ok());
  CHECK(plan->eval_batch_size == 200);
}

TEST_CASE("memory budget: lists reached by a group count hubs once") {
  // Half the nodes have degree 2, half degree 20 (total degree 11 per node).
  const DegreeProfile p = DegreeProfile::Build(1000, [](int64_t v) { return v % 2 ? 20 : 2; });
  // Few draws: each reaches a new node, so the sum is draws x the edge-weighted mean degree.
  CHECK(p.ReachedDegreeSum(1.0) == doctest::Approx(p.EdgeMean(-1)).epsilon(0.01));
  CHECK(p.ReachedDegreeSum(0.0) == 0.0);
  // Many draws reach every node: the sum saturates at the total degree.
  CHECK(p.ReachedDegreeSum(1e7) == doctest::Approx(11000.0));
  const double some = p.ReachedDegreeSum(500), more = p.ReachedDegreeSum(1000);
  CHECK(some < more);
  CHECK(more < 2 * some);  // repeats: twice the draws reach less than twice the lists
}

TEST_CASE("memory budget: aggregated batches come in one group that fits with the next sampled") {
  MemoryBudgetInputs in = Inputs();
  in.aggregated_input = true;
  in.eval_batch_size = 256;
  in.eval_fanouts = {20, 20};
  in.partition_slot_bytes = 32 << 20;  // 16 partitions of 32 MiB: no budget here holds them all
  const DegreeProfile degrees = DegreeProfile::Uniform(in.num_nodes, 12);
  for (const uint64_t budget : {uint64_t{96} << 20, uint64_t{128} << 20, uint64_t{384} << 20}) {
    CAPTURE(budget);
    in.budget_bytes = budget;
    auto plan = PlanMemory(in, degrees);
    REQUIRE_MESSAGE(plan.ok(), plan.status().ToString());
    REQUIRE(plan->aggregated_input);
    CHECK(plan->gather_group >= 1);
    CHECK(plan->gather_group <= kMaxGatherGroup);
    // The allowance holds the group with its rows and the next group's sampled structures, and
    // keeps what is left over (less than one more batch: it would buy no useful partition slot);
    // a group at the maximum keeps a quarter more than the estimate.
    const uint64_t per_batch = plan->batch_bytes + plan->sampled_batch_bytes;
    const auto group = static_cast<uint64_t>(plan->gather_group);
    if (group > 1) CHECK(plan->batch_allowance >= group * per_batch);
    if (plan->gather_group < kMaxGatherGroup) {
      CHECK(plan->batch_allowance < (group + 1) * per_batch);
    } else {
      CHECK(plan->batch_allowance <= group * per_batch * 5 / 4);
    }
    CHECK(plan->sampled_batch_bytes <= SampledBatchBytes(plan->train_batch, degrees, 1));
    CHECK(plan->eval_gather_group >= 1);
    CHECK(plan->fixed_bytes + plan->pool_bytes <= budget);
    // The first group of each kind, cut from the estimate alone, keeps a fifth of the allowance
    // spare for batches larger than estimated.
    const GatherGroupSize first = plan->first_gather_group;
    CHECK(first.group >= 1);
    CHECK(first.group <= plan->gather_group);
    if (first.group > 1) {
      CHECK(static_cast<uint64_t>(first.group) * (plan->batch_bytes + first.sampled_batch_bytes) <=
            plan->batch_allowance * 4 / 5);
    }
    CHECK(plan->eval_first_gather_group.group >= 1);
    CHECK(plan->eval_first_gather_group.group <= plan->eval_gather_group);
  }
  // A larger budget never gets a smaller group.
  in.budget_bytes = 96 << 20;
  const int small = PlanMemory(in, degrees)->gather_group;
  in.budget_bytes = 384 << 20;
  CHECK(PlanMemory(in, degrees)->gather_group >= small);
}

TEST_CASE("memory budget: aggregated plans need no partition slot; the batches take its bytes") {
  MemoryBudgetInputs in = Inputs();
  in.min_resident_partitions = 1;
  in.partition_slot_bytes = 32 << 20;
  in.eval_batch_size = 256;
  in.eval_fanouts = {20, 20};
  const DegreeProfile degrees = DegreeProfile::Uniform(in.num_nodes, 12);
  in.budget_bytes = 96 << 20;
  auto rows = PlanMemory(in, degrees);
  REQUIRE_MESSAGE(rows.ok(), rows.status().ToString());
  CHECK(rows->pool_slots >= 1);  // rows: min_resident_partitions
  in.aggregated_input = true;
  auto aggregated = PlanMemory(in, degrees);
  REQUIRE_MESSAGE(aggregated.ok(), aggregated.status().ToString());
  REQUIRE(aggregated->aggregated_input);
  CHECK(aggregated->pool_slots == 0);
  CHECK(aggregated->pool_bytes == in.pool_fixed_bytes);
  // What a slot would have taken is the batches': within a slot of the whole budget.
  CHECK(aggregated->fixed_bytes + aggregated->pool_bytes <= in.budget_bytes);
  CHECK(aggregated->fixed_bytes + aggregated->pool_bytes + in.partition_slot_bytes >
        in.budget_bytes);
  // Each group reads the next group's seeds' lists ahead, out of the batches' bytes.
  CHECK(aggregated->lists_ahead_seeds >= aggregated->gather_group * in.batch_size);
  CHECK(aggregated->lists_ahead_bytes ==
        static_cast<uint64_t>(aggregated->lists_ahead_seeds) * ListsAheadBytesPerSeed(degrees));
  // Accepted down to one batch with no slot at all (and no lists read ahead).
  in.budget_bytes =
      aggregated->fixed_bytes - aggregated->lists_ahead_bytes - aggregated->batch_allowance +
      in.pool_fixed_bytes +
      std::max(aggregated->batch_bytes, SampledBatchBytes(aggregated->train_batch, degrees, 1));
  auto smallest = PlanMemory(in, degrees);
  REQUIRE_MESSAGE(smallest.ok(), smallest.status().ToString());
  CHECK(smallest->pool_slots == 0);
  CHECK(smallest->gather_group == 1);
  CHECK(smallest->lists_ahead_seeds == 0);
  in.budget_bytes -= 1;
  CHECK_FALSE(PlanMemory(in, degrees).ok());
}

TEST_CASE("memory budget: source degrees are counted only when the sampler records them") {
  const DegreeProfile degrees = DegreeProfile::Uniform(100000, 12);
  const BatchShape with = EstimateBatch(degrees, 256, {10, 5}, true);
  const BatchShape without = EstimateBatch(degrees, 256, {10, 5}, false);
  uint64_t sources = 0;
  for (const int64_t s : with.src) sources += static_cast<uint64_t>(s);
  CHECK(BatchBytes(with, 16) - BatchBytes(without, 16) == 8 * sources);
  // A sampled batch says whether it carries them; a shape with no blocks yet says nothing.
  sampler::MiniBatch batch;
  batch.input_nodes = {0, 1, 2};
  batch.seeds = {0};
  batch.blocks.resize(1);
  batch.blocks[0] = {
      .num_dst = 1, .num_src = 3, .indptr = {0, 2}, .indices = {1, 2}, .src_degree = {}};
  CHECK_FALSE(ShapeOf(batch).src_degrees);
  CHECK_FALSE(LargerShape(BatchShape{}, ShapeOf(batch)).src_degrees);
  batch.blocks[0].src_degree = {2, 1, 1};
  CHECK(ShapeOf(batch).src_degrees);
  CHECK(LargerShape(BatchShape{}, ShapeOf(batch)).src_degrees);
}

TEST_CASE("memory budget: the graph on the device leaves the host seeds, labels and no slot") {
  MemoryBudgetInputs in = Inputs();
  const DegreeProfile degrees = DegreeProfile::Uniform(in.num_nodes, 12);
  in.graph_on_device = true;
  in.budget_bytes = 64 << 20;
  CHECK(PlanMemory(in, degrees).status().code() == StatusCode::kInvalidArgument);  // no features
  in.features_on_device = true;
  in.eval_batch_size = 4096;
  auto plan = PlanMemory(in, degrees);
  REQUIRE_MESSAGE(plan.ok(), plan.status().ToString());
  CHECK(plan->pool_slots == 0);
  CHECK_FALSE(plan->fully_resident);
  CHECK(plan->pool_bytes == in.pool_fixed_bytes);
  CHECK(plan->eval_batch_size == 4096);  // nothing on the host grows with it but its seeds
  // A batch is its seeds and labels, twice (the batch, and its pinned staging).
  CHECK(plan->batch_bytes == 2 * 4096 * (8 + 4));
  CHECK(plan->batch_allowance == plan->batch_bytes * 4);
  CHECK(plan->Describe().find("device-sampled") != std::string::npos);
  // The smallest budget it accepts is its items and the pool's scratch; a byte less is refused,
  // naming the minimum.
  in.budget_bytes = plan->fixed_bytes + plan->pool_bytes;
  REQUIRE(PlanMemory(in, degrees).ok());
  --in.budget_bytes;
  const auto refused = PlanMemory(in, degrees);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kResourceExhausted);
  CHECK(refused.status().message().find("needs at least") != std::string::npos);
  // Far below what host sampling needs at the same setting.
  in.graph_on_device = false;
  in.budget_bytes = plan->fixed_bytes + plan->pool_bytes;
  CHECK_FALSE(PlanMemory(in, degrees).ok());
}

TEST_CASE("memory budget: a device model with the rows on the host stages them, not activations") {
  MemoryBudgetInputs in = Inputs();
  const DegreeProfile degrees = DegreeProfile::Uniform(in.num_nodes, 12);
  in.budget_bytes = 256 << 20;
  auto host = PlanMemory(in, degrees);
  REQUIRE_MESSAGE(host.ok(), host.status().ToString());
  in.device_compute = true;
  in.device_cache_rows = 30000;
  auto device = PlanMemory(in, degrees);
  REQUIRE_MESSAGE(device.ok(), device.status().ToString());
  auto item = [&](const MemoryPlan& plan, const std::string& name) -> const MemoryItem* {
    for (const MemoryItem& i : plan.items) {
      if (i.name.find(name) != std::string::npos) return &i;
    }
    return nullptr;
  };
  CHECK(item(*host, "activations") != nullptr);
  CHECK(item(*device, "activations") == nullptr);
  // Two pinned slots of structure and row slots (a quarter of growth), the rows' upload chunks,
  // and the cache's host index: the rows themselves are never staged whole.
  const auto inputs = static_cast<uint64_t>(device->train_batch.input_nodes);
  REQUIRE(inputs > 0);
  const MemoryItem* staging = item(*device, "structure, row slots");
  REQUIRE(staging != nullptr);
  CHECK(staging->bytes == 2 * (BatchBytes(device->train_batch, 0) + 16 * inputs) * 5 / 4);
  const MemoryItem* upload = item(*device, "row upload:");
  REQUIRE(upload != nullptr);
  CHECK(upload->bytes ==
        std::min<uint64_t>(kDeviceRowChunkBytes, 2 * inputs * 64 * 4 * 5 / 4) + 24 * inputs);
  const MemoryItem* index = item(*device, "row cache index");
  REQUIRE(index != nullptr);
  CHECK(index->bytes == 4 * 100000 + 8 * 30000);
  // Batches still hold their rows on the host until they are staged.
  CHECK(device->batch_held_bytes == host->batch_held_bytes);
  CHECK(device->batch_held_bytes == BatchBytes(device->train_batch, in.feature_dim));
  // No cache: no index.
  in.device_cache_rows = 0;
  auto uncached = PlanMemory(in, degrees);
  REQUIRE(uncached.ok());
  CHECK(item(*uncached, "row cache index") == nullptr);
  CHECK(uncached->fixed_bytes + index->bytes == device->fixed_bytes);

  // Replicas on 3 GPUs (--gpus): each stages its own batches and indexes its own cache.
  in.device_cache_rows = 30000;
  in.device_replicas = 3;
  auto three = PlanMemory(in, degrees);
  REQUIRE_MESSAGE(three.ok(), three.status().ToString());
  CHECK(three->train_batch.input_nodes == device->train_batch.input_nodes);
  const MemoryItem* staging3 = item(*three, "structure, row slots");
  REQUIRE(staging3 != nullptr);
  CHECK(staging3->name.find("each of 3 device replicas") != std::string::npos);
  CHECK(staging3->bytes == 3 * staging->bytes);
  const MemoryItem* upload3 = item(*three, "row upload:");
  REQUIRE(upload3 != nullptr);
  CHECK(upload3->bytes == 3 * upload->bytes);
  const MemoryItem* index3 = item(*three, "row cache index");
  REQUIRE(index3 != nullptr);
  CHECK(index3->bytes == 3 * index->bytes);
  CHECK(three->fixed_bytes ==
        device->fixed_bytes + 2 * (staging->bytes + upload->bytes + index->bytes));
}

TEST_CASE("memory budget: activations computed in place need one hidden activation less") {
  const DegreeProfile degrees = DegreeProfile::Uniform(100000, 15);
  const BatchShape shape = EstimateBatch(degrees, 1024, {15, 10});
  ModelShape model{.in_dim = 128, .hidden = 256, .num_classes = 16, .num_parameters = 1000};
  for (const bool aggregated : {false, true}) {
    CAPTURE(aggregated);
    model.activation_in_place = false;
    const uint64_t separate = ActivationBytes(shape, model, aggregated);
    model.activation_in_place = true;
    const uint64_t in_place = ActivationBytes(shape, model, aggregated);
    // Two layers: only the first is hidden; its activation is dst[0] x hidden floats (x 9/8).
    const double activation = static_cast<double>(shape.dst[0]) * 256 * 4 * 9 / 8;
    CHECK(static_cast<double>(separate - in_place) == doctest::Approx(activation).epsilon(1e-6));
  }
}

namespace {
// The bytes of the plan's item whose name starts with `prefix` (0 when it has none).
uint64_t ItemBytes(const MemoryPlan& plan, const std::string& prefix) {
  for (const MemoryItem& item : plan.items) {
    if (item.name.rfind(prefix, 0) == 0) return item.bytes;
  }
  return 0;
}
}  // namespace

TEST_CASE("memory budget: micro-batches accept budgets whole batches cannot, and grow groups") {
  MemoryBudgetInputs in = Inputs();
  in.aggregated_input = true;
  in.batch_size = 1024;
  in.model = {.in_dim = 64, .hidden = 512, .num_classes = 8, .num_parameters = 50000};
  in.partition_slot_bytes = 32 << 20;
  const DegreeProfile degrees = DegreeProfile::Uniform(in.num_nodes, 12);
  auto smallest = [&](int micro_batches) {
    in.micro_batches = micro_batches;
    for (uint64_t mib = 8;; ++mib) {
      in.budget_bytes = mib << 20;
      if (PlanMemory(in, degrees).ok()) return in.budget_bytes;
    }
  };
  const uint64_t whole = smallest(1);
  const uint64_t in_parts = smallest(0);
  CHECK(in_parts < whole);
  // A budget refused even in parts names the minimum in the most parts.
  in.micro_batches = 0;
  in.budget_bytes = 4 << 20;
  auto refused = PlanMemory(in, degrees);
  REQUIRE(!refused.ok());
  CHECK(refused.status().message().find("1 of 8 micro-batches") != std::string::npos);
  in.budget_bytes = in_parts;
  in.micro_batches = 0;
  auto plan = PlanMemory(in, degrees);
  REQUIRE(plan.ok());
  CHECK(plan->micro_batches > 1);
  CHECK(plan->fixed_bytes + plan->pool_bytes <= in.budget_bytes);
  CHECK(ItemBytes(*plan, "micro-batch input rows and blocks") > 0);
  CHECK(ItemBytes(*plan, "activations, 1 of " + std::to_string(plan->micro_batches)) > 0);
  // A part's activations are those of a batch of its seeds.
  in.micro_batches = 4;
  in.budget_bytes = 0;
  auto four = PlanMemory(in, degrees);
  REQUIRE(four.ok());
  CHECK(four->micro_batches == 4);
  const BatchShape part = EstimateBatch(degrees, 256, in.fanouts);
  CHECK(ItemBytes(*four, "activations, 1 of 4") == ActivationBytes(part, in.model, false));
  // Evaluation batches in parts: each part within a training part's activations and input copy,
  // the batch as large as a whole-batch plan's or larger.
  in.eval_batch_size = 4096;
  in.eval_fanouts = {20, 20};
  in.budget_bytes = whole;
  in.micro_batches = 1;
  auto eval_whole = PlanMemory(in, degrees);
  in.micro_batches = 4;
  auto eval_parts = PlanMemory(in, degrees);
  REQUIRE((eval_whole.ok() && eval_parts.ok()));
  CHECK(eval_whole->eval_part_seeds == 0);
  CHECK(eval_parts->eval_part_seeds > 0);
  CHECK(eval_parts->eval_part_seeds <= eval_parts->eval_batch_size);
  CHECK(eval_parts->eval_batch_size >= eval_whole->eval_batch_size);
  const BatchShape eval_part = EstimateBatch(degrees, eval_parts->eval_part_seeds, in.eval_fanouts);
  CHECK(ActivationBytes(eval_part, in.model, eval_parts->aggregated_input) <=
        ItemBytes(*eval_parts, "activations, 1 of 4") +
            ItemBytes(*eval_parts, "micro-batch input rows and blocks"));
  in.eval_batch_size = 0;
  in.eval_fanouts.clear();
  // Between the two minimums, automatic parts give larger aggregated groups or none at all.
  for (const uint64_t budget : {whole, whole + (8 << 20), whole + (32 << 20)}) {
    CAPTURE(budget);
    in.budget_bytes = budget;
    in.micro_batches = 1;
    auto one = PlanMemory(in, degrees);
    in.micro_batches = 0;
    auto chosen = PlanMemory(in, degrees);
    REQUIRE((one.ok() && chosen.ok()));
    if (!one->aggregated_input) continue;
    CHECK(chosen->gather_group >= one->gather_group);
    if (chosen->micro_batches > 1) CHECK(chosen->gather_group > one->gather_group);
    CHECK(chosen->fixed_bytes + chosen->pool_bytes <= budget);
  }
  // Rows: whole batches wherever they fit.
  in.aggregated_input = false;
  in.micro_batches = 0;
  in.budget_bytes = smallest(1) + (1 << 20);
  in.micro_batches = 0;
  auto rows = PlanMemory(in, degrees);
  REQUIRE(rows.ok());
  CHECK(rows->micro_batches == 1);
  // A caller's own model computes whole batches whatever it asks for.
  in.external_model = true;
  in.micro_batches = 4;
  in.budget_bytes = 0;
  CHECK(PlanMemory(in, degrees)->micro_batches == 1);
}
