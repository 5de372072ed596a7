// Layer-wise inference (train/layerwise_inference.h) against the batched prediction it replaces:
// with every neighbour both compute the same function, so embeddings agree to float rounding.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <thread>

#include "skiff/dist/communicator.h"
#include "skiff/format/dataset.h"
#include "skiff/generate/generator.h"
#include "skiff/train/layerwise_inference.h"
#include "skiff/train/trainer.h"
#include "tests/unit/test_util.h"

using namespace skiff;

namespace {

struct Fixture {
  testing::TempDir dir;
  std::unique_ptr<format::Dataset> dataset;
  std::unique_ptr<train::InMemoryData> data;

  Fixture() {
    generate::GenerateOptions g;
    g.output = dir / "ds";
    g.num_nodes = 1500;
    g.avg_degree = 6;
    g.num_classes = 5;
    g.feature_dim = 12;
    g.feature_noise = 0.3;  // a model that learns something in a few epochs
    g.threads = 1;
    REQUIRE(generate::GenerateDataset(g).ok());
    auto ds = format::Dataset::Open(dir / "ds");
    REQUIRE(ds.ok());
    dataset = std::move(*ds);
    auto loaded = train::LoadInMemory(*dataset);
    REQUIRE(loaded.ok());
    data = std::move(*loaded);
  }
};

train::TrainOptions Options(model::ModelKind kind, model::Norm norm) {
  train::TrainOptions t;
  t.model.kind = kind;
  t.model.num_layers = 3;
  t.model.hidden_dim = 8;
  t.model.heads = 2;
  t.model.norm = norm;
  t.fanouts = {4, 3, 2};
  t.eval_fanouts = {-1, -1, -1};
  t.eval_batch_size = 64;
  t.batch_size = 128;
  t.epochs = 1;
  t.seed = 5;
  t.sampler_threads = 1;
  t.show_progress = false;
  return t;
}

train::LayerwiseOptions LayerwiseOf(const train::TrainOptions& t, int64_t chunk) {
  train::LayerwiseOptions o;
  o.fanouts = t.eval_fanouts;
  o.chunk_nodes = chunk;
  o.seed = t.seed;
  return o;
}

// The nodes in a shuffled order (results follow it, as export's raw-ID order).
std::vector<int64_t> Shuffled(int64_t n, uint64_t seed) {
  std::vector<int64_t> nodes(static_cast<size_t>(n));
  std::iota(nodes.begin(), nodes.end(), int64_t{0});
  std::mt19937_64 rng(seed);
  std::shuffle(nodes.begin(), nodes.end(), rng);
  return nodes;
}

// Largest |a - b| / (1 + |b|).
double MaxRelativeDiff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(double{a[i]} - b[i]) / (1.0 + std::abs(double{b[i]})));
  }
  return worst;
}

double Agreement(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  REQUIRE(a.size() == b.size());
  int64_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  return static_cast<double>(same) / static_cast<double>(a.size());
}

// A model that only runs whole batches (as the CUDA model does).
class BatchOnlyModel final : public model::Model {
 public:
  explicit BatchOnlyModel(const model::ModelConfig& config) : Model(config) {}
  Status Forward(const sampler::MiniBatch&, const float*, bool, uint64_t, std::vector<float>*,
                 std::vector<float>*) override {
    return Status::Ok();
  }
  Status Backward(const float*) override { return Status::Ok(); }
  std::vector<model::Parameter> Parameters() override { return {}; }
};

}  // namespace

