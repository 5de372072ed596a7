// ReplicaGroup (model/replica_group.h) with CPU replicas, the reference the CUDA group (one replica
// per GPU, NCCL sums) follows: G replicas with accumulate A take one step per G * A batches, as one
// model accumulating the same batches does -- bitwise when each replica has one batch of the step
// (the host sum adds in replica order = batch order), to float rounding otherwise; one replica
// with accumulate 1 is the plain model's TrainStep, bitwise; the replicas stay identical, also
// after the caller changes the parameters; an empty or mixed group is refused, and a failed sum
// fails its step without an update.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "skiff/model/model.h"
#include "skiff/model/replica_group.h"
#include "skiff/train/gradient_sum.h"
#include "tests/unit/test_model_util.h"

namespace skiff::model {
namespace {

constexpr int64_t kInDim = 6;
constexpr int32_t kClasses = 3;

ModelConfig Config() {
  ModelConfig c;
  c.kind = ModelKind::kSage;
  c.in_dim = kInDim;
  c.hidden_dim = 8;
  c.num_classes = kClasses;
  c.num_layers = 2;
  c.dropout = 0.25f;  // masks from each batch's seed, on whichever replica runs it
  c.seed = 11;
  return c;
}

struct Batch {
  sampler::MiniBatch batch;
  std::vector<float> x;
  BatchInput input() const { return {.batch = &batch, .x = x.data()}; }
};

std::vector<Batch> Batches(int n) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<Batch> out(static_cast<size_t>(n));
  for (Batch& b : out) {
    b.batch = testing::RandomMiniBatch({14, 9, 5}, 4, kClasses, rng);
    b.x.resize(b.batch.input_nodes.size() * kInDim);
    for (float& v : b.x) v = value(rng);
  }
  return out;
}

uint64_t SeedOf(size_t b) { return 1000 + b; }

std::vector<float> Flatten(Model& m) {
  std::vector<float> out;
  for (const Parameter& p : m.Parameters()) out.insert(out.end(), p.data, p.data + p.size());
  return out;
}

// One CPU model over `batches`, `per_step` batches per step (the last step shorter), each batch's
// gradients summed in batch order and the mean stored (train::GradientSum): --accumulate.
std::unique_ptr<Model> OneModel(const std::vector<Batch>& batches, int per_step,
                                LossTotals* totals) {
  auto model = Model::CreateCpu(Config());
  REQUIRE(model.ok());
  Model& m = **model;
  Optimizer opt(m, OptimizerConfig{});
  train::GradientSum sum(m.NumParameters());
  for (size_t b = 0; b < batches.size(); ++b) {
    if (per_step == 1) {
      REQUIRE(m.TrainStep(batches[b].input(), SeedOf(b), opt).ok());
      continue;
    }
    REQUIRE(m.ComputeGradients(batches[b].input(), SeedOf(b)).ok());
    sum.Add(m.Parameters());
    if (sum.batches() == per_step || b + 1 == batches.size()) {
      sum.Store(m.Parameters(), sum.batches());
      sum.Clear();
      REQUIRE(opt.Step().ok());
    }
  }
  auto t = m.TakeLossTotals();
  REQUIRE(t.ok());
  *totals = *t;
  return std::move(*model);
}

// A host group of `replicas` with `accumulate` over `batches`, as the trainer drives it.
std::unique_ptr<ReplicaGroup> Group(const std::vector<Batch>& batches, int replicas, int accumulate,
                                    LossTotals* totals) {
  auto group = ReplicaGroup::CreateOnHost(Config(), replicas, accumulate);
  REQUIRE(group.ok());
  ReplicaGroup& g = **group;
  Optimizer opt(g, OptimizerConfig{});
  for (size_t b = 0; b < batches.size(); ++b) {
    REQUIRE(g.TrainStep(batches[b].input(), SeedOf(b), opt).ok());
  }
  REQUIRE(g.EndTrainingPass(opt).ok());
  CHECK(opt.steps() == static_cast<int64_t>((batches.size() + replicas * accumulate - 1) /
                                            (replicas * accumulate)));
  auto t = g.TakeLossTotals();
  REQUIRE(t.ok());
  *totals = *t;
  return std::move(*group);
}

void CheckReplicasAlike(ReplicaGroup& g) {
  const std::vector<float> first = Flatten(g.replica(0));
  for (int r = 1; r < g.size(); ++r) {
    CAPTURE(r);
    CHECK(Flatten(g.replica(r)) == first);
  }
}

TEST_CASE("a replica group of one, one batch per step, is the plain model, bitwise") {
  const std::vector<Batch> batches = Batches(5);
  LossTotals plain_totals, group_totals;
  auto plain = OneModel(batches, 1, &plain_totals);
  auto group = Group(batches, 1, 1, &group_totals);
  CHECK(Flatten(*group) == Flatten(*plain));
  CHECK(group_totals.loss_sum == plain_totals.loss_sum);
  CHECK(group_totals.correct == plain_totals.correct);
  CHECK(group_totals.labelled == plain_totals.labelled);
}

TEST_CASE("G replicas, one batch each per step, are one model's --accumulate G, bitwise") {
  const std::vector<Batch> batches = Batches(7);  // the last step has fewer batches than G
  for (int replicas : {2, 3}) {
    CAPTURE(replicas);
    LossTotals one_totals, group_totals;
    auto one = OneModel(batches, replicas, &one_totals);
    auto group = Group(batches, replicas, 1, &group_totals);
    CHECK(Flatten(*group) == Flatten(*one));
    CheckReplicasAlike(*group);
    CHECK(group_totals.labelled == one_totals.labelled);
    CHECK(group_totals.correct == one_totals.correct);
    CHECK(group_totals.loss_sum == doctest::Approx(one_totals.loss_sum).epsilon(1e-12));
  }
}

TEST_CASE("G replicas with accumulate A are one model's --accumulate G * A up to float order") {
  const std::vector<Batch> batches = Batches(9);
  LossTotals one_totals, group_totals;
  auto one = OneModel(batches, 4, &one_totals);
  auto group = Group(batches, 2, 2, &group_totals);
  const std::vector<float> a = Flatten(*group), b = Flatten(*one);
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]) /
                                std::max(1e-3, std::abs(static_cast<double>(b[i]))));
  }
  CHECK(worst < 1e-5);  // replica sums (b0 + b2) + (b1 + b3) against ((b0 + b1) + b2) + b3
  CheckReplicasAlike(*group);
  CHECK(group_totals.correct == one_totals.correct);
}

