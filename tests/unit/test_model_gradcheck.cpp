#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "kernels/cpu/cross_entropy.h"
#include "skiff/model/model.h"
#include "tests/unit/test_model_util.h"

using namespace skiff;
using namespace skiff::model;

namespace {

// Adds U(-0.1, 0.1) to every parameter. Zero-initialised biases would otherwise leave rows whose
// attention is fully dropped at exactly 0, on ReLU's kink, where central differences are wrong.
void JitterParameters(Model& m, std::mt19937_64& rng) {
  for (const Parameter& p : m.Parameters()) {
    const std::vector<float> noise = testing::RandomVector(p.size(), rng, -0.1f, 0.1f);
    for (int64_t i = 0; i < p.size(); ++i) p.data[i] += noise[static_cast<size_t>(i)];
  }
}

// Whole-model check: d loss / d parameter by central differences against Backward, for every
// parameter tensor (all entries of these tiny models), with dropout active (fixed seed, so the
// masks are part of a deterministic function).
void CheckModelGradients(ModelConfig config, bool whole_graph_degrees = false) {
  config.in_dim = 5;
  config.hidden_dim = 6;
  config.num_classes = 3;
  config.heads = 2;
  config.dropout = 0.2f;
  config.input_dropout = 0.1f;
  config.seed = 11;
  auto created = Model::CreateCpu(config);
  REQUIRE(created.ok());
  Model& m = **created;
  std::mt19937_64 rng(12);
  JitterParameters(m, rng);
  sampler::MiniBatch batch = testing::RandomMiniBatch({13, 7, 5}, 4, 3, rng);
  if (whole_graph_degrees) testing::AddRandomDegrees(&batch, rng);
  auto x = testing::RandomVector(13 * config.in_dim, rng);
  const uint64_t dropout_seed = 99;
  std::vector<float> logits, grad(5 * 3);
  auto loss = [&]() -> double {
    REQUIRE(m.Forward(batch, x.data(), true, dropout_seed, &logits).ok());
    return cpu::SoftmaxCrossEntropy(5, 3, logits.data(), batch.labels.data(), grad.data(), nullptr);
  };
  m.ZeroGrad();
  loss();
  REQUIRE(m.Backward(grad.data()).ok());
  for (const Parameter& p : m.Parameters()) {
    const std::vector<float> analytic(p.grad, p.grad + p.size());
    testing::CheckGradient(p.name, p.data, static_cast<size_t>(p.size()), analytic.data(), loss,
                           1e-3, 5e-4, 3e-2);
  }
}

}  // namespace

TEST_CASE("model: SAGE gradients match finite differences") {
  ModelConfig c;
  c.kind = ModelKind::kSage;
  CheckModelGradients(c);
  c.norm = model::Norm::kLayer;
  c.activation = model::Activation::kElu;
  CheckModelGradients(c);
}

TEST_CASE("model: GCN gradients match finite differences") {
  ModelConfig c;
  c.kind = ModelKind::kGcn;
  CheckModelGradients(c);
  CheckModelGradients(c, /*whole_graph_degrees=*/true);
  c.norm = model::Norm::kLayer;
  c.activation = model::Activation::kElu;
  CheckModelGradients(c);
}

TEST_CASE("model: GAT gradients match finite differences") {
  ModelConfig c;
  c.kind = ModelKind::kGat;
  c.activation = model::Activation::kElu;
  CheckModelGradients(c);
  c.norm = model::Norm::kLayer;
  c.activation = model::Activation::kRelu;
  CheckModelGradients(c);
}

TEST_CASE("model: three-layer models with wide layers take both aggregation orders") {
  // hidden 40 > in 5 makes the first layer aggregate first; the last (3 classes) projects first.
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn}) {
    ModelConfig c;
    c.kind = kind;
    c.in_dim = 5;
    c.hidden_dim = 40;
    c.num_classes = 3;
    c.num_layers = 3;
    c.dropout = 0.0f;
    c.activation = model::Activation::kElu;  // smooth, so no unit sits on a kink
    auto created = Model::CreateCpu(c);
    REQUIRE(created.ok());
    Model& m = **created;
    std::mt19937_64 rng(13);
    JitterParameters(m, rng);
    sampler::MiniBatch batch = testing::RandomMiniBatch({30, 20, 9, 4}, 6, 3, rng);
    auto x = testing::RandomVector(30 * 5, rng);
    std::vector<float> logits, grad(4 * 3);
    auto loss = [&]() -> double {
      REQUIRE(m.Forward(batch, x.data(), false, 0, &logits).ok());
      return cpu::SoftmaxCrossEntropy(4, 3, logits.data(), batch.labels.data(), grad.data(),
                                      nullptr);
    };
    m.ZeroGrad();
    loss();
    REQUIRE(m.Backward(grad.data()).ok());
    for (const Parameter& p : m.Parameters()) {
      const std::vector<float> analytic(p.grad, p.grad + p.size());
      testing::CheckGradient(p.name, p.data, static_cast<size_t>(p.size()), analytic.data(), loss,
                             1e-3, 5e-4, 3e-2, 7);
    }
  }
}