TEST_CASE("layer-wise inference with every neighbour equals batched prediction") {
  Fixture f;
  const int64_t n = f.dataset->manifest().num_nodes;
  struct Case {
    model::ModelKind kind;
    model::Norm norm;
  };
  for (const Case c : {Case{model::ModelKind::kSage, model::Norm::kNone},
                       Case{model::ModelKind::kGcn, model::Norm::kLayer},
                       Case{model::ModelKind::kGat, model::Norm::kNone}}) {
    CAPTURE(model::ModelKindName(c.kind));
    const train::TrainOptions t = Options(c.kind, c.norm);
    auto trainer = train::Trainer::Create(f.data->data, t);
    REQUIRE(trainer.ok());
    REQUIRE((*trainer)->Run().ok());
    const std::vector<int64_t> nodes = Shuffled(n, 11);
    std::vector<int32_t> batched_classes, classes;
    std::vector<float> batched, embeddings;
    REQUIRE((*trainer)->Predict(nodes, &batched_classes, &batched).ok());
    // Chunks that do not divide the node count, and the next chunk prepared during compute.
    REQUIRE(train::PredictByLayer((*trainer)->model(), *f.data->graph, *f.data->features,
                                  LayerwiseOf(t, 97), nodes, &classes, &embeddings)
                .ok());
    CHECK(embeddings.size() ==
          nodes.size() * static_cast<size_t>((*trainer)->model().EmbeddingDim()));
    CHECK(MaxRelativeDiff(embeddings, batched) < 1e-4);
    CHECK(Agreement(classes, batched_classes) > 0.995);

    // A subset, in its own order.
    const std::vector<int64_t> some(nodes.begin(), nodes.begin() + 300);
    std::vector<int32_t> some_classes;
    std::vector<float> some_embeddings;
    REQUIRE(train::PredictByLayer((*trainer)->model(), *f.data->graph, *f.data->features,
                                  LayerwiseOf(t, 500), some, &some_classes, &some_embeddings)
                .ok());
    const auto dim = static_cast<size_t>((*trainer)->model().EmbeddingDim());
    CHECK(MaxRelativeDiff(some_embeddings,
                          std::vector<float>(batched.begin(), batched.begin() + 300 * dim)) < 1e-4);
    CHECK(Agreement(some_classes, std::vector<int32_t>(batched_classes.begin(),
                                                       batched_classes.begin() + 300)) > 0.99);
  }
}

TEST_CASE("layer-wise inference with sampled fanouts is deterministic and close to batched") {
  Fixture f;
  train::TrainOptions t = Options(model::ModelKind::kSage, model::Norm::kNone);
  t.eval_fanouts = {3, 3, 3};
  t.epochs = 5;
  auto trainer = train::Trainer::Create(f.data->data, t);
  REQUIRE(trainer.ok());
  REQUIRE((*trainer)->Run().ok());
  const std::vector<int64_t> nodes = Shuffled(f.dataset->manifest().num_nodes, 2);
  std::vector<int32_t> first, second, batched;
  std::vector<float> e1, e2, eb;
  const train::LayerwiseOptions o = LayerwiseOf(t, 200);
  REQUIRE(train::PredictByLayer((*trainer)->model(), *f.data->graph, *f.data->features, o, nodes,
                                &first, &e1)
              .ok());
  REQUIRE(train::PredictByLayer((*trainer)->model(), *f.data->graph, *f.data->features, o, nodes,
                                &second, &e2)
              .ok());
  CHECK(first == second);
  CHECK(e1 == e2);
  // A node's samples do not depend on the chunk it falls in.
  std::vector<int32_t> other_chunks;
  std::vector<float> e3;
  REQUIRE(train::PredictByLayer((*trainer)->model(), *f.data->graph, *f.data->features,
                                LayerwiseOf(t, 37), nodes, &other_chunks, &e3)
              .ok());
  CHECK(MaxRelativeDiff(e3, e1) < 1e-4);
  CHECK(Agreement(other_chunks, first) > 0.995);
  // Different samples than any batch's, the same model: as accurate.
  REQUIRE((*trainer)->Predict(nodes, &batched, &eb).ok());
  CHECK(MaxRelativeDiff(e1, eb) > 0);
  const std::vector<int32_t>& labels = f.data->data.labels;
  auto accuracy = [&](const std::vector<int32_t>& predicted) {
    int64_t correct = 0;
    for (size_t i = 0; i < nodes.size(); ++i) correct += predicted[i] == labels[nodes[i]];
    return static_cast<double>(correct) / static_cast<double>(nodes.size());
  };
  CHECK(accuracy(batched) > 0.5);
  CHECK(std::abs(accuracy(first) - accuracy(batched)) < 0.03);
}

