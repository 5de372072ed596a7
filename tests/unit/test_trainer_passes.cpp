// The Trainer over the out-of-core pipeline (`skiff train --memory`) against the Trainer in memory:
// with every partition resident the two must compute the same thing, epoch by epoch.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "skiff/dist/communicator.h"
#include "skiff/format/dataset.h"
#include "skiff/generate/generator.h"
#include "skiff/mutex.h"
#include "skiff/pipeline/epoch_runner.h"
#include "skiff/pipeline/input_aggregator.h"
#include "skiff/pipeline/resident_graph_source.h"
#include "skiff/pipeline/trainer_passes.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/storage/dataset_partition_source.h"
#include "skiff/train/trainer.h"
#include "tests/unit/test_scores.h"
#include "tests/unit/test_util.h"

using namespace skiff;

namespace {

// The pool options OutOfCore uses (its fine-read scratch), for budgets computed by hand.
storage::BufferPoolOptions OutOfCorePoolOptions(const format::Manifest& manifest) {
  storage::BufferPoolOptions o;
  o.fine_read_scratch_bytes = pipeline::OutOfCore::FineReadScratchBytes(manifest);
  return o;
}

std::unique_ptr<format::Dataset> Generated(const std::string& dir, int64_t num_nodes = 3000) {
  generate::GenerateOptions o;
  o.output = dir;
  o.num_nodes = num_nodes;
  o.avg_degree = 6;
  o.num_classes = 4;
  o.feature_dim = 16;
  o.seed = 11;
  o.threads = 1;
  REQUIRE(generate::GenerateDataset(o).ok());
  auto ds = format::Dataset::Open(dir);
  REQUIRE(ds.ok());
  return std::move(ds).value();
}

train::TrainOptions Options(const std::string& feature_norm) {
  train::TrainOptions t;
  t.model.kind = model::ModelKind::kSage;
  t.model.num_layers = 2;
  t.model.hidden_dim = 16;
  t.model.dropout = 0.3f;
  t.fanouts = {5, 3};
  t.eval_fanouts = {-1, -1};  // every neighbour: evaluation does not depend on batch cuts
  t.batch_size = 128;
  t.epochs = 3;
  t.seed = 5;
  t.sampler_threads = 2;
  t.show_progress = false;
  t.feature_norm = ParseName(train::kFeatureNormNames, "feature norm", feature_norm).value();
  return t;
}

// Out-of-core training at about the smallest budget that holds 3 partitions and one batch.
Result<std::unique_ptr<pipeline::OutOfCoreTraining>> OpenAtSmallestBudget(
    const format::Dataset* ds, const train::TrainOptions& t, bool aggregated) {
  auto ooc = pipeline::OpenOutOfCoreTraining(ds, t, 1ull << 30, pipeline::SamplingMode::kExact, 2,
                                             {.aggregated_input = aggregated});
  REQUIRE(ooc.ok());
  CHECK_FALSE((*ooc)->ooc->aggregated_input());  // every partition fits: rows
  const pipeline::MemoryPlan& big = (*ooc)->ooc->memory_plan();
  const uint64_t tight =
      big.fixed_bytes - big.batch_allowance + big.batch_bytes +
      storage::BufferPool::BudgetFor(*storage::DatasetPartitionSource::Open(ds, {}).value(), 3,
                                     OutOfCorePoolOptions(ds->manifest()));
  // Aggregated batches are smaller but add a read buffer: step up to the first accepted budget.
  Result<std::unique_ptr<pipeline::OutOfCoreTraining>> small = Status::Internal("unset");
  for (uint64_t budget = tight; budget < tight + (4ull << 20); budget += 16 << 10) {
    small = pipeline::OpenOutOfCoreTraining(ds, t, budget, pipeline::SamplingMode::kExact, 2,
                                            {.aggregated_input = aggregated});
    if (small.ok() || !aggregated) break;
  }
  return small;
}

// Aggregated, a little above the smallest budget: room for a replay's three batches, and an
// allowance that holds a few evaluation batches, so group sizes differ between the plan's estimate
// and the batches sampled (the dataset must be large enough that it then does not fit whole).
Result<std::unique_ptr<pipeline::OutOfCoreTraining>> OpenAboveSmallestBudget(
    const format::Dataset* ds, const train::TrainOptions& t) {
  auto smallest = OpenAtSmallestBudget(ds, t, true);
  REQUIRE_MESSAGE(smallest.ok(), smallest.status().ToString());
  return pipeline::OpenOutOfCoreTraining(
      ds, t, (*smallest)->ooc->memory_plan().budget_bytes + (2 << 20),
      pipeline::SamplingMode::kExact, 2, {.aggregated_input = true});
}

// The in-memory run of `t` on `ds`: what the pipelined runs must reproduce.
train::TrainSummary InMemoryRun(const format::Dataset& ds, const train::TrainOptions& t) {
  auto memory = train::LoadInMemory(ds);
  REQUIRE(memory.ok());
  auto trainer = train::Trainer::Create((*memory)->data, t);
  REQUIRE(trainer.ok());
  auto summary = (*trainer)->Run();
  REQUIRE_MESSAGE(summary.ok(), summary.status().ToString());
  return std::move(*summary);
}

// A training run of `t` on `ooc`'s data with `runner` as its pass runner (which must succeed).
train::TrainSummary TrainWith(const pipeline::OutOfCoreTraining& ooc, const train::TrainOptions& t,
                              const train::PassRunner& runner) {
  auto trainer = train::Trainer::Create(ooc.data, t);
  REQUIRE(trainer.ok());
  (*trainer)->SetPassRunner(runner);
  auto summary = (*trainer)->Run();
  REQUIRE_MESSAGE(summary.ok(), summary.status().ToString());
  return std::move(*summary);
}

}  // namespace

