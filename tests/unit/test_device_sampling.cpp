// What sampling on a model's device rests on, tested without a device:
// - the per-node draw (skiff/neighbor_draw.h): the portable 64-bit high product, and an ordered
//   sample of distinct positions in range on both of its paths;
// - the host sampler's draws per node: a node's picks do not depend on the other seeds;
// - CsrSource: a dataset's CSR read range by range equals the whole-array loads, and an
//   inconsistent range is named;
// - the plumbing (Trainer, BatchStream): a model that says it samples on its device gets seeds,
//   labels and sampler seeds only, with the pass's fanouts, and no pass runner is used. A stand-in
//   model that samples those on the host with NeighborSampler, then runs the CPU model, must
//   reproduce the host-sampled run bit for bit, epoch by epoch.
#include <doctest/doctest.h>

#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "skiff/generate/generator.h"
#include "skiff/model/model.h"
#include "skiff/neighbor_draw.h"
#include "skiff/pipeline/trainer_passes.h"
#include "skiff/sampler/csr_source.h"
#include "skiff/sampler/graph_source.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/train/trainer.h"
#include "tests/unit/test_scores.h"
#include "tests/unit/test_util.h"

using namespace skiff;

TEST_CASE("neighbor draw: MulHi64 and its 32-bit form are the high half of the 128-bit product") {
  std::mt19937_64 rng(1);
  std::vector<uint64_t> values = {
      0, 1, 2, 0xffffffffull, 0x100000000ull, ~uint64_t{0}, ~uint64_t{0} - 1, uint64_t{1} << 63};
  for (int i = 0; i < 1000; ++i) values.push_back(rng());
  for (uint64_t a : values) {
    for (uint64_t b : values) {
      const auto want = static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
      REQUIRE(MulHi64(a, b) == want);
      REQUIRE(MulHi64Halves(a, b) == want);
    }
  }
}

TEST_CASE("neighbor draw: k distinct positions in range, on the bit-set and the list path") {
  for (int64_t d : {2, 5, 63, 64, 65, 100, 1000}) {
    for (int64_t k : {int64_t{1}, d / 2, d - 1}) {
      if (k < 1 || k >= d) continue;
      CAPTURE(d);
      CAPTURE(k);
      for (int64_t node = 0; node < 50; ++node) {
        std::vector<int64_t> out(static_cast<size_t>(k));
        NodeDrawRng rng = NodeDrawRngFor(NodeDrawKey(7), node);
        DrawOrderedSample(d, k, rng, out.data());
        const std::set<int64_t> distinct(out.begin(), out.end());
        CHECK(distinct.size() == static_cast<size_t>(k));
        CHECK(*distinct.begin() >= 0);
        CHECK(*distinct.rbegin() < d);
        // The same node and key draw the same sample.
        std::vector<int64_t> again(static_cast<size_t>(k));
        NodeDrawRng rng2 = NodeDrawRngFor(NodeDrawKey(7), node);
        DrawOrderedSample(d, k, rng2, again.data());
        CHECK(again == out);
        if (d <= kMaskPositions) {
          MaskSortPositions(k, again.data());
          CHECK(std::is_sorted(again.begin(), again.end()));
          CHECK(std::set<int64_t>(again.begin(), again.end()) == distinct);
        }
      }
    }
  }
  CHECK(SampleLength(std::vector<int>{15, 10, 5}.data(), 3, 0, 12) == 10);  // 15 >= degree 12
  CHECK(SampleLength(std::vector<int>{15, 10, 5}.data(), 3, 2, 12) == 0);   // only block 0: whole
  CHECK(SampleLength(std::vector<int>{-1, 3}.data(), 2, 0, 12) == 3);
}

namespace {

std::unique_ptr<sampler::InMemoryGraph> RandomGraph(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> offsets{0}, neighbors;
  for (int64_t v = 0; v < n; ++v) {
    const int64_t d = static_cast<int64_t>(rng() % 90);
    for (int64_t e = 0; e < d; ++e) neighbors.push_back(static_cast<int64_t>(rng() % n));
    offsets.push_back(static_cast<int64_t>(neighbors.size()));
  }
  return std::move(sampler::InMemoryGraph::FromCsr(std::move(offsets), std::move(neighbors)))
      .value();
}

// The sampled neighbours (global IDs) of the seed at position `i` in the batch's last block.
std::vector<int64_t> SeedPicks(const sampler::MiniBatch& b, size_t i) {
  const sampler::Block& last = b.blocks.back();
  std::vector<int64_t> out;
  for (int64_t e = last.indptr[i]; e < last.indptr[i + 1]; ++e) {
    out.push_back(b.input_nodes[static_cast<size_t>(last.indices[static_cast<size_t>(e)])]);
  }
  return out;
}

}  // namespace

