// The Trainer's data-parallel path without MPI: W trainers on W threads, joined by a communicator
// of threads (dist::CreateThreadCommunicators: the MPI one's arithmetic: every rank's data, summed
// in rank order), compute what one trainer computes with accumulate = W (with accumulate A each,
// W * A) -- the same parameters
// bitwise, the same accuracies, losses to rounding -- and every training seed is used once per
// epoch.
#include <doctest/doctest.h>

#include <random>
#include <set>
#include <thread>

#include "skiff/dist/communicator.h"
#include "skiff/train/trainer.h"

using namespace skiff;
using namespace skiff::train;

namespace {

// Three classes on a random graph where neighbours mostly share a class.
struct Data {
  std::unique_ptr<sampler::InMemoryGraph> graph;
  std::unique_ptr<sampler::InMemoryFeatures> features;
  TrainData data;
};

std::unique_ptr<Data> MakeData(int64_t n, int64_t dim) {
  auto d = std::make_unique<Data>();
  std::mt19937_64 rng(11);
  std::vector<int32_t> labels(n);
  for (auto& l : labels) l = static_cast<int32_t>(rng() % 3);
  std::vector<int64_t> offsets{0}, neighbours;
  for (int64_t v = 0; v < n; ++v) {
    std::set<int64_t> row;
    while (row.size() < 5) {
      const int64_t w = static_cast<int64_t>(rng() % n);
      if (w != v && (labels[w] == labels[v] || rng() % 4 == 0)) row.insert(w);
    }
    neighbours.insert(neighbours.end(), row.begin(), row.end());
    offsets.push_back(static_cast<int64_t>(neighbours.size()));
  }
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n * dim));
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t k = 0; k < dim; ++k) x[v * dim + k] = noise(rng) + (k == labels[v] ? 0.8f : 0.0f);
  }
  d->graph = std::move(sampler::InMemoryGraph::FromCsr(offsets, neighbours)).value();
  d->features = std::move(sampler::InMemoryFeatures::FromMatrix(x, dim)).value();
  d->data.graph = d->graph.get();
  d->data.features = d->features.get();
  d->data.labels = labels;
  d->data.num_classes = 3;
  for (int64_t v = 0; v < n; ++v) {
    (v % 5 == 0 ? d->data.valid : v % 5 == 1 ? d->data.test : d->data.train).push_back(v);
  }
  return d;
}

TrainOptions Options() {
  TrainOptions o;
  o.model.kind = model::ModelKind::kSage;
  o.model.num_layers = 2;
  o.model.hidden_dim = 8;
  o.model.dropout = 0.3f;
  o.fanouts = {3, 3};
  o.batch_size = 37;  // 600 training nodes: 17 batches, the last one partial
  o.eval_batch_size = 45;
  o.epochs = 2;
  o.seed = 9;
  o.sampler_threads = 1;
  o.show_progress = false;
  return o;
}

struct Outcome {
  std::vector<EpochMetrics> epochs;
  std::vector<std::vector<float>> parameters;
};

Outcome Finish(Trainer& trainer, const Result<TrainSummary>& summary) {
  REQUIRE(summary.ok());
  Outcome out{.epochs = summary->epochs, .parameters = {}};
  for (const model::Parameter& p : trainer.model().Parameters()) {
    out.parameters.emplace_back(p.data, p.data + p.size());
  }
  return out;
}

Outcome RunAccumulating(const TrainData& data, int accumulate) {
  TrainOptions o = Options();
  o.accumulate = accumulate;
  auto trainer = Trainer::Create(data, o);
  REQUIRE(trainer.ok());
  auto summary = (*trainer)->Run();
  return Finish(**trainer, summary);
}

std::vector<Outcome> RunRanks(const TrainData& data, int ranks, int accumulate = 1) {
  auto comms = dist::CreateThreadCommunicators(ranks, {});
  std::vector<Outcome> outcomes(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      dist::Communicator& comm = *comms[static_cast<size_t>(rank)];
      TrainOptions o = Options();
      o.world_size = ranks;
      o.accumulate = accumulate;
      auto trainer = Trainer::Create(data, o);
      SKIFF_CHECK(trainer.ok());
      SKIFF_CHECK((*trainer)->SetCommunicator(&comm).ok());
      auto summary = (*trainer)->Run();
      SKIFF_CHECK(summary.ok());
      Outcome& out = outcomes[static_cast<size_t>(rank)];
      out.epochs = summary->epochs;
      for (const model::Parameter& p : (*trainer)->model().Parameters()) {
        out.parameters.emplace_back(p.data, p.data + p.size());
      }
    });
  }
  for (auto& t : threads) t.join();
  return outcomes;
}

