// The CUDA model against the CPU model: same config and seed, same mini-batch and features. The
// CUDA model's parameters are the CPU model's initialisation (checked bitwise); logits and the
// gradient of every parameter must agree within a relative tolerance of 1e-4 of the largest
// magnitude (fp32 cuBLAS and atomics reorder sums; nothing else differs), with and without
// dropout (the kernels use the same DropoutKeep hash), for SAGE, GCN and GAT, with LayerNorm and
// ELU variants; and a few Adam steps on the CUDA model lower the training loss. The device-resident
// steps (TrainStep, EvalStep: loss, backward and optimiser on the device) follow the CPU model's
// over several SGD steps within the same tolerance, and their loss totals agree; features held on
// the device give the logits of the same rows passed in; a device row cache smaller than the
// features computes and trains as rows uploaded whole; the optimiser state and parameters read
// back for a checkpoint continue the run on another model.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cross_entropy.h"
#include "skiff/model/model.h"
#include "skiff/sampler/feature_source.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/model_compare.h"
#include "tests/unit/test_model_util.h"

using namespace skiff;
using namespace skiff::model;

namespace {

using gpu_testing::CheckClose;
using gpu_testing::CheckParametersClose;

ModelConfig Config(ModelKind kind, const std::string& norm, const std::string& activation) {
  ModelConfig c;
  c.kind = kind;
  c.in_dim = 37;
  c.hidden_dim = 24;
  c.num_classes = 5;
  c.num_layers = 3;
  c.heads = 3;
  c.dropout = 0.3f;
  c.input_dropout = 0.2f;
  c.norm = ParseName(kNormNames, "norm", norm).value();
  c.activation = ParseName(kActivationNames, "activation", activation).value();
  c.seed = 11;
  c.cuda_matmul = model::CudaMatmul::kFp32;  // the comparisons' tolerance is fp32's
  return c;
}

void CompareOnce(const ModelConfig& c, bool training) {
  std::mt19937_64 rng(5);
  const sampler::MiniBatch batch = testing::RandomMiniBatch({300, 120, 40, 17}, 9, 5, rng);
  std::vector<float> x = gpu_testing::RandomFloats(batch.input_nodes.size() * c.in_dim, 3);
  auto cpu = Model::CreateCpu(c);
  auto gpu = Model::CreateCuda(c);
  REQUIRE(cpu.ok());
  REQUIRE_MESSAGE(gpu.ok(), gpu.status().ToString());
  Model& m_cpu = **cpu;
  Model& m_gpu = **gpu;
  std::vector<Parameter> p_cpu = m_cpu.Parameters(), p_gpu = m_gpu.Parameters();
  REQUIRE(p_cpu.size() == p_gpu.size());
  for (size_t i = 0; i < p_cpu.size(); ++i) {
    CHECK(p_cpu[i].name == p_gpu[i].name);
    REQUIRE(p_cpu[i].shape == p_gpu[i].shape);
    CHECK(std::equal(p_cpu[i].data, p_cpu[i].data + p_cpu[i].size(), p_gpu[i].data));
  }
  m_cpu.ZeroGrad();
  m_gpu.ZeroGrad();
  std::vector<float> logits_cpu, logits_gpu, emb_cpu, emb_gpu;
  SKIFF_REQUIRE_OK(m_cpu.Forward(batch, x.data(), training, 77, &logits_cpu, &emb_cpu));
  SKIFF_REQUIRE_OK(m_gpu.Forward(batch, x.data(), training, 77, &logits_gpu, &emb_gpu));
  CheckClose(logits_gpu, logits_cpu.data(), logits_cpu.size(), "logits");
  CheckClose(emb_gpu, emb_cpu.data(), emb_cpu.size(), "embeddings");
  const int64_t seeds = static_cast<int64_t>(batch.seeds.size());
  std::vector<float> grad(logits_cpu.size());
  cpu::SoftmaxCrossEntropy(seeds, c.num_classes, logits_cpu.data(), batch.labels.data(),
                           grad.data(), nullptr);
  SKIFF_REQUIRE_OK(m_cpu.Backward(grad.data()));
  SKIFF_REQUIRE_OK(m_gpu.Backward(grad.data()));
  CHECK_FALSE(m_gpu.Backward(grad.data()).ok());  // one Backward per Forward
  for (size_t i = 0; i < p_cpu.size(); ++i) {
    std::vector<float> g(p_gpu[i].grad, p_gpu[i].grad + p_gpu[i].size());
    CheckClose(g, p_cpu[i].grad, static_cast<size_t>(p_cpu[i].size()), p_cpu[i].name + " grad");
  }
}

}  // namespace

