// LinkTrainer on a planted-partition graph whose communities show in the features: it learns to
// tell held-out edges from non-edges (AUC, MRR well above the untrained model's), is deterministic
// for a seed, ranks filtered at least as well as raw, and refuses malformed input.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "skiff/dist/communicator.h"
#include "skiff/sampler/feature_source.h"
#include "skiff/sampler/graph_source.h"
#include "skiff/train/link_trainer.h"
#include "test_util.h"

using namespace skiff;
using namespace skiff::train;

namespace {

constexpr int64_t kNodes = 240, kCommunities = 4, kDim = 12;

struct Fixture {
  std::unique_ptr<sampler::InMemoryGraph> graph;
  std::unique_ptr<sampler::InMemoryFeatures> features;
  LinkData data;
};

// Undirected edges within communities with probability 0.15, across with 0.005; 10% of them held
// out for validation and 10% for test (removed from the graph), the rest the training positives;
// as many non-edges per held-out split. Features: the community one-hot plus noise.
std::unique_ptr<Fixture> MakeFixture() {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  auto community = [](int64_t v) { return v % kCommunities; };
  std::vector<std::pair<int64_t, int64_t>> edges;
  std::set<std::pair<int64_t, int64_t>> all;
  for (int64_t a = 0; a < kNodes; ++a) {
    for (int64_t b = a + 1; b < kNodes; ++b) {
      if (u(rng) < (community(a) == community(b) ? 0.15 : 0.005)) {
        edges.emplace_back(a, b);
        all.insert({a, b});
      }
    }
  }
  auto f = std::make_unique<Fixture>();
  std::vector<std::vector<int64_t>> rows(kNodes);
  for (auto [a, b] : edges) {
    const double r = u(rng);
    auto* split = r < 0.1 ? &f->data.valid : r < 0.2 ? &f->data.test : &f->data.train;
    split->push_back(a);
    split->push_back(b);
    if (r >= 0.2) {
      rows[static_cast<size_t>(a)].push_back(b);
      rows[static_cast<size_t>(b)].push_back(a);
    }
  }
  for (auto* pairs : {&f->data.valid_neg, &f->data.test_neg}) {
    const size_t want = (pairs == &f->data.valid_neg ? f->data.valid : f->data.test).size();
    std::uniform_int_distribution<int64_t> node(0, kNodes - 1);
    while (pairs->size() < want) {
      int64_t a = node(rng), b = node(rng);
      if (a == b || all.count({std::min(a, b), std::max(a, b)}) > 0) continue;
      pairs->push_back(a);
      pairs->push_back(b);
    }
  }
  std::vector<int64_t> offsets{0}, neighbors;
  for (auto& row : rows) {
    std::sort(row.begin(), row.end());
    neighbors.insert(neighbors.end(), row.begin(), row.end());
    offsets.push_back(static_cast<int64_t>(neighbors.size()));
  }
  std::normal_distribution<float> noise(0, 0.3f);
  std::vector<float> x(static_cast<size_t>(kNodes * kDim));
  for (int64_t v = 0; v < kNodes; ++v) {
    for (int64_t j = 0; j < kDim; ++j) {
      x[static_cast<size_t>(v * kDim + j)] = (j == community(v) ? 1.0f : 0.0f) + noise(rng);
    }
  }
  f->graph = std::move(sampler::InMemoryGraph::FromCsr(offsets, neighbors)).value();
  f->features = std::move(sampler::InMemoryFeatures::FromMatrix(x, kDim)).value();
  f->data.graph = f->graph.get();
  f->data.csr = f->graph.get();
  f->data.features = f->features.get();
  f->data.undirected = true;
  return f;
}

TrainOptions Options() {
  TrainOptions o;
  o.task = Task::kLink;
  o.model.kind = model::ModelKind::kSage;
  o.model.hidden_dim = 16;
  o.model.dropout = 0;
  o.fanouts = {5, 5};
  o.eval_fanouts = {-1, -1};
  o.batch_size = 64;
  o.epochs = 15;
  o.optimizer.lr = 0.02f;
  o.optimizer.weight_decay = 0;
  o.link.out_dim = 8;
  o.link.negatives = 16;
  o.link.eval_negatives = 40;
  o.sampler_threads = 2;
  o.show_progress = false;
  return o;
}

// A model that takes the features as a device model does (HoldFeatures) and then gathers each
// batch's rows itself: trained in place of the CPU model it wraps, it must give that model's run.
class FeatureHoldingStandIn final : public model::Model {
 public:
  explicit FeatureHoldingStandIn(std::unique_ptr<model::Model> inner)
      : Model(inner->config()), inner_(std::move(inner)) {}

