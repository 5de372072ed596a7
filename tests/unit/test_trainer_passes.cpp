// The Trainer over the out-of-core pipeline (`skiff train --memory`) against the Trainer in memory:
// with every partition resident the two must compute the same thing, epoch by epoch.
#include <doctest/doctest.h>

#include "skiff/format/dataset.h"
#include "skiff/generate/generator.h"
#include "skiff/pipeline/trainer_passes.h"
#include "skiff/train/trainer.h"
#include "tests/unit/test_util.h"

using namespace skiff;

namespace {

// The pool options OutOfCore uses (its fine-read scratch), for budgets computed by hand.
storage::BufferPoolOptions OutOfCorePoolOptions(const format::Manifest& manifest) {
  storage::BufferPoolOptions o;
  o.fine_read_scratch_bytes = pipeline::OutOfCore::FineReadScratchBytes(manifest);
  return o;
}

std::unique_ptr<format::Dataset> Generated(const std::string& dir) {
  generate::GenerateOptions o;
  o.output = dir;
  o.num_nodes = 3000;
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
  t.feature_norm = feature_norm;
  return t;
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

    auto ooc =
        pipeline::OpenOutOfCoreTraining(ds.get(), t, 1ull << 30, pipeline::SamplingMode::kExact, 2);
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
  testing::TempDir dir;
  auto ds = Generated(dir / "g");
  train::TrainOptions t = Options("none");
  t.epochs = 2;
  // Find the smallest accepted budget from the refusal, then train there (every stage bounded).
  auto refused =
      pipeline::OpenOutOfCoreTraining(ds.get(), t, 64 << 10, pipeline::SamplingMode::kExact, 2);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kResourceExhausted);
  CHECK(refused.status().message().find("--batch-size") != std::string::npos);
  auto ooc =
      pipeline::OpenOutOfCoreTraining(ds.get(), t, 1ull << 30, pipeline::SamplingMode::kExact, 2);
  REQUIRE(ooc.ok());
  const pipeline::MemoryPlan& big = (*ooc)->ooc->memory_plan();
  const uint64_t tight =
      big.fixed_bytes - big.batch_allowance + big.batch_bytes +
      storage::BufferPool::BudgetFor(*storage::DatasetPartitionSource::Open(ds.get(), {}).value(),
                                     3, OutOfCorePoolOptions(ds->manifest()));
  auto small =
      pipeline::OpenOutOfCoreTraining(ds.get(), t, tight, pipeline::SamplingMode::kExact, 2);
  REQUIRE_MESSAGE(small.ok(), small.status().ToString());
  CHECK_FALSE((*small)->ooc->fully_resident());
  CHECK((*small)->ooc->memory_plan().planned_in_flight == 1);
  auto trainer = train::Trainer::Create((*small)->data, t);
  REQUIRE(trainer.ok());
  (*trainer)->SetPassRunner(pipeline::MakeOutOfCorePassRunner(small->get(), t, false));
  auto summary = (*trainer)->Run();
  REQUIRE_MESSAGE(summary.ok(), summary.status().ToString());
  CHECK(summary->best_test_acc > 0.3);
  // Too few partitions resident to mix labels: training draws the in-memory batches (exact
  // sampling reads the rest), so the run is the in-memory one; evaluation takes every neighbour,
  // so its accuracy does not depend on how the plan groups nodes either.
  CHECK((*small)->ooc->uniform_training_order());
  auto memory = train::LoadInMemory(*ds);
  REQUIRE(memory.ok());
  auto in_memory = train::Trainer::Create((*memory)->data, t);
  REQUIRE(in_memory.ok());
  auto reference = (*in_memory)->Run();
  REQUIRE(reference.ok());
  REQUIRE(summary->epochs.size() == reference->epochs.size());
  for (size_t e = 0; e < reference->epochs.size(); ++e) {
    CAPTURE(e);
    CHECK(summary->epochs[e].loss == reference->epochs[e].loss);
    CHECK(summary->epochs[e].valid_acc == reference->epochs[e].valid_acc);
    CHECK(summary->epochs[e].test_acc == reference->epochs[e].test_acc);
    const std::string pipeline = summary->epochs[e].pipeline_json;
    CHECK(pipeline.find("\"fine_bytes_read\":0,") == std::string::npos);  // it did read
  }
}