TEST_CASE("cuda model: logits and gradients match the CPU model") {
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat}) {
    for (const char* norm : {"none", "layer"}) {
      for (const char* act : {"relu", "elu"}) {
        for (bool training : {false, true}) {
          CAPTURE(ModelKindName(kind));
          CAPTURE(norm);
          CAPTURE(act);
          CAPTURE(training);
          CompareOnce(Config(kind, norm, act), training);
        }
      }
    }
  }
}

TEST_CASE("cuda model: rejects a malformed batch and Backward without Forward") {
  auto gpu = Model::CreateCuda(Config(ModelKind::kSage, "none", "relu"));
  REQUIRE_MESSAGE(gpu.ok(), gpu.status().ToString());
  CHECK((*gpu)->Backward(nullptr).code() == StatusCode::kInvalidArgument);
  std::mt19937_64 rng(1);
  sampler::MiniBatch batch =
      testing::RandomMiniBatch({50, 20, 10}, 4, 5, rng);  // 2 blocks, 3 layers
  std::vector<float> x(50 * 37, 0.5f), logits;
  CHECK((*gpu)->Forward(batch, x.data(), false, 0, &logits).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("cuda model: a few Adam steps lower the training loss") {
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat}) {
    CAPTURE(ModelKindName(kind));
    ModelConfig c = Config(kind, "none", "relu");
    c.dropout = 0.0f;
    c.input_dropout = 0.0f;
    std::mt19937_64 rng(9);
    const sampler::MiniBatch batch = testing::RandomMiniBatch({300, 120, 40, 17}, 9, 5, rng);
    std::vector<float> x = gpu_testing::RandomFloats(batch.input_nodes.size() * c.in_dim, 4);
    auto gpu = Model::CreateCuda(c);
    REQUIRE_MESSAGE(gpu.ok(), gpu.status().ToString());
    Model& m = **gpu;
    Optimizer::Config oc;
    oc.lr = 0.01f;
    oc.weight_decay = 0.0f;
    Optimizer opt(m, oc);
    std::vector<float> logits, grad;
    float first = 0, last = 0;
    for (int step = 0; step < 50; ++step) {
      m.ZeroGrad();
      SKIFF_REQUIRE_OK(m.Forward(batch, x.data(), true, static_cast<uint64_t>(step), &logits));
      grad.resize(logits.size());
      const float loss =
          cpu::SoftmaxCrossEntropy(static_cast<int64_t>(batch.seeds.size()), c.num_classes,
                                   logits.data(), batch.labels.data(), grad.data(), nullptr);
      if (step == 0) first = loss;
      last = loss;
      SKIFF_REQUIRE_OK(m.Backward(grad.data()));
      SKIFF_REQUIRE_OK(opt.Step());
    }
    INFO("loss " << first << " -> " << last);
    CHECK(last < 0.5f * first);
  }
}