TEST_CASE("sampler: a node's picks do not depend on the other seeds of its batch") {
  auto graph = RandomGraph(2000, 4);
  sampler::NeighborSampler s(*graph, {10, 5});
  for (int64_t node = 0; node < 200; ++node) {
    sampler::MiniBatch alone, with_others;
    const std::vector<int64_t> one{node}, several{(node + 7) % 2000, node, (node + 900) % 2000};
    REQUIRE(s.Sample(one, 31, &alone).ok());
    REQUIRE(s.Sample(several, 31, &with_others).ok());
    CHECK(SeedPicks(alone, 0) == SeedPicks(with_others, 1));
  }
}

namespace {

// A generated dataset (average degree 6) at `dir`, opened.
std::unique_ptr<format::Dataset> Generated(const std::string& dir, int64_t nodes, int64_t classes,
                                           int64_t dim, uint64_t seed) {
  generate::GenerateOptions o;
  o.output = dir;
  o.num_nodes = nodes;
  o.avg_degree = 6;
  o.num_classes = classes;
  o.feature_dim = dim;
  o.seed = seed;
  o.threads = 1;
  REQUIRE(generate::GenerateDataset(o).ok());
  auto ds = format::Dataset::Open(dir);
  REQUIRE(ds.ok());
  return std::move(ds).value();
}

}  // namespace

TEST_CASE("csr source: a dataset read by ranges equals its whole arrays; bad entries are named") {
  testing::TempDir dir;
  auto ds = Generated(dir / "g", 1500, 3, 4, 2);
  const sampler::DatasetCsr csr(*ds);
  const auto offsets = ds->LoadOffsets().value();
  const auto neighbors = ds->LoadNeighbors().value();
  REQUIRE(csr.num_nodes() + 1 == static_cast<int64_t>(offsets.size()));
  REQUIRE(csr.num_edges() == static_cast<int64_t>(neighbors.size()));
  for (int64_t first : {int64_t{0}, int64_t{1}, int64_t{777}}) {
    const int64_t count = std::min<int64_t>(600, csr.num_nodes() + 1 - first);
    std::vector<int64_t> got(static_cast<size_t>(count));
    REQUIRE(csr.ReadOffsets(first, count, got.data()).ok());
    CHECK(std::equal(got.begin(), got.end(), offsets.begin() + first));
    CHECK(sampler::CheckOffsetsRange(csr, first, count, got.data(),
                                     first > 0 ? offsets[static_cast<size_t>(first - 1)] : 0)
              .ok());
    const int64_t edges = std::min<int64_t>(1001, csr.num_edges() - first);
    got.resize(static_cast<size_t>(edges));
    REQUIRE(csr.ReadNeighbors(first, edges, got.data()).ok());
    CHECK(std::equal(got.begin(), got.end(), neighbors.begin() + first));
  }
  CHECK(csr.ReadOffsets(csr.num_nodes(), 2, nullptr).code() == StatusCode::kInvalidArgument);
  const std::vector<int64_t> decreasing{0, 5, 4};
  const Status st = sampler::CheckOffsetsRange(csr, 0, 3, decreasing.data(), 0);
  CHECK(st.code() == StatusCode::kCorruption);
  CHECK(st.message().find("graph.offsets entry 2 = 4") != std::string::npos);
  const std::vector<int64_t> outside{3, csr.num_nodes()};
  const Status bad = sampler::CheckNeighborsRange(csr, 10, 2, outside.data());
  CHECK(bad.code() == StatusCode::kCorruption);
  CHECK(bad.message().find("graph.neighbors entry 11") != std::string::npos);
}

namespace {

// A model that says it samples on its device, and samples on the host instead: the batches it is
// handed (seeds, labels, sampler seed, fanouts) become NeighborSampler batches, run by a CPU
// model. Trained in place of that CPU model, it must give the run of host sampling exactly.
class HostSamplingStandIn final : public model::Model {
 public:
  explicit HostSamplingStandIn(std::unique_ptr<model::Model> inner)
      : Model(inner->config()), inner_(std::move(inner)) {}