  Result<bool> HoldFeatures(const sampler::FeatureSource& features, uint64_t) override {
    features_ = &features;
    return true;
  }
  bool holds_features() const override { return features_ != nullptr; }
  Status Forward(const sampler::MiniBatch& batch, const float* x, bool training,
                 uint64_t dropout_seed, std::vector<float>* logits,
                 std::vector<float>* embeddings) override {
    REQUIRE(features_ != nullptr);
    REQUIRE(x == nullptr);  // the batches come without rows
    rows_.resize(batch.input_nodes.size() * static_cast<size_t>(features_->dim()));
    SKIFF_RETURN_IF_ERROR(features_->Gather(batch.input_nodes, rows_.data()));
    ++gathered_batches;
    return inner_->Forward(batch, rows_.data(), training, dropout_seed, logits, embeddings);
  }
  Status Backward(const float* grad_logits) override { return inner_->Backward(grad_logits); }
  std::vector<model::Parameter> Parameters() override { return inner_->Parameters(); }

  int64_t gathered_batches = 0;

 private:
  std::unique_ptr<model::Model> inner_;
  const sampler::FeatureSource* features_ = nullptr;
  std::vector<float> rows_;
};

}  // namespace

TEST_CASE("link trainer: learns held-out edges, beyond the untrained model") {
  const auto f = MakeFixture();
  REQUIRE(f->data.valid.size() > 20);
  auto untrained = LinkTrainer::Create(f->data, Options());
  REQUIRE(untrained.ok());
  auto before = (*untrained)->Evaluate(f->data.valid, f->data.valid_neg, kValidStream);
  REQUIRE(before.ok());
  auto trainer = LinkTrainer::Create(f->data, Options());
  REQUIRE(trainer.ok());
  auto summary = (*trainer)->Run();
  REQUIRE(summary.ok());
  REQUIRE(summary->epochs.size() == 15);
  CHECK(summary->epochs.back().loss < summary->epochs.front().loss);
  const LinkEvaluation& best = summary->best_valid;
  CHECK(best.has_non_edges);
  CHECK(best.edges == static_cast<int64_t>(f->data.valid.size() / 2));
  CHECK(best.ranking.count == best.edges);
  // The ceiling: ~90% of edges and ~25% of non-edges lie within a community, so a perfect
  // community detector scores AUC ~0.83.
  CHECK(best.auc > 0.78);
  MESSAGE("untrained AUC " << before->auc << ", trained " << best.auc);
  CHECK(best.auc > before->auc + 0.1);
  CHECK(best.ranking.mrr > before->ranking.mrr);
  CHECK(summary->best_test.auc > 0.78);
}

TEST_CASE("link trainer: the gae loss learns held-out edges; it refuses the mlp decoder") {
  const auto f = MakeFixture();
  TrainOptions o = Options();
  o.link.loss = model::LinkLoss::kGae;
  auto trainer = LinkTrainer::Create(f->data, o);
  REQUIRE_MESSAGE(trainer.ok(), trainer.status().ToString());
  auto summary = (*trainer)->Run();
  REQUIRE_MESSAGE(summary.ok(), summary.status().ToString());
  CHECK(summary->epochs.back().loss < summary->epochs.front().loss);
  CHECK(summary->best_valid.auc > 0.78);  // as bce reaches (the test above)
  CHECK(summary->best_test.auc > 0.78);
  o.link.decoder = model::DecoderKind::kMlp;
  const Status refused = LinkTrainer::Create(f->data, o).status();
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK(refused.message().find("--link-loss gae") != std::string::npos);
}