TEST_CASE("trainer passes: every partition resident reproduces the in-memory run epoch by epoch") {
  testing::TempDir dir;
  auto ds = Generated(dir / "g");
  for (const std::string norm : {"none", "row"}) {
    CAPTURE(norm);
    const train::TrainOptions t = Options(norm);
    auto memory = train::LoadInMemory(*ds);
    REQUIRE(memory.ok());
    if (norm == "row") (*memory)->features->NormalizeRows();
    auto in_memory = train::Trainer::Create((*memory)->data, t);
    REQUIRE(in_memory.ok());
    auto reference = (*in_memory)->Run();
    REQUIRE(reference.ok());

    auto ooc = pipeline::OpenOutOfCoreTraining(
        ds.get(), t, 1ull << 30, pipeline::SamplingMode::kExact, 2, {.aggregated_input = true});
    REQUIRE_MESSAGE(ooc.ok(), ooc.status().ToString());
    REQUIRE((*ooc)->ooc->fully_resident());
    auto trainer = train::Trainer::Create((*ooc)->data, t);
    REQUIRE(trainer.ok());
    (*trainer)->SetPassRunner(pipeline::MakeOutOfCorePassRunner(ooc->get(), t, false));
    auto pipelined = (*trainer)->Run();
    REQUIRE_MESSAGE(pipelined.ok(), pipelined.status().ToString());

    REQUIRE(reference->epochs.size() == 3);
    REQUIRE(pipelined->epochs.size() == 3);
    for (size_t e = 0; e < 3; ++e) {
      CAPTURE(e);
      CHECK(pipelined->epochs[e].loss == reference->epochs[e].loss);
      CHECK(pipelined->epochs[e].train_acc == reference->epochs[e].train_acc);
      CHECK(pipelined->epochs[e].valid_acc == reference->epochs[e].valid_acc);
      CHECK(pipelined->epochs[e].test_acc == reference->epochs[e].test_acc);
    }
    CHECK(reference->best_test_acc > 0.3);  // 4 classes: it learned something
  }
}

TEST_CASE("trainer passes: a budget far below the dataset reproduces the in-memory run too") {
  // Rows: the in-memory run bit for bit. Aggregated input (SAGE on the CPU): the same batches and
  // masks, each neighbour mean summed in node order rather than CSR order, so equal to rounding.
  for (const bool aggregated : {false, true}) {
    CAPTURE(aggregated);
    testing::TempDir dir;
    auto ds = Generated(dir / "g");
    train::TrainOptions t = Options("none");
    t.epochs = 2;
    // Find the smallest accepted budget from the refusal, then train there (every stage bounded).
    auto refused = pipeline::OpenOutOfCoreTraining(
        ds.get(), t, 64 << 10, pipeline::SamplingMode::kExact, 2, {.aggregated_input = aggregated});
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == StatusCode::kResourceExhausted);
    CHECK(refused.status().message().find("--batch-size") != std::string::npos);
    auto small = OpenAtSmallestBudget(ds.get(), t, aggregated);
    REQUIRE_MESSAGE(small.ok(), small.status().ToString());
    CHECK_FALSE((*small)->ooc->fully_resident());
    CHECK((*small)->ooc->aggregated_input() == aggregated);
    if (!aggregated) CHECK((*small)->ooc->memory_plan().planned_in_flight == 1);
    // Aggregated groups stream every row: at the smallest budget the pool keeps no slot.
    CHECK(((*small)->ooc->pool().num_slots() == 0) == aggregated);
    const train::TrainSummary summary =
        TrainWith(**small, t, pipeline::MakeOutOfCorePassRunner(small->get(), t, false));
    CHECK(summary.best_test_acc > 0.3);
    // Too few partitions resident to mix labels: training draws the in-memory batches (exact
    // sampling reads the rest), so the run is the in-memory one; evaluation takes every
    // neighbour, so its accuracy does not depend on how the plan groups nodes either.
    CHECK((*small)->ooc->uniform_training_order());
    const train::TrainSummary reference = InMemoryRun(*ds, t);
    REQUIRE(summary.epochs.size() == reference.epochs.size());
    for (size_t e = 0; e < reference.epochs.size(); ++e) {
      CAPTURE(e);
      const train::EpochMetrics& got = summary.epochs[e];
      const train::EpochMetrics& want = reference.epochs[e];
      if (aggregated) {
        CHECK(got.loss == doctest::Approx(want.loss).epsilon(1e-4));
        CHECK(got.valid_acc == doctest::Approx(want.valid_acc).epsilon(0.01));
        CHECK(got.test_acc == doctest::Approx(want.test_acc).epsilon(0.01));
      } else {
        CHECK(got.loss == want.loss);
        CHECK(got.valid_acc == want.valid_acc);
        CHECK(got.test_acc == want.test_acc);
      }
      CHECK(got.pipeline_json.find("\"fine_bytes_read\":0,") == std::string::npos);  // it read
      if (aggregated) CHECK(got.pipeline_json.find("\"partition_loads\":0,") != std::string::npos);
    }
  }
}