namespace {

// Features of nodes 0..num_nodes-1 and the rows of `batch`'s input nodes among them.
struct HeldFeatures {
  std::unique_ptr<sampler::InMemoryFeatures> table;
  std::vector<float> rows;
};

// The optimiser of the tests that follow device-resident steps within the fp32 tolerance: SGD with
// momentum (Adam's normalisation would turn a reordered near-zero gradient into a full step).
Optimizer::Config StepComparisonSgd() {
  Optimizer::Config oc;
  oc.kind = model::OptimizerKind::kSgd;
  oc.lr = 0.05f;
  oc.momentum = 0.9f;
  return oc;
}

HeldFeatures MakeFeatures(const sampler::MiniBatch& batch, int64_t dim) {
  const int64_t num_nodes = batch.input_nodes.back() + 7;
  std::vector<float> values = gpu_testing::RandomFloats(static_cast<size_t>(num_nodes * dim), 21);
  HeldFeatures f;
  for (int64_t v : batch.input_nodes) {
    f.rows.insert(f.rows.end(), values.begin() + v * dim, values.begin() + (v + 1) * dim);
  }
  auto table = sampler::InMemoryFeatures::FromMatrix(std::move(values), dim);
  REQUIRE(table.ok());
  f.table = std::move(table).value();
  return f;
}

}  // namespace

TEST_CASE("cuda model: device-resident SGD steps follow the CPU model") {
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat}) {
    CAPTURE(ModelKindName(kind));
    const ModelConfig c = Config(kind, "layer", "relu");
    std::mt19937_64 rng(13);
    const sampler::MiniBatch batch = testing::RandomMiniBatch({300, 120, 40, 17}, 9, 5, rng);
    HeldFeatures f = MakeFeatures(batch, c.in_dim);
    auto cpu = Model::CreateCpu(c);
    auto gpu = Model::CreateCuda(c);
    REQUIRE(cpu.ok());
    REQUIRE_MESSAGE(gpu.ok(), gpu.status().ToString());
    auto held = (*gpu)->HoldFeatures(*f.table, 0);
    SKIFF_REQUIRE_OK(held.status());
    REQUIRE(*held);
    const Optimizer::Config oc = StepComparisonSgd();
    Optimizer opt_cpu(**cpu, oc), opt_gpu(**gpu, oc);
    for (int step = 0; step < 5; ++step) {
      const uint64_t seed = 100 + static_cast<uint64_t>(step);
      SKIFF_REQUIRE_OK((*cpu)->TrainStep({.batch = &batch, .x = f.rows.data()}, seed, opt_cpu));
      // Odd steps from the held features, even steps from the rows: both paths train alike.
      const float* x = step % 2 == 1 ? nullptr : f.rows.data();
      SKIFF_REQUIRE_OK((*gpu)->TrainStep({.batch = &batch, .x = x}, seed, opt_gpu));
    }
    SKIFF_REQUIRE_OK((*cpu)->EvalStep({.batch = &batch, .x = f.rows.data()}));
    SKIFF_REQUIRE_OK((*gpu)->EvalStep({.batch = &batch}));
    auto totals_cpu = (*cpu)->TakeLossTotals();
    auto totals_gpu = (*gpu)->TakeLossTotals();
    SKIFF_REQUIRE_OK(totals_gpu.status());
    CHECK(totals_gpu->labelled == totals_cpu->labelled);
    CHECK(std::abs(totals_gpu->correct - totals_cpu->correct) <= 1);  // a near-tie may flip
    CHECK(std::fabs(totals_gpu->loss_sum - totals_cpu->loss_sum) <=
          1e-4 * std::max(1.0, std::fabs(totals_cpu->loss_sum)));
    CheckParametersClose(**gpu, **cpu, "after 5 steps:");
    // Totals were taken: the next ones start from zero.
    auto empty = (*gpu)->TakeLossTotals();
    SKIFF_REQUIRE_OK(empty.status());
    CHECK(empty->labelled == 0);
  }
}

