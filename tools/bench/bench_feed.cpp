// Times the host side of `skiff train --device cuda` without a GPU: the pipeline feeding a model
// that holds the features on its device (batches carry node IDs; out of core, partitions loaded as
// adjacency only and the budget planned for that), with a stand-in model that packs each batch's
// structure as BatchStaging does (block CSRs and input IDs copied into one buffer) and computes
// nothing. On a GPU the compute stage takes ~1 ms of device time per batch of the GPU bar's setting
// (docs/cuda.md), so this is the rate the host can feed it: in memory, the sampler's rate; out of
// core, the sampler's and the reads'. Accuracy is meaningless (no model); the epoch lines'
// samples/s and the stage reports are the figures.
//
// Not part of the build; compile by hand against the core (see BENCHMARKS.md, "CUDA benchmarks"):
//   g++ -O2 -std=c++20 -Iinclude -I. tools/bench/bench_feed.cpp build/libskiff_core.a \
//       $(pkg-config --libs liburing libxxhash libzip) -lrocksdb -lz -lopenblas -lpthread \
//       -o build/bench_feed
//   build/bench_feed DATASET [--memory BYTES] [--threads N] [--TRAIN-OPTION VALUE ...]
// TRAIN-OPTION: any long option of `skiff train` that sets a training option (--fanouts, --hidden,
// --batch-size, --epochs, ...).
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/model/model.h"
#include "skiff/pipeline/trainer_passes.h"
#include "skiff/train/train_options.h"
#include "skiff/train/trainer.h"

using namespace skiff;

namespace {

// Consumes batches given as node IDs: copies their structure as the CUDA model's staging does, and
// counts the labelled seeds (loss 0, none correct).
class FeedOnlyModel final : public model::Model {
 public:
  explicit FeedOnlyModel(const model::ModelConfig& config) : Model(config) {}

  Status Forward(const sampler::MiniBatch&, const float*, bool, uint64_t, std::vector<float>*,
                 std::vector<float>*) override {
    return Status::Unavailable("feed-only model");
  }
  Status Backward(const float*) override { return Status::Unavailable("feed-only model"); }
  std::vector<model::Parameter> Parameters() override { return {}; }

  Status TrainStep(const model::BatchInput& input, uint64_t, model::Optimizer&) override {
    return Consume(input);
  }
  Status EvalStep(const model::BatchInput& input) override { return Consume(input); }
  Result<model::LossTotals> TakeLossTotals() override {
    model::LossTotals t = totals_;
    totals_ = {};
    return t;
  }
  Result<bool> HoldFeatures(const sampler::FeatureSource&, uint64_t) override { return true; }
  bool holds_features() const override { return true; }
  std::string DeviceDescription() const override { return "feed only (no compute)"; }

 private:
  Status Consume(const model::BatchInput& input) {
    const sampler::MiniBatch& b = *input.batch;
    // As BatchStaging: 32-bit offsets, indices and IDs.
    size_t words = b.input_nodes.size() + b.labels.size();
    for (const sampler::Block& block : b.blocks)
      words += block.indptr.size() + block.indices.size();
    if (staging_.size() < words) staging_.resize(words);
    int32_t* out = staging_.data();
    auto narrow = [&out](const std::vector<int64_t>& v) {
      for (int64_t x : v) *out++ = static_cast<int32_t>(x);
    };
    for (const sampler::Block& block : b.blocks) {
      narrow(block.indptr);
      std::memcpy(out, block.indices.data(), block.indices.size() * sizeof(int32_t));
      out += block.indices.size();
    }
    narrow(b.input_nodes);
    std::memcpy(out, b.labels.data(), b.labels.size() * sizeof(int32_t));
    for (int32_t label : b.labels) totals_.labelled += label >= 0 ? 1 : 0;
    return Status::Ok();
  }

  std::vector<int32_t> staging_;
  model::LossTotals totals_;
};

int Fail(const Status& st) {
  std::fprintf(stderr, "bench_feed: %s\n", st.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DATASET [--memory BYTES] [--threads N] [--OPTION VALUE ...]\n",
                 argv[0]);
    return 2;
  }
  train::TrainOptions t;
  uint64_t memory = 0;
  int threads = 2;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string name = argv[i];
    const char* value = argv[i + 1];
    if (name == "--memory") {
      memory = std::strtoull(value, nullptr, 10);
    } else if (name == "--threads") {
      threads = std::atoi(value);
    } else if (const train::TrainOption* opt = train::FindTrainOption(name.substr(2))) {
      if (Status st = opt->Parse(value, &t); !st.ok()) return Fail(st);
    } else {
      std::fprintf(stderr, "bench_feed: unknown option %s\n", name.c_str());
      return 2;
    }
  }
  t.sampler_threads = threads;
  // As `skiff train --memory` (tools/skiff/main.cpp): freed large buffers go back to the system.
  if (memory > 0) mallopt(M_MMAP_THRESHOLD, 1 << 20);
  auto ds = format::Dataset::Open(argv[1]);
  if (!ds.ok()) return Fail(ds.status());
  auto engine = pipeline::OpenOutOfCoreTraining(
      ds->get(), t, memory, pipeline::SamplingMode::kExact, threads, {.features_on_device = true});
  if (!engine.ok()) return Fail(engine.status());
  std::printf("%s\n", (*engine)->ooc->Describe().c_str());
  if (memory > 0) std::printf("%s\n", (*engine)->ooc->memory_plan().Describe().c_str());
  auto trainer = train::Trainer::Create(
      (*engine)->data, t, [](const model::ModelConfig& c) -> Result<std::unique_ptr<model::Model>> {
        return std::unique_ptr<model::Model>(std::make_unique<FeedOnlyModel>(c));
      });
  if (!trainer.ok()) return Fail(trainer.status());
  (*trainer)->SetPassRunner(pipeline::MakeOutOfCorePassRunner(engine->get(), t, true));
  auto summary = (*trainer)->Run();
  if (!summary.ok()) return Fail(summary.status());
  return 0;
}