TEST_CASE("layer-wise inference shared among ranks equals one process's") {
  Fixture f;
  const int64_t n = f.dataset->manifest().num_nodes;
  const std::vector<int64_t> nodes = Shuffled(n, 3);
  for (const model::ModelKind kind :
       {model::ModelKind::kSage, model::ModelKind::kGcn, model::ModelKind::kGat}) {
    CAPTURE(model::ModelKindName(kind));
    train::TrainOptions t = Options(kind, model::Norm::kNone);
    t.eval_fanouts = {3, 3, 3};  // sampled: every rank must draw one process's picks
    auto trainer = train::Trainer::Create(f.data->data, t);
    REQUIRE(trainer.ok());
    REQUIRE((*trainer)->Run().ok());
    auto trained = (*trainer)->MakeCheckpoint(0);
    REQUIRE(trained.ok());
    // 1500 nodes in chunks of 97: 16 chunks, so three ranks' last round has an empty turn.
    const train::LayerwiseOptions alone = LayerwiseOf(t, 97);
    std::vector<int32_t> want_classes;
    std::vector<float> want_embeddings;
    REQUIRE(train::PredictByLayer((*trainer)->model(), *f.data->graph, *f.data->features, alone,
                                  nodes, &want_classes, &want_embeddings)
                .ok());
    for (const int ranks : {2, 3}) {
      CAPTURE(ranks);
      auto comms = dist::CreateThreadCommunicators(ranks, {.timeout_seconds = 60});
      std::vector<std::vector<int32_t>> classes(static_cast<size_t>(ranks));
      std::vector<std::vector<float>> embeddings(static_cast<size_t>(ranks));
      std::vector<Status> status(static_cast<size_t>(ranks));
      std::vector<std::thread> threads;
      for (int r = 0; r < ranks; ++r) {
        threads.emplace_back([&, r] {
          const size_t i = static_cast<size_t>(r);
          auto model = train::Trainer::Create(f.data->data, t);  // restored, never trained
          SKIFF_CHECK(model.ok());
          SKIFF_CHECK((*model)->Restore(*trained).ok());
          train::LayerwiseOptions shared = alone;
          shared.comm = comms[i].get();
          // Rank 0 asks for every node, rank 1 for the first 100, rank 2 for none.
          const std::vector<int64_t> mine =
              r == 0   ? nodes
              : r == 1 ? std::vector<int64_t>(nodes.begin(), nodes.begin() + 100)
                       : std::vector<int64_t>();
          status[i] = train::PredictByLayer((*model)->model(), *f.data->graph, *f.data->features,
                                            shared, mine, &classes[i], &embeddings[i]);
        });
      }
      for (std::thread& th : threads) th.join();
      for (const Status& st : status) CHECK(st.ok());
      // Measured: bitwise (the same chunks as one process's).
      CHECK(classes[0] == want_classes);
      CHECK(embeddings[0] == want_embeddings);
      const size_t dim = static_cast<size_t>((*trainer)->model().EmbeddingDim());
      CHECK(classes[1] == std::vector<int32_t>(want_classes.begin(), want_classes.begin() + 100));
      CHECK(embeddings[1] ==
            std::vector<float>(want_embeddings.begin(), want_embeddings.begin() + 100 * dim));
      if (ranks == 3) CHECK(classes[2].empty());
    }
  }
}