void CheckSame(const Outcome& a, const Outcome& b) {
  REQUIRE(a.epochs.size() == b.epochs.size());
  for (size_t e = 0; e < a.epochs.size(); ++e) {
    CAPTURE(e);
    CHECK(a.epochs[e].train_acc == b.epochs[e].train_acc);
    CHECK(a.epochs[e].valid_acc == b.epochs[e].valid_acc);
    CHECK(a.epochs[e].test_acc == b.epochs[e].test_acc);
    CHECK(a.epochs[e].loss == doctest::Approx(b.epochs[e].loss).epsilon(1e-9));
    CHECK(a.epochs[e].valid_loss == doctest::Approx(b.epochs[e].valid_loss).epsilon(1e-9));
  }
  CHECK(a.parameters == b.parameters);  // bitwise
}

}  // namespace

TEST_CASE("data-parallel trainer: W ranks compute what one process computes with accumulate W") {
  const auto data = MakeData(1000, 12);
  for (int ranks : {2, 3, 4}) {
    CAPTURE(ranks);
    const Outcome one = RunAccumulating(data->data, ranks);
    const std::vector<Outcome> all = RunRanks(data->data, ranks);
    for (const Outcome& rank : all) CheckSame(one, rank);
  }
}

TEST_CASE("data-parallel trainer: W ranks accumulating A compute one process's accumulate W*A") {
  // 17 batches a pass: steps of 4 and 6 batches end with a shorter one, and with W = 3 the last
  // round (batches 15 and 16) has no batch for rank 2.
  const auto data = MakeData(1000, 12);
  for (const auto& [ranks, accumulate] : {std::pair{2, 2}, std::pair{3, 2}, std::pair{2, 3}}) {
    CAPTURE(ranks);
    CAPTURE(accumulate);
    const Outcome one = RunAccumulating(data->data, ranks * accumulate);
    const std::vector<Outcome> all = RunRanks(data->data, ranks, accumulate);
    for (const Outcome& rank : all) CheckSame(one, rank);
    // Not the step of W batches: the rounds really add up to one step.
    CHECK(all[0].parameters != RunAccumulating(data->data, ranks).parameters);
  }
}

TEST_CASE("data-parallel trainer: accumulate 1 is the plain step, and accumulate changes it") {
  const auto data = MakeData(600, 8);
  TrainOptions o = Options();
  auto plain = Trainer::Create(data->data, o);
  REQUIRE(plain.ok());
  auto plain_summary = (*plain)->Run();
  const Outcome a = Finish(**plain, plain_summary);
  CheckSame(a, RunAccumulating(data->data, 1));
  CHECK(a.parameters != RunAccumulating(data->data, 2).parameters);
}

TEST_CASE("data-parallel trainer: refuses a communicator of another size than the options'") {
  const auto data = MakeData(300, 8);
  auto trainer = Trainer::Create(data->data, Options());
  REQUIRE(trainer.ok());
  auto comms = dist::CreateThreadCommunicators(2, {});
  const Status st = (*trainer)->SetCommunicator(comms[0].get());
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message().find("for 1 rank(s), the job has 2") != std::string::npos);
}

TEST_CASE("data-parallel trainer: W ranks' Predict is one process's, on rank 0") {
  const auto data = MakeData(1000, 8);
  auto plain = Trainer::Create(data->data, Options());
  REQUIRE(plain.ok());
  REQUIRE((*plain)->Run().ok());
  auto trained = (*plain)->MakeCheckpoint(1);
  REQUIRE(trained.ok());
  std::vector<int64_t> nodes(1000);
  for (int64_t v = 0; v < 1000; ++v) nodes[static_cast<size_t>(v)] = (v * 7919) % 1000;
  std::vector<int32_t> want_classes;
  std::vector<float> want_embeddings;
  REQUIRE((*plain)->Predict(nodes, &want_classes, &want_embeddings).ok());
  // 1000 nodes in evaluation batches of 45: 23 batches, shared unevenly by 2 and 3 ranks.
  for (const int ranks : {2, 3}) {
    CAPTURE(ranks);
    auto comms = dist::CreateThreadCommunicators(ranks, {});
    std::vector<std::vector<int32_t>> classes(static_cast<size_t>(ranks));
    std::vector<std::vector<float>> embeddings(static_cast<size_t>(ranks));
    std::vector<Status> status(static_cast<size_t>(ranks));
    std::vector<std::thread> threads;
    for (int rank = 0; rank < ranks; ++rank) {
      threads.emplace_back([&, rank] {
        const size_t r = static_cast<size_t>(rank);
        TrainOptions o = Options();
        o.world_size = ranks;
        auto trainer = Trainer::Create(data->data, o);
        SKIFF_CHECK(trainer.ok());
        SKIFF_CHECK((*trainer)->SetCommunicator(comms[r].get()).ok());
        SKIFF_CHECK((*trainer)->Restore(*trained).ok());
        status[r] = (*trainer)->Predict(nodes, &classes[r], &embeddings[r]);
      });
    }
    for (auto& t : threads) t.join();
    for (const Status& st : status) CHECK(st.ok());
    CHECK(classes[0] == want_classes);
    CHECK(embeddings[0] == want_embeddings);  // bitwise: the same batches
    for (int r = 1; r < ranks; ++r) CHECK(classes[static_cast<size_t>(r)].empty());
  }
}