TEST_CASE("cuda model: held features give the logits of the rows passed in") {
  const ModelConfig c = Config(ModelKind::kSage, "none", "relu");
  std::mt19937_64 rng(3);
  const sampler::MiniBatch batch = testing::RandomMiniBatch({200, 90, 30, 11}, 7, 5, rng);
  HeldFeatures f = MakeFeatures(batch, c.in_dim);
  auto gpu = Model::CreateCuda(c);
  REQUIRE_MESSAGE(gpu.ok(), gpu.status().ToString());
  std::vector<float> logits;
  CHECK((*gpu)->Forward(batch, nullptr, false, 0, &logits).code() ==
        StatusCode::kInvalidArgument);  // nothing held yet
  // A budget smaller than the table: not held.
  auto refused = (*gpu)->HoldFeatures(*f.table, 1024);
  SKIFF_REQUIRE_OK(refused.status());
  CHECK_FALSE(*refused);
  CHECK_FALSE((*gpu)->holds_features());
  auto held = (*gpu)->HoldFeatures(*f.table, 0);
  SKIFF_REQUIRE_OK(held.status());
  REQUIRE(*held);
  std::vector<float> from_rows, from_ids;
  SKIFF_REQUIRE_OK((*gpu)->Forward(batch, f.rows.data(), true, 5, &from_rows));
  SKIFF_REQUIRE_OK((*gpu)->Forward(batch, nullptr, true, 5, &from_ids));
  CHECK(from_rows == from_ids);  // the same rows, the same deterministic forward
}

namespace {

// `batch` with its input nodes renumbered to distinct IDs drawn from [0, num_nodes), skewed toward
// small IDs (so that some rows recur across batches and others do not); its seeds follow.
sampler::MiniBatch Renumbered(sampler::MiniBatch batch, int64_t num_nodes, std::mt19937_64& rng) {
  std::vector<char> taken(static_cast<size_t>(num_nodes), 0);
  for (int64_t& v : batch.input_nodes) {
    do {
      const auto a = static_cast<int64_t>(rng() % static_cast<uint64_t>(num_nodes));
      const auto b = static_cast<int64_t>(rng() % static_cast<uint64_t>(num_nodes));
      v = a * b / num_nodes;
    } while (taken[static_cast<size_t>(v)] != 0);
    taken[static_cast<size_t>(v)] = 1;
  }
  batch.seeds.assign(batch.input_nodes.begin(), batch.input_nodes.begin() + batch.seeds.size());
  return batch;
}

}  // namespace