TEST_CASE("parameters the caller changes reach every replica before the next step") {
  const std::vector<Batch> batches = Batches(4);
  LossTotals totals;
  auto group = Group(batches, 2, 1, &totals);
  // As Restore does: write the group's parameters, then train on.
  for (const Parameter& p : group->Parameters()) {
    for (int64_t i = 0; i < p.size(); ++i) p.data[i] = 0.01f * static_cast<float>(i % 7);
  }
  Optimizer opt(*group, OptimizerConfig{});
  REQUIRE(group->TrainStep(batches[0].input(), 1, opt).ok());
  REQUIRE(group->TrainStep(batches[1].input(), 2, opt).ok());
  CHECK(opt.steps() == 1);
  CheckReplicasAlike(*group);

  // Evaluation goes to the replicas in turn; the totals are every batch's.
  REQUIRE(group->TakeLossTotals().ok());  // the training steps'
  auto one = Model::CreateCpu(Config());
  REQUIRE(one.ok());
  const std::vector<Parameter> from = group->Parameters(), to = (*one)->Parameters();
  for (size_t i = 0; i < from.size(); ++i) std::copy_n(from[i].data, from[i].size(), to[i].data);
  for (const Batch& b : batches) {
    REQUIRE(group->EvalStep(b.input()).ok());
    REQUIRE((*one)->EvalStep(b.input()).ok());
  }
  auto g = group->TakeLossTotals();
  auto o = (*one)->TakeLossTotals();
  REQUIRE(g.ok());
  REQUIRE(o.ok());
  CHECK(g->labelled == o->labelled);
  CHECK(g->correct == o->correct);
  CHECK(g->loss_sum == doctest::Approx(o->loss_sum).epsilon(1e-12));
}

TEST_CASE("a replica group refuses no replicas, and replicas of different models") {
  ReplicaGroup::SumAcross none = [](std::span<Model* const>) { return Status::Ok(); };
  auto empty = ReplicaGroup::Create({}, none, 1, "none");
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.status().code() == StatusCode::kInvalidArgument);
  std::vector<std::unique_ptr<Model>> mixed;
  ModelConfig other = Config();
  other.hidden_dim = 12;
  for (const ModelConfig& c : {Config(), other}) {
    auto m = Model::CreateCpu(c);
    REQUIRE(m.ok());
    mixed.push_back(std::move(*m));
  }
  auto refused = ReplicaGroup::Create(std::move(mixed), none, 1, "mixed");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("different configs") != std::string::npos);
}

TEST_CASE("a failed sum across replicas fails the step, naming it") {
  std::vector<std::unique_ptr<Model>> two;
  for (int g = 0; g < 2; ++g) {
    auto m = Model::CreateCpu(Config());
    REQUIRE(m.ok());
    two.push_back(std::move(*m));
  }
  ReplicaGroup::SumAcross broken = [](std::span<Model* const>) {
    return Status::Internal("NCCL: all-reduce on GPU 1: unhandled cuda error");
  };
  auto group = ReplicaGroup::Create(std::move(two), broken, 1, "broken");
  REQUIRE(group.ok());
  const std::vector<Batch> batches = Batches(2);
  Optimizer opt(**group, OptimizerConfig{});
  REQUIRE((*group)->TrainStep(batches[0].input(), 1, opt).ok());  // the step is not complete
  const Status st = (*group)->TrainStep(batches[1].input(), 2, opt);
  CHECK(st.code() == StatusCode::kInternal);
  CHECK(st.message().find("all-reduce on GPU 1") != std::string::npos);
  CHECK(opt.steps() == 0);  // no update from a step whose sum failed
}

}  // namespace
}  // namespace skiff::model