TEST_CASE("link trainer: a seed gives the same run; filtered ranks are no worse than raw") {
  const auto f = MakeFixture();
  TrainOptions o = Options();
  o.epochs = 2;
  o.link.negative_sampler = NegativeSampler::kDegree;
  o.link.loss = model::LinkLoss::kSoftmax;
  auto a = LinkTrainer::Create(f->data, o);
  o.sampler_threads = 1;  // the batches do not depend on the thread count
  auto b = LinkTrainer::Create(f->data, o);
  REQUIRE((a.ok() && b.ok()));
  auto ra = (*a)->Run();
  auto rb = (*b)->Run();
  REQUIRE((ra.ok() && rb.ok()));
  for (size_t e = 0; e < 2; ++e) {
    CHECK(ra->epochs[e].loss == rb->epochs[e].loss);
    CHECK(ra->epochs[e].valid.auc == rb->epochs[e].valid.auc);
    CHECK(ra->epochs[e].valid.ranking.mrr == rb->epochs[e].valid.ranking.mrr);
  }
  o.link.ranking = Ranking::kFiltered;
  auto c = LinkTrainer::Create(f->data, o);
  REQUIRE(c.ok());
  auto rc = (*c)->Run();
  REQUIRE(rc.ok());
  CHECK(rc->epochs[1].valid.auc == ra->epochs[1].valid.auc);  // the same model
  CHECK(rc->epochs[1].valid.ranking.mrr >= ra->epochs[1].valid.ranking.mrr);
}

TEST_CASE("link trainer: training pairs released and reloaded for each plan give the same run") {
  const auto f = MakeFixture();
  TrainOptions o = Options();
  o.epochs = 2;
  auto held = LinkTrainer::Create(f->data, o);
  REQUIRE(held.ok());
  auto ra = (*held)->Run();
  REQUIRE(ra.ok());

  LinkData released = f->data;
  released.train = {};
  int loads = 0;
  released.reload_train = [&]() -> Result<std::vector<int64_t>> {
    ++loads;
    return f->data.train;
  };
  auto reloading = LinkTrainer::Create(released, o);
  REQUIRE(reloading.ok());
  CHECK(loads == 1);  // Create's checks
  auto rb = (*reloading)->Run();
  REQUIRE(rb.ok());
  CHECK(loads == 3);  // and each epoch's plan
  CHECK(released.train.empty());
  for (size_t e = 0; e < 2; ++e) {
    CHECK(rb->epochs[e].loss == ra->epochs[e].loss);
    CHECK(rb->epochs[e].valid.ranking.mrr == ra->epochs[e].valid.ranking.mrr);
  }

  // A reload that fails fails the epoch with its message; one with a bad pair fails Create.
  bool fail = false;
  released.reload_train = [&]() -> Result<std::vector<int64_t>> {
    if (fail) return Status::Corruption("link_train.edges: checksum mismatch in block 0");
    return f->data.train;
  };
  auto failing = LinkTrainer::Create(released, o);
  REQUIRE(failing.ok());
  fail = true;
  const auto failed = (*failing)->Run();
  REQUIRE(!failed.ok());
  CHECK(failed.status().message().find("checksum mismatch") != std::string::npos);
  released.reload_train = [&]() -> Result<std::vector<int64_t>> {
    std::vector<int64_t> bad = f->data.train;
    bad[1] = kNodes;
    return bad;
  };
  const auto refused = LinkTrainer::Create(released, o);
  REQUIRE(!refused.ok());
  CHECK(refused.status().message().find("training edge 0") != std::string::npos);
}