  Result<bool> HoldFeatures(const sampler::FeatureSource& features, uint64_t) override {
    features_ = &features;
    return true;
  }
  bool holds_features() const override { return features_ != nullptr; }
  Result<bool> HoldGraph(const sampler::CsrSource& csr, uint64_t, int) override {
    std::vector<int64_t> offsets(static_cast<size_t>(csr.num_nodes() + 1));
    std::vector<int64_t> neighbors(static_cast<size_t>(csr.num_edges()));
    SKIFF_RETURN_IF_ERROR(csr.ReadOffsets(0, csr.num_nodes() + 1, offsets.data()));
    SKIFF_RETURN_IF_ERROR(csr.ReadNeighbors(0, csr.num_edges(), neighbors.data()));
    SKIFF_ASSIGN_OR_RETURN(
        graph_, sampler::InMemoryGraph::FromCsr(std::move(offsets), std::move(neighbors)));
    return true;
  }
  bool samples_on_device() const override { return graph_ != nullptr; }

  Status TrainStep(const model::BatchInput& input, uint64_t dropout_seed,
                   model::Optimizer& optimizer) override {
    SKIFF_ASSIGN_OR_RETURN(const model::BatchInput host, OnHost(input));
    return Model::TrainStep(host, dropout_seed, optimizer);
  }
  Status EvalStep(const model::BatchInput& input) override {
    SKIFF_ASSIGN_OR_RETURN(const model::BatchInput host, OnHost(input));
    return Model::EvalStep(host);
  }
  Status ForwardDeviceSampled(const sampler::MiniBatch& batch, const model::DeviceSampling& sample,
                              bool training, uint64_t dropout_seed, std::vector<float>* logits,
                              std::vector<float>* embeddings) override {
    SKIFF_ASSIGN_OR_RETURN(const model::BatchInput host,
                           OnHost({.batch = &batch, .sample = &sample}));
    return Forward(*host.batch, host.x, training, dropout_seed, logits, embeddings);
  }
  Status Forward(const sampler::MiniBatch& batch, const float* x, bool training,
                 uint64_t dropout_seed, std::vector<float>* logits,
                 std::vector<float>* embeddings) override {
    return inner_->Forward(batch, x, training, dropout_seed, logits, embeddings);
  }
  Status Backward(const float* grad_logits) override { return inner_->Backward(grad_logits); }
  std::vector<model::Parameter> Parameters() override { return inner_->Parameters(); }

  int64_t sampled_batches = 0;

 private:
  // The batch sampled and gathered on the host, as the device would have it.
  Result<model::BatchInput> OnHost(const model::BatchInput& input) {
    REQUIRE(input.sample != nullptr);  // every batch comes unsampled
    REQUIRE(input.batch->blocks.empty());
    REQUIRE(input.batch->labels.size() == input.batch->seeds.size());
    sampler::NeighborSampler s(*graph_, *input.sample->fanouts,
                               model::NeedsNodeDegrees(config_.kind));
    SKIFF_RETURN_IF_ERROR(s.Sample(input.batch->seeds, input.sample->seed, &batch_));
    batch_.labels = input.batch->labels;
    rows_.resize(batch_.input_nodes.size() * static_cast<size_t>(features_->dim()));
    SKIFF_RETURN_IF_ERROR(features_->Gather(batch_.input_nodes, rows_.data()));
    ++sampled_batches;
    return model::BatchInput{.batch = &batch_, .x = rows_.data()};
  }

  std::unique_ptr<model::Model> inner_;
  const sampler::FeatureSource* features_ = nullptr;
  std::unique_ptr<sampler::InMemoryGraph> graph_;
  sampler::MiniBatch batch_;
  std::vector<float> rows_;
};

train::TrainOptions StandInOptions(train::SamplerPlace place) {
  train::TrainOptions t;
  t.model.kind = model::ModelKind::kGcn;  // degrees recorded: the sampler's flag travels too
  t.model.num_layers = 2;
  t.model.hidden_dim = 16;
  t.model.dropout = 0.3f;
  t.fanouts = {5, 3};
  t.eval_fanouts = {8, 4};
  t.batch_size = 100;
  t.epochs = 2;
  t.seed = 9;
  t.sampler_threads = 2;
  t.show_progress = false;
  t.sampler = place;
  return t;
}

HostSamplingStandIn* last_stand_in = nullptr;

Result<std::unique_ptr<model::Model>> MakeStandIn(const model::ModelConfig& config) {
  SKIFF_ASSIGN_OR_RETURN(auto inner, model::Model::CreateCpu(config));
  auto m = std::make_unique<HostSamplingStandIn>(std::move(inner));
  last_stand_in = m.get();
  return std::unique_ptr<model::Model>(std::move(m));
}

}  // namespace