TEST_CASE("cuda model: a row cache smaller than the features trains as rows uploaded whole") {
  // 6000 rows of 37 floats (888 KB) against 296 KB of device memory for them: a cache of 2000
  // rows, batches of 300 inputs that recur in part (hits, misses and evictions) and, every fifth,
  // one of 2500 inputs, more than the cache holds (uploaded without it). A second model given the
  // same rows without a cache (HoldFeatures never asked) must compute the same logits bit for bit
  // while their parameters are equal, and train the same within the fp32 tolerance.
  const ModelConfig c = Config(ModelKind::kGcn, "layer", "relu");
  const int64_t num_nodes = 6000, cache_rows = 2000;
  std::vector<float> values =
      gpu_testing::RandomFloats(static_cast<size_t>(num_nodes * c.in_dim), 23);
  auto table = sampler::InMemoryFeatures::FromMatrix(values, c.in_dim);
  REQUIRE(table.ok());
  auto cached = Model::CreateCuda(c);
  auto plain = Model::CreateCuda(c);
  REQUIRE_MESSAGE(cached.ok(), cached.status().ToString());
  REQUIRE(plain.ok());
  auto held = (*cached)->HoldFeatures(**table, cache_rows * c.in_dim * sizeof(float));
  SKIFF_REQUIRE_OK(held.status());
  CHECK_FALSE(*held);  // batches still carry their rows
  CHECK_FALSE((*cached)->holds_features());
  CHECK((*cached)->DeviceDescription().find("a device cache of 2000 feature rows") !=
        std::string::npos);
  std::mt19937_64 rng(29);
  std::vector<sampler::MiniBatch> batches;
  for (int step = 0; step < 30; ++step) {
    const std::vector<int64_t> sizes = step % 5 == 4 ? std::vector<int64_t>{2500, 300, 40, 17}
                                                     : std::vector<int64_t>{300, 120, 40, 17};
    batches.push_back(Renumbered(testing::RandomMiniBatch(sizes, 9, 5, rng), num_nodes, rng));
    testing::AddRandomDegrees(&batches.back(), rng);
  }
  auto rows_of = [&](const sampler::MiniBatch& batch) {
    std::vector<float> rows;
    for (int64_t v : batch.input_nodes) {
      rows.insert(rows.end(), values.begin() + v * c.in_dim, values.begin() + (v + 1) * c.in_dim);
    }
    return rows;
  };
  // Forward only (equal parameters, deterministic forward): the same logits bit for bit, through
  // hits, misses, evictions and the batches larger than the cache.
  for (size_t b = 0; b < batches.size(); ++b) {
    CAPTURE(b);
    const std::vector<float> rows = rows_of(batches[b]);
    std::vector<float> logits_cached, logits_plain;
    SKIFF_REQUIRE_OK((*cached)->Forward(batches[b], rows.data(), false, 0, &logits_cached));
    SKIFF_REQUIRE_OK((*plain)->Forward(batches[b], rows.data(), false, 0, &logits_plain));
    REQUIRE(logits_cached == logits_plain);
  }
  // The same batches as evaluation steps, queued without waiting for the device (each batch's
  // uploads and cache writes overlap the previous batch's compute): the same loss totals.
  std::vector<std::vector<float>> all_rows;
  for (const sampler::MiniBatch& batch : batches) all_rows.push_back(rows_of(batch));
  for (size_t b = 0; b < batches.size(); ++b) {
    SKIFF_REQUIRE_OK((*cached)->EvalStep({.batch = &batches[b], .x = all_rows[b].data()}));
    SKIFF_REQUIRE_OK((*plain)->EvalStep({.batch = &batches[b], .x = all_rows[b].data()}));
  }
  auto totals_cached = (*cached)->TakeLossTotals();
  auto totals_plain = (*plain)->TakeLossTotals();
  SKIFF_REQUIRE_OK(totals_cached.status());
  SKIFF_REQUIRE_OK(totals_plain.status());
  CHECK(totals_cached->labelled == totals_plain->labelled);
  CHECK(totals_cached->correct == totals_plain->correct);
  CHECK(std::fabs(totals_cached->loss_sum - totals_plain->loss_sum) <=
        1e-5 * std::max(1.0, std::fabs(totals_plain->loss_sum)));
  // Training (atomics in the backward reorder sums): the same parameters within the tolerance,
  // after ten SGD steps, two of them on batches larger than the cache.
  const Optimizer::Config oc = StepComparisonSgd();
  Optimizer opt_cached(**cached, oc), opt_plain(**plain, oc);
  for (size_t b = 0; b < 10; ++b) {
    const std::vector<float> rows = rows_of(batches[b]);
    const model::BatchInput input{.batch = &batches[b], .x = rows.data()};
    SKIFF_REQUIRE_OK((*cached)->TrainStep(input, b, opt_cached));
    SKIFF_REQUIRE_OK((*plain)->TrainStep(input, b, opt_plain));
  }
  CheckParametersClose(**cached, **plain, "after 10 steps:");
  // An input outside the features the cache was sized for is refused, naming it.
  std::mt19937_64 rng2(31);
  sampler::MiniBatch bad = testing::RandomMiniBatch({300, 120, 40, 17}, 9, 5, rng2);
  bad.input_nodes[5] = num_nodes;
  std::vector<float> rows(bad.input_nodes.size() * static_cast<size_t>(c.in_dim), 0.5f);
  std::vector<float> logits;
  const Status st = (*cached)->Forward(bad, rows.data(), false, 0, &logits);
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message().find(std::to_string(num_nodes)) != std::string::npos);
}