TEST_CASE("link trainer: evaluation caps and batch sizes change what is evaluated, not scores") {
  const auto f = MakeFixture();
  TrainOptions o = Options();
  o.link.eval_negatives = 30;
  auto t = LinkTrainer::Create(f->data, o);
  REQUIRE(t.ok());
  auto whole = (*t)->Evaluate(f->data.valid, f->data.valid_neg, kValidStream);
  (*t)->SetEvalBatchEdges(7);  // eval fanouts take every neighbour: the same representations
  auto batched = (*t)->Evaluate(f->data.valid, f->data.valid_neg, kValidStream);
  REQUIRE((whole.ok() && batched.ok()));
  CHECK(whole->ranking.count == whole->edges);
  CHECK(batched->auc == doctest::Approx(whole->auc).epsilon(1e-6));
  // The candidates are drawn per group of edges, not per batch: the same ranks, but for near ties
  // that the last bits of other batch shapes' sums may flip.
  CHECK(batched->ranking.mrr == doctest::Approx(whole->ranking.mrr).epsilon(0.01));
  o.link.eval_negatives = 0;
  o.link.eval_edges = 10;
  auto capped = LinkTrainer::Create(f->data, o);
  REQUIRE(capped.ok());
  auto ten = (*capped)->Evaluate(f->data.valid, f->data.valid_neg, kValidStream);
  REQUIRE(ten.ok());
  CHECK(ten->edges == 10);
  CHECK(ten->ranking.count == 0);
  CHECK(batched->ap == doctest::Approx(whole->ap).epsilon(1e-6));
}

TEST_CASE(
    "link trainer: held-out pairs past --eval-edges are dropped, and nothing scored changes") {
  const auto f = MakeFixture();
  TrainOptions o = Options();
  o.link.eval_edges = 6;
  REQUIRE(f->data.valid.size() > 12);
  REQUIRE(f->data.test_neg.size() > 12);
  auto full = LinkTrainer::Create(f->data, o);
  REQUIRE(full.ok());
  const auto before = (*full)->Evaluate(f->data.valid, f->data.valid_neg, kValidStream);
  REQUIRE(before.ok());

  LinkData kept = f->data;
  DropUnscoredPairs(o, &kept);
  for (const auto* pairs : {&kept.valid, &kept.test, &kept.valid_neg, &kept.test_neg}) {
    CHECK(pairs->size() == 12);
  }
  CHECK(kept.train == f->data.train);  // every training pair trains
  CHECK(std::equal(kept.valid.begin(), kept.valid.end(), f->data.valid.begin()));
  auto trimmed = LinkTrainer::Create(kept, o);
  REQUIRE(trimmed.ok());
  const auto after = (*trimmed)->Evaluate(kept.valid, kept.valid_neg, kValidStream);
  REQUIRE(after.ok());
  CHECK(after->edges == 6);
  CHECK(after->auc == before->auc);
  CHECK(after->ap == before->ap);
  CHECK(after->ranking.mrr == before->ranking.mrr);

  // Filtered ranking looks every split edge up, and without a cap every pair is scored.
  for (const bool filtered : {true, false}) {
    TrainOptions other = o;
    if (filtered) {
      other.link.ranking = Ranking::kFiltered;
    } else {
      other.link.eval_edges = 0;
    }
    LinkData untouched = f->data;
    DropUnscoredPairs(other, &untouched);
    CHECK(untouched.valid == f->data.valid);
    CHECK(untouched.test_neg == f->data.test_neg);
  }
}

TEST_CASE("link trainer: refuses malformed input") {
  const auto f = MakeFixture();
  TrainOptions o = Options();
  o.fanouts = {5};
  CHECK(LinkTrainer::Create(f->data, o).status().code() == StatusCode::kInvalidArgument);
  LinkData bad = f->data;
  bad.valid[3] = kNodes;
  auto refused = LinkTrainer::Create(bad, Options());
  REQUIRE(!refused.ok());
  CHECK(refused.status().message().find("validation edge 1") != std::string::npos);
  bad = f->data;
  bad.train.clear();
  CHECK(!LinkTrainer::Create(bad, Options()).ok());
}