namespace {

// Forward + Backward of `m` on `batch`, from rows or from their aggregated form; returns the logits
// and every parameter gradient, concatenated.
// A copy of `batch` whose block 0 keeps its sizes only, and input_nodes its destinations
// (sampler::Block::condensed), as the out-of-core pipeline hands aggregated batches over.
sampler::MiniBatch Condensed(sampler::MiniBatch batch) {
  sampler::Block& b0 = batch.blocks[0];
  batch.input_nodes.resize(static_cast<size_t>(b0.num_dst));
  b0.indptr.clear();
  b0.indices.clear();
  b0.src_degree.clear();
  return batch;
}

// `condensed`: the aggregated input goes with Condensed(batch).
std::vector<float> StepResult(Model& m, const sampler::MiniBatch& batch,
                              const std::vector<float>& x, bool aggregated, bool training,
                              bool condensed = false) {
  const ModelConfig& c = m.config();
  std::vector<float> logits, dst_rows, agg;
  const sampler::MiniBatch condensed_batch = Condensed(batch);  // Backward reads the batch too
  if (aggregated) {
    const sampler::Block& b0 = batch.blocks[0];
    dst_rows.resize(static_cast<size_t>(b0.num_dst * c.in_dim));
    agg.resize(dst_rows.size());
    AggregateFirstLayerInput(b0, x.data(), c.in_dim, FirstLayerDropout(c), training, 77,
                             dst_rows.data(), agg.data());
    REQUIRE(m.ForwardAggregated(condensed ? condensed_batch : batch, dst_rows.data(), agg.data(),
                                training, 77, &logits)
                .ok());
  } else {
    REQUIRE(m.Forward(batch, x.data(), training, 77, &logits).ok());
  }
  const int64_t rows = static_cast<int64_t>(batch.seeds.size());
  std::vector<float> grad(logits.size());
  cpu::SoftmaxCrossEntropy(rows, c.num_classes, logits.data(), batch.labels.data(), grad.data(),
                           nullptr);
  m.ZeroGrad();
  REQUIRE(m.Backward(grad.data()).ok());
  std::vector<float> out = logits;
  for (const Parameter& p : m.Parameters()) out.insert(out.end(), p.grad, p.grad + p.size());
  return out;
}

}  // namespace

TEST_CASE("model: SAGE from aggregated first-layer input computes what it computes from rows") {
  for (const int layers : {1, 2, 3}) {
    for (const bool training : {false, true}) {
      CAPTURE(layers);
      CAPTURE(training);
      ModelConfig config;
      config.kind = ModelKind::kSage;
      config.in_dim = 24;  // wide input: the rows path aggregates first, as the aggregated one
      config.hidden_dim = 8;
      config.num_classes = 3;
      config.num_layers = layers;
      config.dropout = 0.3f;
      config.input_dropout = 0.2f;
      config.seed = 5;
      auto created = Model::CreateCpu(config);
      REQUIRE(created.ok());
      Model& m = **created;
      REQUIRE(m.accepts_aggregated_input());
      std::mt19937_64 rng(static_cast<uint64_t>(layers) * 10 + training);
      std::vector<int64_t> sizes = {40, 17, 9, 4};
      sizes.erase(sizes.begin() + 1, sizes.begin() + (4 - layers));
      const sampler::MiniBatch batch = testing::RandomMiniBatch(sizes, 5, 3, rng);
      const std::vector<float> x = testing::RandomVector(40 * config.in_dim, rng);
      const std::vector<float> from_rows = StepResult(m, batch, x, false, training);
      const std::vector<float> from_aggregated = StepResult(m, batch, x, true, training);
      REQUIRE(from_rows.size() == from_aggregated.size());
      for (size_t i = 0; i < from_rows.size(); ++i) {
        // Same arithmetic in the same order: equal (the tolerance only absorbs GEMM blocking).
        CHECK(from_aggregated[i] == doctest::Approx(from_rows[i]).epsilon(1e-5));
      }
      // Block 0's edges are not needed once its input is aggregated: the same step, bit for bit.
      CHECK(StepResult(m, batch, x, true, training, true) == from_aggregated);
      // A condensed batch cannot take rows.
      std::vector<float> logits;
      const Status rows = m.Forward(Condensed(batch), x.data(), training, 77, &logits);
      CHECK(rows.code() == StatusCode::kInvalidArgument);
      CHECK(rows.message().find("condensed") != std::string::npos);
    }
  }
}

TEST_CASE("model: GCN and GAT refuse aggregated input") {
  for (const ModelKind kind : {ModelKind::kGcn, ModelKind::kGat}) {
    ModelConfig config;
    config.kind = kind;
    config.in_dim = 4;
    config.hidden_dim = 4;
    config.num_classes = 2;
    auto created = Model::CreateCpu(config);
    REQUIRE(created.ok());
    CHECK_FALSE((*created)->accepts_aggregated_input());
    CHECK(InputAggregationOf(config) == InputAggregation::kNone);
    std::mt19937_64 rng(1);
    const sampler::MiniBatch batch = testing::RandomMiniBatch({6, 4, 2}, 2, 2, rng);
    std::vector<float> rows(4 * 4, 1.0f), logits;
    const Status s =
        (*created)->ForwardAggregated(batch, rows.data(), rows.data(), false, 0, &logits);
    CHECK(s.code() == StatusCode::kUnavailable);
  }
}