TEST_CASE("cuda model: rows larger than an upload chunk arrive whole, in order") {
  // 12,000 and 40,000 input rows of 128 floats (6 and 20 MB): the rows go up through the two
  // pinned chunks of BatchStaging::kRowChunkBytes several times over per batch. The same batch
  // from held features (IDs only) must give the same logits bit for bit.
  ModelConfig c = Config(ModelKind::kSage, "none", "relu");
  c.in_dim = 128;
  for (const int64_t inputs : {int64_t{12000}, int64_t{40000}}) {
    CAPTURE(inputs);
    std::mt19937_64 rng(37);
    const sampler::MiniBatch batch = testing::RandomMiniBatch({inputs, 3000, 400, 17}, 9, 5, rng);
    HeldFeatures f = MakeFeatures(batch, c.in_dim);
    auto gpu = Model::CreateCuda(c);
    REQUIRE_MESSAGE(gpu.ok(), gpu.status().ToString());
    std::vector<float> from_rows, from_rows_again, from_ids;
    SKIFF_REQUIRE_OK((*gpu)->Forward(batch, f.rows.data(), false, 0, &from_rows));
    SKIFF_REQUIRE_OK((*gpu)->Forward(batch, f.rows.data(), false, 0, &from_rows_again));
    auto held = (*gpu)->HoldFeatures(*f.table, 0);
    SKIFF_REQUIRE_OK(held.status());
    REQUIRE(*held);
    SKIFF_REQUIRE_OK((*gpu)->Forward(batch, nullptr, false, 0, &from_ids));
    CHECK(from_rows == from_rows_again);
    CHECK(from_rows == from_ids);
  }
}

TEST_CASE("cuda model: a checkpoint's state read back continues the run on another model") {
  const ModelConfig c = Config(ModelKind::kSage, "none", "relu");
  std::mt19937_64 rng(17);
  const sampler::MiniBatch batch = testing::RandomMiniBatch({300, 120, 40, 17}, 9, 5, rng);
  HeldFeatures f = MakeFeatures(batch, c.in_dim);
  auto a = Model::CreateCuda(c);
  auto b = Model::CreateCuda(c);
  REQUIRE_MESSAGE(a.ok(), a.status().ToString());
  REQUIRE(b.ok());
  Optimizer::Config oc;
  oc.lr = 0.01f;
  Optimizer opt_a(**a, oc), opt_b(**b, oc);
  const model::BatchInput input{.batch = &batch, .x = f.rows.data()};
  for (int step = 0; step < 3; ++step) SKIFF_REQUIRE_OK((*a)->TrainStep(input, 7, opt_a));
  // What Trainer::MakeCheckpoint reads and Restore writes.
  auto state_a = opt_a.state();
  SKIFF_REQUIRE_OK(state_a.status());
  bool moved = false;
  for (const auto& moment : **state_a) {
    moved = moved || std::any_of(moment.begin(), moment.end(), [](float v) { return v != 0; });
  }
  CHECK(moved);  // the device moments came back
  std::vector<Parameter> pa = (*a)->Parameters(), pb = (*b)->Parameters();
  for (size_t i = 0; i < pa.size(); ++i)
    std::copy(pa[i].data, pa[i].data + pa[i].size(), pb[i].data);
  auto state_b = opt_b.state();
  SKIFF_REQUIRE_OK(state_b.status());
  **state_b = **state_a;
  opt_b.set_steps(opt_a.steps());
  SKIFF_REQUIRE_OK((*a)->TrainStep(input, 8, opt_a));
  SKIFF_REQUIRE_OK((*b)->TrainStep(input, 8, opt_b));
  CheckParametersClose(**b, **a, "continued:");
}