TEST_CASE("link trainer: a checkpoint continues the run exactly; a mismatched one is refused") {
  const auto f = MakeFixture();
  const skiff::testing::TempDir dir;
  TrainOptions o = Options();
  o.epochs = 3;
  o.link.decoder = model::DecoderKind::kMlp;  // decoder parameters with Adam state of their own
  auto whole = LinkTrainer::Create(f->data, o);
  REQUIRE(whole.ok());
  auto all = (*whole)->Run();
  REQUIRE(all.ok());

  o.epochs = 1;
  o.checkpoint_path = dir / "model.ckpt";
  auto first = LinkTrainer::Create(f->data, o);
  REQUIRE(first.ok());
  REQUIRE((*first)->Run().ok());
  auto saved = ReadCheckpoint(LastCheckpointPath(o.checkpoint_path));
  REQUIRE(saved.ok());
  CHECK(saved->epoch == 0);
  CHECK(saved->best_epoch == 0);
  CHECK(!saved->best_metrics_json.empty());

  o.epochs = 3;
  auto rest = LinkTrainer::Create(f->data, o);
  REQUIRE(rest.ok());
  REQUIRE((*rest)->Restore(*saved).ok());
  CHECK((*rest)->next_epoch() == 1);
  auto resumed = (*rest)->Run();
  REQUIRE(resumed.ok());
  REQUIRE(resumed->epochs.size() == 2);
  for (size_t e = 0; e < 2; ++e) {
    CHECK(resumed->epochs[e].epoch == all->epochs[e + 1].epoch);
    CHECK(resumed->epochs[e].loss == all->epochs[e + 1].loss);
    CHECK(resumed->epochs[e].valid.auc == all->epochs[e + 1].valid.auc);
    CHECK(resumed->epochs[e].test.ranking.mrr == all->epochs[e + 1].test.ranking.mrr);
  }
  // The best over every epoch, the restored one included (kept to 6 decimals).
  CHECK(resumed->best_epoch == all->best_epoch);
  CHECK(resumed->best_valid.auc == doctest::Approx(all->best_valid.auc).epsilon(1e-5));
  CHECK(resumed->best_test.ranking.hits[1] ==
        doctest::Approx(all->best_test.ranking.hits[1]).epsilon(1e-5));
  auto p = (*rest)->model().Parameters();
  auto q = (*whole)->model().Parameters();
  REQUIRE(p.size() == q.size());
  for (size_t i = 0; i < p.size(); ++i) {
    CHECK(std::equal(p[i].data, p[i].data + p[i].size(), q[i].data));
  }

  o.link.decoder = model::DecoderKind::kDot;  // no decoder parameters: the counts differ
  auto other = LinkTrainer::Create(f->data, o);
  REQUIRE(other.ok());
  const Status refused = (*other)->Restore(*saved);
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK((*other)->next_epoch() == 0);  // nothing changed
  Checkpoint broken = *saved;
  broken.best_metrics_json = "{\"valid_edges\": 3}";
  o.link.decoder = model::DecoderKind::kMlp;
  auto again = LinkTrainer::Create(f->data, o);
  REQUIRE(again.ok());
  CHECK((*again)->Restore(broken).code() == StatusCode::kCorruption);
}