TEST_CASE(
    "trainer passes: steps over several batches through the pipeline are the in-memory ones") {
  // --accumulate in one process: the runner's batches, every `accumulate` of them a step. With
  // every partition resident and at a budget far below the dataset (rows, so bit for bit), the
  // in-memory run's steps -- which take their batches from a BatchStream.
  testing::TempDir dir;
  auto ds = Generated(dir / "g");
  train::TrainOptions t = Options("none");
  t.epochs = 2;
  t.accumulate = 3;
  const train::TrainSummary reference = InMemoryRun(*ds, t);
  train::TrainOptions single = t;
  single.accumulate = 1;
  CHECK(InMemoryRun(*ds, single).epochs[0].loss != reference.epochs[0].loss);  // it steps less
  auto resident = pipeline::OpenOutOfCoreTraining(ds.get(), t, 1ull << 30,
                                                  pipeline::SamplingMode::kExact, 2, {});
  REQUIRE_MESSAGE(resident.ok(), resident.status().ToString());
  auto small = OpenAtSmallestBudget(ds.get(), t, /*aggregated=*/false);
  REQUIRE_MESSAGE(small.ok(), small.status().ToString());
  CHECK_FALSE((*small)->ooc->fully_resident());
  // The step's gradient sum is planned (one float per parameter).
  bool planned = false;
  for (const auto& item : (*small)->ooc->memory_plan().items) {
    planned = planned || item.name.find("gradient sums") != std::string::npos;
  }
  CHECK(planned);
  for (pipeline::OutOfCoreTraining* ooc : {resident->get(), small->get()}) {
    CAPTURE(ooc->ooc->fully_resident());
    const train::TrainSummary got =
        TrainWith(*ooc, t, pipeline::MakeOutOfCorePassRunner(ooc, t, false));
    REQUIRE(got.epochs.size() == reference.epochs.size());
    for (size_t e = 0; e < reference.epochs.size(); ++e) {
      CAPTURE(e);
      CHECK(got.epochs[e].loss == reference.epochs[e].loss);
      CHECK(got.epochs[e].train_acc == reference.epochs[e].train_acc);
      CHECK(got.epochs[e].valid_acc == reference.epochs[e].valid_acc);
      CHECK(got.epochs[e].test_acc == reference.epochs[e].test_acc);
      CHECK_FALSE(got.epochs[e].pipeline_json.empty());  // through the runner
    }
  }
}