TEST_CASE("device sampling: seeds, labels and sampler seeds reproduce the host-sampled run") {
  testing::TempDir dir;
  auto ds = Generated(dir / "g", 2000, 4, 8, 3);
  auto memory = train::LoadInMemory(*ds);
  REQUIRE(memory.ok());
  auto reference =
      train::Trainer::Create((*memory)->data, StandInOptions(train::SamplerPlace::kHost));
  REQUIRE(reference.ok());
  auto want = (*reference)->Run();
  REQUIRE(want.ok());

  SUBCASE("in memory (BatchStream)") {
    auto trainer = train::Trainer::Create(
        (*memory)->data, StandInOptions(train::SamplerPlace::kDevice), MakeStandIn);
    REQUIRE(trainer.ok());
    auto got = (*trainer)->Run();
    REQUIRE_MESSAGE(got.ok(), got.status().ToString());
    CHECK(last_stand_in->sampled_batches > 0);
    testing::CheckSameScores(*got, *want);
  }
  SUBCASE("with the out-of-core pass runner installed: the runner is not used") {
    // The model holds the graph and the features: its seeds and labels come from a BatchStream,
    // so the run is the in-memory one whatever the runner would have planned.
    const train::TrainOptions t = StandInOptions(train::SamplerPlace::kDevice);
    auto ooc = pipeline::OpenOutOfCoreTraining(ds.get(), t, 1ull << 30,
                                               pipeline::SamplingMode::kExact, 2, {});
    REQUIRE_MESSAGE(ooc.ok(), ooc.status().ToString());
    auto trainer = train::Trainer::Create((*ooc)->data, t, MakeStandIn);
    REQUIRE(trainer.ok());
    bool runner_called = false;
    const train::PassRunner runner = pipeline::MakeOutOfCorePassRunner(ooc->get(), t, false);
    (*trainer)->SetPassRunner(
        [&](const train::PassSpec& pass, const auto& consume, std::string* report) {
          runner_called = true;
          return runner(pass, consume, report);
        });
    auto got = (*trainer)->Run();
    REQUIRE_MESSAGE(got.ok(), got.status().ToString());
    CHECK_FALSE(runner_called);
    CHECK(last_stand_in->sampled_batches > 0);
    testing::CheckSameScores(*got, *want);
  }
  SUBCASE("out of core with the graph planned on the device: a budget of a few MiB") {
    // The plan keeps no partition slot; the features reach the model through the pool's fine
    // reads, the graph through its CsrSource; the run is the in-memory one.
    const train::TrainOptions t = StandInOptions(train::SamplerPlace::kDevice);
    auto ooc =
        pipeline::OpenOutOfCoreTraining(ds.get(), t, 8 << 20, pipeline::SamplingMode::kExact, 2,
                                        {.features_on_device = true, .graph_on_device = true});
    REQUIRE_MESSAGE(ooc.ok(), ooc.status().ToString());
    CHECK((*ooc)->ooc->memory_plan().pool_slots == 0);
    CHECK((*ooc)->ooc->Describe().find("none loaded") != std::string::npos);
    auto trainer = train::Trainer::Create((*ooc)->data, t, MakeStandIn);
    REQUIRE(trainer.ok());
    (*trainer)->SetPassRunner(pipeline::MakeOutOfCorePassRunner(ooc->get(), t, false));
    auto got = (*trainer)->Run();
    REQUIRE_MESSAGE(got.ok(), got.status().ToString());
    testing::CheckSameScores(*got, *want);
  }
  SUBCASE("a CPU model refuses --sampler device, and auto falls back to the host") {
    auto trainer =
        train::Trainer::Create((*memory)->data, StandInOptions(train::SamplerPlace::kDevice));
    REQUIRE(trainer.ok());
    const auto run = (*trainer)->Run();
    CHECK(run.status().code() == StatusCode::kInvalidArgument);
    CHECK(run.status().message().find("--sampler device") != std::string::npos);
    auto fallback =
        train::Trainer::Create((*memory)->data, StandInOptions(train::SamplerPlace::kAuto));
    REQUIRE(fallback.ok());
    auto got = (*fallback)->Run();
    REQUIRE(got.ok());
    testing::CheckSameScores(*got, *want);
  }
}