TEST_CASE("link trainer: EncodeBatches -- a node's output whatever batches are asked for") {
  const auto f = MakeFixture();
  TrainOptions o = Options();
  o.epochs = 2;
  o.eval_fanouts = {3, 3};  // sampled: a node's neighbourhood depends on its batch
  auto t = LinkTrainer::Create(f->data, o);
  REQUIRE(t.ok());
  REQUIRE((*t)->Run().ok());
  const auto dim = static_cast<size_t>(o.link.out_dim);
  // Rows by node of the batches asked for.
  auto encode = [&](LinkTrainer& trainer, const std::vector<int64_t>& batches, int64_t size) {
    std::vector<float> rows(static_cast<size_t>(kNodes) * dim, NAN);
    const Status st =
        trainer.EncodeBatches(batches, size, [&](std::span<const int64_t> nodes, const float* x) {
          for (size_t i = 0; i < nodes.size(); ++i) {
            std::copy(x + i * dim, x + (i + 1) * dim,
                      rows.begin() + static_cast<size_t>(nodes[i]) * dim);
          }
          return Status::Ok();
        });
    REQUIRE(st.ok());
    return rows;
  };
  std::vector<int64_t> every(35);  // ceil(240 / 7)
  for (size_t c = 0; c < every.size(); ++c) every[c] = static_cast<int64_t>(c);
  const std::vector<float> all = encode(**t, every, 7), some = encode(**t, {5, 2}, 7);
  for (int64_t v = 0; v < kNodes; ++v) {
    const bool asked = (v >= 14 && v < 21) || (v >= 35 && v < 42);
    for (size_t j = 0; j < dim; ++j) {
      const size_t i = static_cast<size_t>(v) * dim + j;
      if (asked) {
        CHECK(some[i] == all[i]);
      } else {
        CHECK(std::isnan(some[i]));
      }
    }
  }
  CHECK((*t)->EncodeBatches(std::vector<int64_t>{35}, 7, nullptr).code() ==
        StatusCode::kInvalidArgument);

  // With every neighbour the batch size does not matter, and the dot decoder over these rows
  // scores the validation split as Evaluate does.
  auto saved = (*t)->MakeCheckpoint(1);
  REQUIRE(saved.ok());
  o.eval_fanouts = {-1, -1};
  auto full = LinkTrainer::Create(f->data, o);
  REQUIRE(full.ok());
  REQUIRE((*full)->Restore(*saved).ok());
  const std::vector<float> small = encode(**full, every, 7), large = encode(**full, {0}, 1000);
  for (size_t i = 0; i < small.size(); ++i) {
    CHECK(small[i] == doctest::Approx(large[i]).epsilon(1e-5));
  }
  auto scores = [&](const std::vector<int64_t>& pairs) {
    std::vector<int32_t> src, dst;
    for (size_t i = 0; i < pairs.size(); i += 2) {
      src.push_back(static_cast<int32_t>(pairs[i]));
      dst.push_back(static_cast<int32_t>(pairs[i + 1]));
    }
    std::vector<float> out;
    REQUIRE((*full)->decoder().ScorePairs(large.data(), kNodes, src, dst, &out).ok());
    return out;
  };
  auto eval = (*full)->Evaluate(f->data.valid, f->data.valid_neg, kValidStream);
  REQUIRE(eval.ok());
  CHECK(RocAuc(scores(f->data.valid), scores(f->data.valid_neg)) ==
        doctest::Approx(eval->auc).epsilon(1e-6));
}

TEST_CASE("link trainer: a model holding the features gathers every batch's rows itself") {
  const auto f = MakeFixture();
  TrainOptions o = Options();
  o.epochs = 2;
  auto plain = LinkTrainer::Create(f->data, o);
  FeatureHoldingStandIn* holder = nullptr;
  auto held = LinkTrainer::Create(
      f->data, o, [&holder](const model::ModelConfig& c) -> Result<std::unique_ptr<model::Model>> {
        SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<model::Model> cpu, model::Model::CreateCpu(c));
        auto m = std::make_unique<FeatureHoldingStandIn>(std::move(cpu));
        holder = m.get();
        return std::unique_ptr<model::Model>(std::move(m));
      });
  REQUIRE((plain.ok() && held.ok()));
  auto cpu_offer = (*plain)->OfferFeatures(0);
  REQUIRE(cpu_offer.ok());
  CHECK_FALSE(*cpu_offer);  // a CPU model keeps taking rows from the host
  auto offer = (*held)->OfferFeatures(0);
  REQUIRE(offer.ok());
  CHECK(*offer);
  auto a = (*plain)->Run();
  auto b = (*held)->Run();
  REQUIRE((a.ok() && b.ok()));
  CHECK(holder->gathered_batches > 0);
  for (size_t e = 0; e < 2; ++e) {
    CHECK(a->epochs[e].loss == b->epochs[e].loss);
    CHECK(a->epochs[e].valid.auc == b->epochs[e].valid.auc);
    CHECK(a->epochs[e].test.ranking.mrr == b->epochs[e].test.ranking.mrr);
  }
}