// A data-parallel run of `ranks` thread ranks, each with its own pipeline over `ds` (within
// `budget`, 0: every partition resident) fed its share of every pass: each rank's summary and
// last parameters.
struct RankRun {
  train::TrainSummary summary;
  std::vector<std::vector<float>> parameters;
};
std::vector<RankRun> RunRanksThroughPipelines(const format::Dataset* ds, train::TrainOptions t,
                                              int ranks, uint64_t budget) {
  auto comms = dist::CreateThreadCommunicators(ranks, {});
  t.world_size = ranks;
  std::vector<RankRun> runs(static_cast<size_t>(ranks));
  std::vector<std::string> errors(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      std::string& error = errors[static_cast<size_t>(rank)];
      auto ooc = budget > 0 ? OpenAtSmallestBudget(ds, t, /*aggregated=*/true)
                            : pipeline::OpenOutOfCoreTraining(ds, t, 1ull << 30,
                                                              pipeline::SamplingMode::kExact, 2,
                                                              {.aggregated_input = true});
      if (!ooc.ok()) return void(error = ooc.status().ToString());
      auto trainer = train::Trainer::Create((*ooc)->data, t);
      if (!trainer.ok()) return void(error = trainer.status().ToString());
      if (Status st = (*trainer)->SetCommunicator(comms[static_cast<size_t>(rank)].get());
          !st.ok()) {
        return void(error = st.ToString());
      }
      pipeline::AttachOutOfCore(trainer->get(), ooc->get(), t, false);
      auto summary = (*trainer)->Run();
      if (!summary.ok()) return void(error = summary.status().ToString());
      RankRun& run = runs[static_cast<size_t>(rank)];
      run.summary = std::move(*summary);
      for (const model::Parameter& p : (*trainer)->model().Parameters()) {
        run.parameters.emplace_back(p.data, p.data + p.size());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const std::string& error : errors) REQUIRE_MESSAGE(error.empty(), error);
  return runs;
}

TEST_CASE("trainer passes: data-parallel ranks fed by their own pipelines train as one process") {
  // Two ranks, each giving its pipeline its share of the plan (PassSpec::batch_numbers), compute
  // what one process computes with --accumulate 2 through its pipeline: bitwise the same model,
  // the same metrics -- with every partition resident, and at a budget far below the dataset.
  testing::TempDir dir;
  auto ds = Generated(dir / "g");
  train::TrainOptions t = Options("none");
  t.epochs = 2;
  t.accumulate = 2;
  auto one = pipeline::OpenOutOfCoreTraining(ds.get(), t, 1ull << 30,
                                             pipeline::SamplingMode::kExact, 2, {});
  REQUIRE_MESSAGE(one.ok(), one.status().ToString());
  auto trainer = train::Trainer::Create((*one)->data, t);
  REQUIRE(trainer.ok());
  (*trainer)->SetPassRunner(pipeline::MakeOutOfCorePassRunner(one->get(), t, false));
  auto reference = (*trainer)->Run();
  REQUIRE_MESSAGE(reference.ok(), reference.status().ToString());
  std::vector<std::vector<float>> parameters;
  for (const model::Parameter& p : (*trainer)->model().Parameters()) {
    parameters.emplace_back(p.data, p.data + p.size());
  }
  train::TrainOptions per_rank = t;
  per_rank.accumulate = 1;
  for (const uint64_t budget : {uint64_t{0}, uint64_t{1}}) {
    CAPTURE(budget);
    const std::vector<RankRun> runs = RunRanksThroughPipelines(ds.get(), per_rank, 2, budget);
    for (const RankRun& run : runs) {
      REQUIRE(run.summary.epochs.size() == reference->epochs.size());
      for (size_t e = 0; e < reference->epochs.size(); ++e) {
        CAPTURE(e);
        const train::EpochMetrics& got = run.summary.epochs[e];
        const train::EpochMetrics& want = reference->epochs[e];
        CHECK(got.train_acc == want.train_acc);
        CHECK(got.valid_acc == want.valid_acc);
        CHECK(got.test_acc == want.test_acc);
        CHECK(got.loss == doctest::Approx(want.loss).epsilon(1e-9));
        CHECK_FALSE(got.pipeline_json.empty());  // through the pipeline
      }
      if (budget == 0) CHECK(run.parameters == parameters);  // bitwise
    }
  }
}

TEST_CASE("trainer passes: a device model with the rows on the host -- partitions keep them") {
  // What skiff train plans when the features do not fit on the device (ComputeSite::device without
  // features_on_device). The CPU model stands in for the device model: it takes the batches' rows
  // as the CUDA model does then. In memory nothing may be read fine-grained -- with the site of a
  // model holding the features, the partitions are adjacency only and every row is read from disk
  // (what an in-memory cuda run did when its features did not fit) -- and the run is the in-memory
  // one bit for bit; at a budget far below the data as well.
  testing::TempDir dir;
  auto ds = Generated(dir / "g");
  train::TrainOptions t = Options("none");
  t.epochs = 2;
  const train::TrainSummary reference = InMemoryRun(*ds, t);
  const pipeline::ComputeSite rows_on_host{.device = true, .device_cache_rows = 500};

  // With 8 threads the rows are gathered by two threads (RowGatherThreads), still in batch order.
  CHECK(pipeline::RowGatherThreads(rows_on_host, 8) == 2);
  CHECK(pipeline::RowGatherThreads(rows_on_host, 64) == pipeline::kMaxRowGatherThreads);
  CHECK(pipeline::RowGatherThreads(rows_on_host, 2) == 1);
  CHECK(pipeline::RowGatherThreads({}, 64) == 1);  // the CPU model
  CHECK(pipeline::RowGatherThreads({.device = true, .features_on_device = true}, 64) == 1);
  auto resident = pipeline::OpenOutOfCoreTraining(ds.get(), t, 1ull << 30,
                                                  pipeline::SamplingMode::kExact, 8, rows_on_host);
  REQUIRE_MESSAGE(resident.ok(), resident.status().ToString());
  REQUIRE((*resident)->ooc->fully_resident());
  const train::TrainSummary got =
      TrainWith(**resident, t, pipeline::MakeOutOfCorePassRunner(resident->get(), t, false));
  testing::CheckSameScores(got, reference, testing::ValidLoss::kBatchedOtherwise);
  for (const train::EpochMetrics& e : got.epochs) {
    CHECK(e.pipeline_json.find("\"fine_bytes_read\":0,") != std::string::npos);
    CHECK(nlohmann::json::parse(e.pipeline_json)["stages"]["gather"]["threads"] == 2);
  }
  auto adjacency_only = pipeline::OpenOutOfCoreTraining(
      ds.get(), t, 1ull << 30, pipeline::SamplingMode::kExact, 2, {.features_on_device = true});
  REQUIRE(adjacency_only.ok());
  const train::TrainSummary fine = TrainWith(
      **adjacency_only, t, pipeline::MakeOutOfCorePassRunner(adjacency_only->get(), t, false));
  CHECK(fine.epochs[0].pipeline_json.find("\"fine_bytes_read\":0,") == std::string::npos);

  // The smallest budget this plan accepts: no activations on the host, the rows' upload chunks
  // and the cache's index instead.
  uint64_t budget = 64 << 10;
  Result<std::unique_ptr<pipeline::OutOfCoreTraining>> small = Status::Internal("unset");
  for (; budget < (1ull << 30); budget += budget / 16) {
    small = pipeline::OpenOutOfCoreTraining(ds.get(), t, budget, pipeline::SamplingMode::kExact, 8,
                                            rows_on_host);
    if (small.ok()) break;
  }
  REQUIRE_MESSAGE(small.ok(), small.status().ToString());
  CHECK_FALSE((*small)->ooc->fully_resident());
  const std::string plan = (*small)->ooc->memory_plan().Describe();
  CHECK(plan.find("activations") == std::string::npos);
  CHECK(plan.find("row upload:") != std::string::npos);
  CHECK(plan.find("device row cache index") != std::string::npos);
  // The budget admits one batch at a time: one gather thread, not the two of 8 threads.
  REQUIRE((*small)->ooc->memory_plan().planned_in_flight == 1);
  const train::TrainSummary tight =
      TrainWith(**small, t, pipeline::MakeOutOfCorePassRunner(small->get(), t, false));
  testing::CheckSameScores(tight, reference, testing::ValidLoss::kBatchedOtherwise);
  CHECK(nlohmann::json::parse(tight.epochs[0].pipeline_json)["stages"]["gather"]["threads"] == 1);
}

TEST_CASE(
    "trainer passes: features held on the device -- batches carry IDs, partitions adjacency") {
  testing::TempDir dir;
  auto ds = Generated(dir / "g");
  train::TrainOptions t = Options("none");
  t.micro_batches = 1;  // whole batches: micro-batches would shrink the host's activations
  auto memory = train::LoadInMemory(*ds);
  REQUIRE(memory.ok());
  // The smallest budget the rows plan accepts; the device plan needs less (no rows, no
  // activations), and its partitions hold adjacency only.
  uint64_t rows_minimum = 64 << 10;
  while (!pipeline::OpenOutOfCoreTraining(ds.get(), t, rows_minimum, pipeline::SamplingMode::kExact,
                                          2, {})
              .ok()) {
    rows_minimum += 16 << 10;
  }
  auto device = pipeline::OpenOutOfCoreTraining(ds.get(), t, rows_minimum - (16 << 10),
                                                pipeline::SamplingMode::kExact, 2,
                                                {.features_on_device = true});
  REQUIRE_MESSAGE(device.ok(), device.status().ToString());
  const pipeline::MemoryPlan& plan = (*device)->ooc->memory_plan();
  for (const pipeline::MemoryItem& item : plan.items) {
    CHECK(item.name.find("activations") == std::string::npos);
  }
  // What the model uploads: every row, read fine-grained (the partitions hold none of them).
  const int64_t n = ds->manifest().num_nodes, dim = ds->manifest().feature_dim;
  std::vector<int64_t> all(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) all[static_cast<size_t>(v)] = v;
  std::vector<float> from_disk(static_cast<size_t>(n * dim)), in_memory(from_disk.size());
  REQUIRE((*device)->data.features->Gather(all, from_disk.data()).ok());
  REQUIRE((*memory)->features->Gather(all, in_memory.data()).ok());
  CHECK(from_disk == in_memory);
  // A pass that does not gather: the same batches, without rows.
  auto runner = pipeline::MakeOutOfCorePassRunner(device->get(), t, false);
  auto record = [&](bool gather, std::vector<std::vector<int64_t>>* inputs) {
    train::PassSpec pass{&(*device)->data.train, true, 1, 0, t.batch_size};
    pass.gather_features = gather;
    return runner(
        pass,
        [&](train::PreparedBatch& b) {
          CHECK(b.features.empty() == !gather);
          inputs->push_back(b.batch.input_nodes);
          return Status::Ok();
        },
        nullptr);
  };
  std::vector<std::vector<int64_t>> with_rows, ids_only;
  REQUIRE(record(true, &with_rows).ok());
  REQUIRE(record(false, &ids_only).ok());
  CHECK(ids_only == with_rows);
  CHECK_FALSE(ids_only.empty());
}

TEST_CASE("input aggregator: grouped, streamed reads from disk give each batch its own aggregate") {
  testing::TempDir dir;
  auto ds = Generated(dir / "g");
  auto memory = train::LoadInMemory(*ds);
  REQUIRE(memory.ok());
  pipeline::OutOfCoreOptions o;
  o.memory_bytes = 0;  // the pool holds every partition; the ResidentSet below pins none
  o.fanouts = {5, 3};
  o.batch_size = 64;
  auto ooc = pipeline::OutOfCore::Create(ds.get(), o);
  REQUIRE_MESSAGE(ooc.ok(), ooc.status().ToString());
  const pipeline::ResidentSet nothing_resident(
      std::vector<std::shared_ptr<const storage::PartitionPin>>((*ooc)->num_partitions()));

  const sampler::NeighborSampler sampler(*(*memory)->graph, {5, 3});
  const int64_t dim = ds->manifest().feature_dim;
  for (const bool training : {false, true}) {
    CAPTURE(training);
    std::vector<sampler::MiniBatch> batches(4);
    std::vector<std::vector<float>> dst_rows(4), aggregated(4);
    std::vector<pipeline::AggregationTarget> targets;
    for (int b = 0; b < 4; ++b) {
      std::vector<int64_t> seeds;
      for (int64_t v = 0; v < 64; ++v) seeds.push_back((b * 997 + v * 31) % 3000);
      std::sort(seeds.begin(), seeds.end());
      seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
      REQUIRE(sampler.Sample(seeds, 100 + b, &batches[b]).ok());
      const auto nd = static_cast<size_t>(batches[b].blocks[0].num_dst);
      dst_rows[b].assign(nd * dim, -7.0f);
      aggregated[b].assign(nd * dim, -7.0f);
      targets.push_back({&batches[b], dst_rows[b].data(), aggregated[b].data(), 40u + b});
    }
    const pipeline::AggregationOptions options{
        .kind = model::InputAggregation::kMean, .dropout = 0.4f, .training = training};
    REQUIRE(pipeline::GatherAggregated((*ooc)->graph(), nothing_resident, targets, options).ok());
    CHECK((*ooc)->graph().counters().fine_rows > 0);  // it read from disk
    for (int b = 0; b < 4; ++b) {
      CAPTURE(b);
      const sampler::MiniBatch& batch = batches[b];
      std::vector<float> rows(batch.input_nodes.size() * dim);
      REQUIRE((*memory)->features->Gather(batch.input_nodes, rows.data()).ok());
      std::vector<float> want_dst(dst_rows[b].size()), want_agg(aggregated[b].size());
      model::AggregateFirstLayerInput(batch.blocks[0], rows.data(), dim, 0.4f, training, 40u + b,
                                      want_dst.data(), want_agg.data());
      for (size_t i = 0; i < want_dst.size(); ++i) {
        REQUIRE(dst_rows[b][i] == want_dst[i]);  // copied, same mask: exact
        // The same terms summed in another order: equal to rounding.
        REQUIRE(aggregated[b][i] == doctest::Approx(want_agg[i]).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("epoch runner: groups resized from the batches sampled gather the same aggregates") {
  testing::TempDir dir;
  auto ds = Generated(dir / "g");
  auto source = storage::DatasetPartitionSource::Open(ds.get(), {});
  REQUIRE(source.ok());
  const uint32_t k = (*source)->num_partitions();
  storage::BufferPoolOptions pool_options = OutOfCorePoolOptions(ds->manifest());
  pool_options.budget_bytes = storage::BufferPool::BudgetFor(**source, k, pool_options);
  auto pool = storage::BufferPool::Create(source->get(), pool_options);
  REQUIRE(pool.ok());
  pipeline::BufferedGraph graph(source->get(), pool->get(), pipeline::SamplingMode::kExact);
  std::vector<int64_t> nodes(600);
  for (size_t i = 0; i < nodes.size(); ++i) nodes[i] = static_cast<int64_t>(i * 5);
  auto plan = pipeline::EpochPlan::SingleState(k, k, nodes);
  REQUIRE(plan.ok());

  // The threads that sampled batch 0 and batch 1 (the first group's two halves when it has two).
  Mutex threads_mu;
  std::map<int64_t, std::thread::id> sampled_on;
  const pipeline::SampleGroupFn sample =
      [&](const pipeline::BatchGraph& view, std::span<const std::span<const int64_t>> seeds,
          std::span<const uint64_t> rng_seeds, std::span<sampler::MiniBatch* const> batches) {
        {
          MutexLock lock(&threads_mu);
          for (const uint64_t s : rng_seeds) {
            for (int64_t b = 0; b < 2; ++b) {
              if (s == pipeline::BatchSampleSeed(3, 0, 0, b)) {
                sampled_on[b] = std::this_thread::get_id();
              }
            }
          }
        }
        std::vector<int64_t> all;
        for (const auto s : seeds) all.insert(all.end(), s.begin(), s.end());
        pipeline::ResidentGraphSource src(view.graph(), view.resident(), all, 2);
        return sampler::NeighborSampler(src, {5, 3}).SampleGroup(seeds, rng_seeds, batches);
      };
  // Runs the pass with groups of 2 at first, then whatever `regroup` says; records each batch's
  // gathered input.
  auto run = [&](std::function<pipeline::GatherGroupSize(const pipeline::BatchShape&)> regroup,
                 std::vector<std::vector<float>>* out, int first_group = 2) {
    pipeline::EpochRunnerOptions o{.batch_size = 32, .seed = 3, .sample_threads = 1};
    o.aggregation = pipeline::AggregationOptions{
        .kind = model::InputAggregation::kMean, .dropout = 0.25f, .training = true};
    o.dropout_seed = [](int64_t index) { return static_cast<uint64_t>(index) * 7 + 1; };
    o.gather_group = first_group;
    o.regroup = std::move(regroup);
    pipeline::EpochRunner runner(&graph, std::move(o));
    out->clear();
    return runner.Run(*plan, sample, [&](pipeline::PreparedBatch& b) {
      REQUIRE(b.aggregated);
      REQUIRE(b.index == static_cast<int64_t>(out->size()));
      // Handed over condensed: block 0's sizes, and its destinations' ids.
      REQUIRE(b.batch.blocks[0].condensed());
      REQUIRE(static_cast<int64_t>(b.batch.input_nodes.size()) == b.batch.blocks[0].num_dst);
      REQUIRE(b.batch.blocks[0].num_src > b.batch.blocks[0].num_dst);
      out->emplace_back(b.features.begin(), b.features.end());
      return Status::Ok();
    });
  };
  std::vector<std::vector<float>> fixed, grown, varying, single;
  auto as_planned = run(nullptr, &fixed);
  REQUIRE_MESSAGE(as_planned.ok(), as_planned.status().ToString());
  CHECK(as_planned->last_group == 2);
  // The first group's two batches were sampled at once, on two threads.
  REQUIRE(sampled_on.size() == 2);
  CHECK(sampled_on[0] != sampled_on[1]);
  sampled_on.clear();
  auto one_by_one = run(nullptr, &single, 1);
  REQUIRE_MESSAGE(one_by_one.ok(), one_by_one.status().ToString());
  CHECK(sampled_on[0] == sampled_on[1]);  // groups of one: one sampler thread
  int64_t largest_input = 0;
  int grow_calls = 0;
  auto grow = run(
      [&](const pipeline::BatchShape& largest) {
        largest_input = largest.input_nodes;
        ++grow_calls;
        return pipeline::GatherGroupSize{6, 1};
      },
      &grown);
  REQUIRE_MESSAGE(grow.ok(), grow.status().ToString());
  CHECK(grow->first_group == 2);
  CHECK(grow->last_group == 6);
  CHECK(largest_input > 32);  // the shapes it was given are the sampled batches'
  // Every group after the first is cut at the resized size (one call per group sampled): 19
  // batches in groups of 2, 6, 6, 5 -- not 2, 2, 6, 6, 3, as when the second group was cut
  // before the first was sampled.
  CHECK(grow_calls == 4);
  // Sizes that shrink below the groups already cut, and grow again.
  int calls = 0;
  auto vary = run(
      [&](const pipeline::BatchShape&) {
        return pipeline::GatherGroupSize{1 + (++calls % 3), 1};
      },
      &varying);
  REQUIRE_MESSAGE(vary.ok(), vary.status().ToString());
  CHECK(calls > 3);
  // Grouping is the read schedule only: every batch gathers the same aggregate, bit for bit.
  REQUIRE(fixed.size() == 19);
  CHECK(single == fixed);
  CHECK(grown == fixed);
  CHECK(varying == fixed);
}

TEST_CASE("trainer passes: two node sets in one pass give the batches of two passes") {
  testing::TempDir dir;
  auto ds = Generated(dir / "g", 30000);
  train::TrainOptions t = Options("none");
  t.eval_batch_size = 32;
  auto ooc = OpenAboveSmallestBudget(ds.get(), t);
  REQUIRE(ooc.ok());
  REQUIRE((*ooc)->ooc->aggregated_input());
  const std::vector<int64_t>& valid = (*ooc)->data.valid;
  const std::vector<int64_t>& test = (*ooc)->data.test;
  REQUIRE(valid.size() % 32 != 0);  // else no batch could straddle the two sets
  // Per set: each batch's seeds, sample input and gathered features.
  struct Seen {
    std::vector<std::vector<int64_t>> seeds;
    std::vector<std::vector<float>> features;
  };
  auto run = [&](train::PassSpec pass, std::vector<Seen>* seen, int64_t* batches) {
    pass.aggregation = model::InputAggregation::kMean;
    std::string json;
    const Status status = pipeline::MakeOutOfCorePassRunner(ooc->get(), t, false)(
        pass,
        [&](train::PreparedBatch& b) {
          seen->resize(std::max(seen->size(), static_cast<size_t>(b.part) + 1));
          (*seen)[static_cast<size_t>(b.part)].seeds.push_back(b.batch.seeds);
          (*seen)[static_cast<size_t>(b.part)].features.emplace_back(b.features.begin(),
                                                                     b.features.end());
          return Status::Ok();
        },
        &json);
    REQUIRE_MESSAGE(status.ok(), status.ToString());
    *batches = nlohmann::json::parse(json)["batches"].get<int64_t>();
  };
  std::vector<Seen> apart, apart_test, together;
  int64_t valid_batches = 0, test_batches = 0, together_batches = 0;
  run(train::PassSpec{&valid, false, 1, 0, t.eval_batch_size}, &apart, &valid_batches);
  run(train::PassSpec{&test, false, 2, 0, t.eval_batch_size}, &apart_test, &test_batches);
  train::PassSpec both{&valid, false, 1, 0, t.eval_batch_size};
  both.more = {{&test, 2}};
  run(both, &together, &together_batches);
  // One pipeline pass over both sets (its gather groups may then span them, sharing reads).
  CHECK(together_batches == valid_batches + test_batches);
  REQUIRE(apart.size() == 1);
  REQUIRE(apart_test.size() == 1);
  apart.push_back(std::move(apart_test[0]));
  REQUIRE(together.size() == 2);
  for (size_t p = 0; p < 2; ++p) {
    CAPTURE(p);
    // Each set's batches, bit for bit: its own stream, no batch mixing the two sets.
    CHECK(together[p].seeds == apart[p].seeds);
    CHECK(together[p].features == apart[p].features);
  }
}

TEST_CASE("trainer passes: a pass cuts its first groups from the batches earlier passes sampled") {
  testing::TempDir dir;
  auto ds = Generated(dir / "g", 30000);
  train::TrainOptions t = Options("none");
  t.eval_batch_size = 32;
  // A budget whose allowance holds a few aggregated evaluation batches, so that group sizes differ
  // between the plan's estimate and the batches sampled.
  auto ooc = OpenAboveSmallestBudget(ds.get(), t);
  REQUIRE(ooc.ok());
  REQUIRE((*ooc)->ooc->aggregated_input());
  const train::PassRunner runner = pipeline::MakeOutOfCorePassRunner(ooc->get(), t, false);
  // Evaluation passes over the validation nodes, the test nodes, the validation nodes again.
  std::vector<nlohmann::json> reports;
  std::vector<std::vector<float>> inputs;
  for (const std::vector<int64_t>* nodes :
       {&(*ooc)->data.valid, &(*ooc)->data.test, &(*ooc)->data.valid}) {
    train::PassSpec pass{nodes, false, 1, 0, t.eval_batch_size};
    pass.aggregation = model::InputAggregation::kMean;
    std::vector<float> gathered;
    std::string json;
    const Status status = runner(
        pass,
        [&](train::PreparedBatch& b) {
          gathered.insert(gathered.end(), b.features.begin(), b.features.end());
          return Status::Ok();
        },
        &json);
    REQUIRE_MESSAGE(status.ok(), status.ToString());
    reports.push_back(nlohmann::json::parse(json));
    inputs.push_back(std::move(gathered));
  }
  // The first pass starts from the plan's estimate and corrects it from its batches; the next
  // ones start from what the passes before them sampled.
  const int sampled = reports[0]["last_group"];
  REQUIRE(reports[0]["first_group"] != sampled);  // else the setting does not exercise it
  CHECK(reports[1]["first_group"] == sampled);
  CHECK(reports[2]["first_group"] == reports[1]["last_group"]);
  // Grouping is the read schedule only: the same nodes gather the same input, bit for bit.
  CHECK(reports[2]["first_group"] != reports[0]["first_group"]);
  CHECK(inputs[2] == inputs[0]);
}

TEST_CASE("trainer passes: a repeating evaluation pass is kept and replayed bit for bit") {
  testing::TempDir dir;
  auto ds = Generated(dir / "g", 30000);
  train::TrainOptions t = Options("none");
  t.eval_batch_size = 32;
  t.eval_fanouts = {4, 3};  // sampled: the same draws every pass (epoch 0's stream)
  auto small = OpenAboveSmallestBudget(ds.get(), t);
  REQUIRE_MESSAGE(small.ok(), small.status().ToString());
  REQUIRE((*small)->ooc->aggregated_input());
  (*small)->replay_dir = dir.path();
  const train::PassRunner runner = pipeline::MakeOutOfCorePassRunner(small->get(), t, false);
  struct Pass {
    std::vector<int64_t> seeds;
    std::vector<float> inputs;
    nlohmann::json report;
  };
  auto run = [&](const std::vector<int64_t>& nodes, uint64_t stream, bool repeats) {
    train::PassSpec pass{&nodes, false, stream, 0, t.eval_batch_size};
    pass.aggregation = model::InputAggregation::kMean;
    pass.repeats = repeats;
    Pass out;
    std::string json;
    const Status status = runner(
        pass,
        [&](train::PreparedBatch& b) {
          CHECK(b.aggregated);
          out.seeds.insert(out.seeds.end(), b.batch.seeds.begin(), b.batch.seeds.end());
          out.inputs.insert(out.inputs.end(), b.features.begin(), b.features.end());
          return Status::Ok();
        },
        &json);
    REQUIRE_MESSAGE(status.ok(), status.ToString());
    out.report = nlohmann::json::parse(json);
    return out;
  };
  const std::vector<int64_t>& valid = (*small)->data.valid;
  const Pass once = run(valid, 1, false);      // not kept: it does not repeat
  const Pass kept = run(valid, 1, true);       // kept as it runs
  const Pass replayed = run(valid, 1, false);  // the last evaluation still replays
  const Pass other = run((*small)->data.test, 2, true);
  std::vector<int64_t> fewer(valid.begin(), valid.end() - 1);
  const Pass changed = run(fewer, 1, false);  // other nodes: computed, not replayed
  CHECK_FALSE(once.report.contains("replayed"));
  CHECK_FALSE(kept.report.contains("replayed"));
  CHECK(replayed.report.value("replayed", false));
  CHECK(replayed.report["batches"] == (valid.size() + 31) / 32);
  CHECK_FALSE(other.report.contains("replayed"));
  CHECK_FALSE(changed.report.contains("replayed"));
  CHECK(replayed.seeds == once.seeds);
  CHECK(replayed.inputs == once.inputs);
  CHECK(kept.inputs == once.inputs);
  // The test pass kept its own batches beside the validation pass's.
  CHECK(run((*small)->data.test, 2, false).report.value("replayed", false));
  CHECK(run(valid, 1, false).report.value("replayed", false));
}

TEST_CASE("trainer passes: replayed evaluations give the run without them, epoch by epoch") {
  testing::TempDir dir;
  auto ds = Generated(dir / "g", 30000);
  train::TrainOptions t = Options("none");
  t.eval_fanouts = {4, 3};
  std::vector<train::TrainSummary> runs;
  for (const bool keep : {false, true}) {
    auto small = OpenAboveSmallestBudget(ds.get(), t);
    REQUIRE_MESSAGE(small.ok(), small.status().ToString());
    REQUIRE((*small)->ooc->aggregated_input());
    if (keep) (*small)->replay_dir = dir.path();
    // The trainer lives on below: the kept file is open while it does.
    auto trainer = train::Trainer::Create((*small)->data, t);
    REQUIRE(trainer.ok());
    (*trainer)->SetPassRunner(pipeline::MakeOutOfCorePassRunner(small->get(), t, false));
    auto summary = (*trainer)->Run();
    REQUIRE_MESSAGE(summary.ok(), summary.status().ToString());
    runs.push_back(std::move(*summary));
    // With a directory, the evaluation pass (validation and test together) was kept: an unnamed
    // file there, still open.
    int kept = 0;
    for (const std::string& file : testing::UnnamedFilesIn(dir.path())) {
      std::error_code ec;
      kept += std::filesystem::file_size(file, ec) > 0;
    }
    CHECK(kept == (keep ? 1 : 0));
  }
  REQUIRE(runs[0].epochs.size() == 3);
  testing::CheckSameScores(runs[1], runs[0]);
}

TEST_CASE("trainer passes: validation and test evaluated in one pass score as in two") {
  testing::TempDir dir;
  auto ds = Generated(dir / "g", 30000);
  train::TrainOptions t = Options("none");
  t.epochs = 2;
  std::vector<train::TrainSummary> runs;
  for (const bool together : {true, false}) {
    CAPTURE(together);
    auto small = OpenAboveSmallestBudget(ds.get(), t);
    REQUIRE_MESSAGE(small.ok(), small.status().ToString());
    REQUIRE((*small)->ooc->aggregated_input());
    const train::PassRunner runner = pipeline::MakeOutOfCorePassRunner(small->get(), t, false);
    // A runner that takes the node sets of a pass one at a time.
    const train::PassRunner apart = [&](const train::PassSpec& pass,
                                        const std::function<Status(train::PreparedBatch&)>& consume,
                                        std::string* report) -> Status {
      for (size_t p = 0; p <= pass.more.size(); ++p) {
        train::PassSpec one = pass;
        one.more.clear();
        if (p > 0) {
          one.nodes = pass.more[p - 1].nodes;
          one.stream = pass.more[p - 1].stream;
        }
        const Status status = runner(
            one,
            [&](train::PreparedBatch& b) {
              b.part = static_cast<int>(p);
              return consume(b);
            },
            p == 0 ? report : nullptr);
        if (!status.ok()) return status;
      }
      return Status::Ok();
    };
    runs.push_back(TrainWith(**small, t, together ? runner : apart));
  }
  REQUIRE(runs[0].epochs.size() == 2);
  testing::CheckSameScores(runs[0], runs[1]);
  for (const train::EpochMetrics& m : runs[0].epochs) {
    CHECK(m.valid_acc != m.test_acc);  // the sets are told apart
  }
}

TEST_CASE("trainer passes: the evaluation's first batches sampled during training change nothing") {
  testing::TempDir dir;
  auto ds = Generated(dir / "g", 30000);
  train::TrainOptions t = Options("none");
  t.epochs = 2;
  std::vector<train::TrainSummary> runs;
  for (const bool ahead : {true, false}) {
    CAPTURE(ahead);
    auto small = OpenAboveSmallestBudget(ds.get(), t);
    REQUIRE_MESSAGE(small.ok(), small.status().ToString());
    REQUIRE((*small)->ooc->aggregated_input());
    const train::PassRunner runner = pipeline::MakeOutOfCorePassRunner(small->get(), t, false);
    // The same runner without the hint of what comes next.
    const train::PassRunner without_hint =
        [&](const train::PassSpec& pass,
            const std::function<Status(train::PreparedBatch&)>& consume, std::string* report) {
          train::PassSpec plain = pass;
          plain.then = nullptr;
          return runner(plain, consume, report);
        };
    train::TrainSummary summary = TrainWith(**small, t, ahead ? runner : without_hint);
    for (const train::EpochMetrics& m : summary.epochs) {
      const auto report = nlohmann::json::parse(m.pipeline_json);
      // Every epoch evaluates afresh here (no scratch directory to replay from).
      CHECK((report["next_pass_batches_sampled_ahead"].get<int64_t>() > 0) == ahead);
    }
    runs.push_back(std::move(summary));
  }
  REQUIRE(runs[0].epochs.size() == 2);
  testing::CheckSameScores(runs[0], runs[1]);
}