TEST_CASE("layer-wise inference among ranks fails, naming the rows, when a rank is missing") {
  Fixture f;
  const train::TrainOptions t = Options(model::ModelKind::kSage, model::Norm::kNone);
  auto trainer = train::Trainer::Create(f.data->data, t);
  REQUIRE(trainer.ok());
  auto comms = dist::CreateThreadCommunicators(2, {.timeout_seconds = 0.2});
  train::LayerwiseOptions o = LayerwiseOf(t, 500);
  o.comm = comms[0].get();  // rank 1 never calls
  const std::vector<int64_t> nodes{0, 1};
  std::vector<int32_t> classes;
  std::vector<float> embeddings;
  const Status st = train::PredictByLayer((*trainer)->model(), *f.data->graph, *f.data->features, o,
                                          nodes, &classes, &embeddings);
  CHECK(st.code() == StatusCode::kAborted);
  CHECK(st.message().find("layer-wise rows") != std::string::npos);
}

TEST_CASE("layer-wise inference refuses what it cannot run") {
  Fixture f;
  const train::TrainOptions t = Options(model::ModelKind::kSage, model::Norm::kNone);
  auto trainer = train::Trainer::Create(f.data->data, t);
  REQUIRE(trainer.ok());
  model::Model& m = (*trainer)->model();
  const auto& graph = *f.data->graph;
  const auto& features = *f.data->features;
  std::vector<int32_t> classes;
  std::vector<float> embeddings;
  auto run = [&](const train::LayerwiseOptions& o, std::vector<int64_t> nodes) {
    return train::PredictByLayer(m, graph, features, o, nodes, &classes, &embeddings);
  };
  train::LayerwiseOptions o = LayerwiseOf(t, 100);
  CHECK(run(o, {0, 1, 2}).ok());
  CHECK(run(o, {0, 1, 0}).message().find("node 0 is asked for twice") != std::string::npos);
  CHECK(run(o, {0, 1500}).message().find("node 1500 is not in the graph") != std::string::npos);
  o.fanouts = {5, 5};
  CHECK(run(o, {0}).message().find("2 fanouts for a model of 3 layers") != std::string::npos);
  o = LayerwiseOf(t, 0);
  CHECK(run(o, {0}).code() == StatusCode::kInvalidArgument);

  BatchOnlyModel batch_only(m.config());
  const Status st = train::PredictByLayer(batch_only, graph, features, LayerwiseOf(t, 100), {},
                                          &classes, &embeddings);
  CHECK(st.code() == StatusCode::kUnavailable);
  CHECK(st.message().find("does not run layer by layer") != std::string::npos);
}

TEST_CASE("ForwardLayer checks its layer and block") {
  model::ModelConfig config;
  config.in_dim = 3;
  config.num_classes = 2;
  config.hidden_dim = 4;
  config.num_layers = 2;
  auto m = model::Model::CreateCpu(config);
  REQUIRE(m.ok());
  CHECK((*m)->runs_by_layer());
  CHECK((*m)->LayerInputDim(0) == 3);
  CHECK((*m)->LayerOutputDim(0) == 4);
  CHECK((*m)->LayerInputDim(1) == 4);
  CHECK((*m)->LayerOutputDim(1) == 2);
  sampler::Block block;
  block.num_dst = 1;
  block.num_src = 2;
  block.indptr = {0, 1};
  block.indices = {1};
  const std::vector<float> x(2 * 4, 0.5f);
  std::vector<float> out;
  REQUIRE((*m)->ForwardLayer(1, block, x.data(), &out).ok());
  CHECK(out.size() == 2);
  CHECK((*m)->ForwardLayer(2, block, x.data(), &out).code() == StatusCode::kInvalidArgument);
  CHECK((*m)->ForwardLayer(-1, block, x.data(), &out).code() == StatusCode::kInvalidArgument);
  block.indices = {2};  // outside the sources
  CHECK((*m)->ForwardLayer(1, block, x.data(), &out).code() == StatusCode::kInvalidArgument);
  block.indices = {1};
  CHECK((*m)->ForwardLayer(1, block, nullptr, &out).code() == StatusCode::kInvalidArgument);
}