TEST_CASE("link trainer: held-out edges ranked among the dataset's own candidates") {
  const auto f = MakeFixture();
  TrainOptions o = Options();
  o.epochs = 2;
  auto trainer = LinkTrainer::Create(f->data, o);
  REQUIRE(trainer.ok());
  REQUIRE((*trainer)->Run().ok());
  const auto drawn = (*trainer)->Evaluate(f->data.valid, f->data.valid_neg, kValidStream);
  REQUIRE(drawn.ok());
  const auto count = static_cast<int64_t>(f->data.valid.size() / 2);
  REQUIRE(count < kCandidateGroupEdges);  // one group: every edge ranked among the same draw

  // Each edge's own row holding the group's drawn candidates: the same ranks up to rounding (with
  // every neighbour a node's representation does not depend on its batch, but it is computed in
  // batches of another size, and the positive scored with its candidates: nodes of one community
  // score nearly alike, and their near-ties flip with the rounding; measured 1.6%).
  LinkData given = f->data;
  given.candidates = o.link.eval_negatives;
  const std::vector<int64_t> group =
      DrawCandidates(o.link.eval_negatives, kNodes, o.seed, kValidStream, 0);
  for (int64_t i = 0; i < count; ++i) {
    given.valid_cand.insert(given.valid_cand.end(), group.begin(), group.end());
  }
  auto same = LinkTrainer::Create(given, o);
  REQUIRE(same.ok());
  REQUIRE((*same)->Restore(*(*trainer)->MakeCheckpoint(1)).ok());
  REQUIRE((*same)->UsesDatasetCandidates());
  const auto ranked =
      (*same)->Evaluate(given.valid, given.valid_neg, kValidStream, given.valid_cand);
  REQUIRE(ranked.ok());
  CHECK(ranked->ranking.count == count);
  CHECK(ranked->ranking.mrr == doctest::Approx(drawn->ranking.mrr).epsilon(0.05));
  CHECK(ranked->auc == drawn->auc);  // the non-edges are scored as before
  // Ranked a few representations at a time (as under a budget), filtered and raw: the same ranks.
  for (const Ranking ranking : {Ranking::kRaw, Ranking::kFiltered}) {
    TrainOptions chunked_options = o;
    chunked_options.link.ranking = ranking;
    chunked_options.eval_batch_size = 16;
    std::vector<double> mrr;
    for (const uint64_t chunk : {uint64_t{0}, uint64_t{1}, uint64_t{40 * 8 * 4}}) {
      auto chunked = LinkTrainer::Create(given, chunked_options);
      REQUIRE(chunked.ok());
      REQUIRE((*chunked)->Restore(*(*trainer)->MakeCheckpoint(1)).ok());
      (*chunked)->SetCandidateChunkBytes(chunk);
      const auto r =
          (*chunked)->Evaluate(given.valid, given.valid_neg, kValidStream, given.valid_cand);
      REQUIRE(r.ok());
      mrr.push_back(r->ranking.mrr);
    }
    CHECK(mrr[1] == mrr[0]);
    CHECK(mrr[2] == mrr[0]);
  }

  // Every candidate the edge's own destination: all tie with it, rank 1 + k / 2.
  LinkData ties = f->data;
  ties.candidates = 4;
  for (int64_t i = 0; i < count; ++i) {
    ties.valid_cand.insert(ties.valid_cand.end(), 4, f->data.valid[2 * i + 1]);
  }
  auto tied = LinkTrainer::Create(ties, o);
  REQUIRE(tied.ok());
  const auto r = (*tied)->Evaluate(ties.valid, ties.valid_neg, kValidStream, ties.valid_cand);
  REQUIRE(r.ok());
  CHECK(r->ranking.mrr == doctest::Approx(1.0 / 3));
  CHECK(r->ranking.hits[0] == 0);  // @1
  CHECK(r->ranking.hits[1] == 1);  // @10

  // --eval-candidates drawn ignores them; --eval-edges keeps the rows of the pairs kept.
  o.link.eval_candidates = EvalCandidates::kDrawn;
  auto ignored = LinkTrainer::Create(ties, o);
  REQUIRE(ignored.ok());
  CHECK(!(*ignored)->UsesDatasetCandidates());
  o.link.eval_edges = 3;
  DropUnscoredPairs(o, &ties);
  CHECK(ties.valid_cand.size() == 12);
}

namespace {

struct LinkOutcome {
  std::vector<LinkEpochMetrics> epochs;
  std::vector<std::vector<float>> parameters;  // the encoder's, then the decoder's
};

LinkOutcome OutcomeOf(LinkTrainer& trainer, const Result<LinkSummary>& summary) {
  SKIFF_CHECK(summary.ok());
  LinkOutcome out{.epochs = summary->epochs, .parameters = {}};
  for (auto params : {trainer.model().Parameters(), trainer.decoder().Parameters()}) {
    for (const model::Parameter& p : params) out.parameters.emplace_back(p.data, p.data + p.size());
  }
  return out;
}

// `ranks` link trainers on threads joined by a communicator of threads, `accumulate` each.
std::vector<LinkOutcome> RunLinkRanks(const LinkData& data, TrainOptions o, int ranks,
                                      int accumulate) {
  auto comms = dist::CreateThreadCommunicators(ranks, {});
  std::vector<LinkOutcome> outcomes(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      TrainOptions ro = o;
      ro.world_size = ranks;
      ro.accumulate = accumulate;
      ro.sampler_threads = 1;
      auto trainer = LinkTrainer::Create(data, ro);
      SKIFF_CHECK(trainer.ok());
      SKIFF_CHECK((*trainer)->SetCommunicator(comms[static_cast<size_t>(rank)].get()).ok());
      auto summary = (*trainer)->Run();
      outcomes[static_cast<size_t>(rank)] = OutcomeOf(**trainer, summary);
    });
  }
  for (auto& t : threads) t.join();
  return outcomes;
}

}  // namespace

TEST_CASE("link trainer: W ranks accumulating A compute one process's accumulate W*A, bitwise") {
  // About 14 edge batches an epoch: with 3 ranks the last round has no batch for rank 2. Dropout
  // on: each batch's masks come from its plan number on whichever rank runs it.
  const auto f = MakeFixture();
  TrainOptions o = Options();
  o.epochs = 2;
  o.model.dropout = 0.2f;
  auto one_process = [&](int accumulate) {
    TrainOptions a = o;
    a.accumulate = accumulate;
    auto trainer = LinkTrainer::Create(f->data, a);
    REQUIRE(trainer.ok());
    auto summary = (*trainer)->Run();
    REQUIRE(summary.ok());
    return OutcomeOf(**trainer, summary);
  };
  const LinkOutcome plain = one_process(1);
  CHECK(plain.parameters != one_process(2).parameters);  // accumulating changes the steps
  for (const auto& [ranks, accumulate] : {std::pair{2, 1}, std::pair{3, 1}, std::pair{2, 2}}) {
    CAPTURE(ranks);
    CAPTURE(accumulate);
    const LinkOutcome one = one_process(ranks * accumulate);
    for (const LinkOutcome& rank : RunLinkRanks(f->data, o, ranks, accumulate)) {
      CHECK(rank.parameters == one.parameters);  // bitwise
      REQUIRE(rank.epochs.size() == one.epochs.size());
      for (size_t e = 0; e < one.epochs.size(); ++e) {
        CAPTURE(e);
        // The ranks add their loss totals in another order.
        CHECK(rank.epochs[e].loss == doctest::Approx(one.epochs[e].loss).epsilon(1e-12));
        CHECK(rank.epochs[e].valid.auc == one.epochs[e].valid.auc);
        CHECK(rank.epochs[e].valid.ranking.mrr == one.epochs[e].valid.ranking.mrr);
        CHECK(rank.epochs[e].test.ranking.mrr == one.epochs[e].test.ranking.mrr);
      }
    }
  }
}

TEST_CASE("link trainer: refuses a communicator of another size than the options'") {
  const auto f = MakeFixture();
  auto trainer = LinkTrainer::Create(f->data, Options());
  REQUIRE(trainer.ok());
  auto comms = dist::CreateThreadCommunicators(2, {});
  const Status st = (*trainer)->SetCommunicator(comms[0].get());
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message().find("for 1 rank(s), the job has 2") != std::string::npos);
}
