// Owned partitions without MPI: W ranks on W threads (dist::CreateThreadCommunicators), each
// holding only its node range's rows (ExchangeGraph, ExchangeFeatures). A rank's part of a batch
// is sampled and gathered exactly as one process samples and gathers the same seeds on the whole
// graph; W trainers over the parts of each plan batch train the model one process trains, up to
// the order of floating-point sums.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <thread>

#include "skiff/dist/communicator.h"
#include "skiff/train/batch_plan.h"
#include "skiff/train/exchange_features.h"
#include "skiff/train/exchange_graph.h"
#include "skiff/train/layerwise_inference.h"
#include "skiff/train/owned_layerwise.h"
#include "skiff/train/owned_pass.h"
#include "skiff/train/trainer.h"

using namespace skiff;
using namespace skiff::train;

namespace {

// Three classes on a random graph whose degrees vary (1 to 40: rows shorter and longer than the
// fanouts), neighbours mostly of the node's class.
struct Data {
  std::vector<int64_t> offsets, neighbours;
  std::vector<float> x;
  int64_t dim = 0;
  std::unique_ptr<sampler::InMemoryGraph> graph;
  std::unique_ptr<sampler::InMemoryFeatures> features;
  TrainData data;
};

std::unique_ptr<Data> MakeData(int64_t n, int64_t dim) {
  auto d = std::make_unique<Data>();
  d->dim = dim;
  std::mt19937_64 rng(23);
  std::vector<int32_t> labels(n);
  for (auto& l : labels) l = static_cast<int32_t>(rng() % 3);
  d->offsets = {0};
  for (int64_t v = 0; v < n; ++v) {
    std::set<int64_t> row;
    const size_t degree = 1 + rng() % 40;
    while (row.size() < degree) {
      const int64_t w = static_cast<int64_t>(rng() % n);
      if (w != v && (labels[w] == labels[v] || rng() % 4 == 0)) row.insert(w);
    }
    d->neighbours.insert(d->neighbours.end(), row.begin(), row.end());
    d->offsets.push_back(static_cast<int64_t>(d->neighbours.size()));
  }
  std::normal_distribution<float> noise(0.0f, 1.0f);
  d->x.resize(static_cast<size_t>(n * dim));
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t k = 0; k < dim; ++k) d->x[v * dim + k] = noise(rng) + (k == labels[v] ? 0.8f : 0);
  }
  d->graph = std::move(sampler::InMemoryGraph::FromCsr(d->offsets, d->neighbours)).value();
  d->features = std::move(sampler::InMemoryFeatures::FromMatrix(d->x, dim)).value();
  d->data.graph = d->graph.get();
  d->data.features = d->features.get();
  d->data.labels = labels;
  d->data.num_classes = 3;
  for (int64_t v = 0; v < n; ++v) {
    (v % 5 == 0 ? d->data.valid : v % 5 == 1 ? d->data.test : d->data.train).push_back(v);
  }
  return d;
}

// Rank r's sources: the rows of its range only.
struct RankSources {
  std::unique_ptr<OwnedRows> own;
  std::unique_ptr<ExchangeGraph> graph;
  std::unique_ptr<ExchangeFeatures> features;
};

RankSources SourcesOf(const Data& d, const NodeRanges& ranges, dist::Communicator* comm) {
  const int64_t lo = ranges.begin(comm->rank()), hi = ranges.end(comm->rank());
  std::vector<int64_t> offsets(d.offsets.begin() + lo, d.offsets.begin() + hi + 1);
  for (int64_t& o : offsets) o -= d.offsets[lo];
  std::vector<int64_t> rows(d.neighbours.begin() + d.offsets[lo],
                            d.neighbours.begin() + d.offsets[hi]);
  std::vector<float> x(d.x.begin() + lo * d.dim, d.x.begin() + hi * d.dim);
  RankSources s;
  s.own = std::move(InMemoryOwnedRows::FromRows(lo, std::move(offsets), std::move(rows),
                                                std::move(x), d.dim))
              .value();
  s.graph = std::make_unique<ExchangeGraph>(ranges, comm, s.own.get());
  s.features = std::make_unique<ExchangeFeatures>(ranges, comm, s.own.get());
  return s;
}

// Runs fn(rank, comm) on `ranks` threads.
template <typename Fn>
void OnRanks(int ranks, Fn fn) {
  auto comms = dist::CreateThreadCommunicators(ranks, {.timeout_seconds = 60});
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back([&, r] { fn(r, comms[r].get()); });
  for (auto& t : threads) t.join();
}

void CheckSameBatch(const sampler::MiniBatch& a, const sampler::MiniBatch& b) {
  CHECK(a.seeds == b.seeds);
  CHECK(a.input_nodes == b.input_nodes);
  REQUIRE(a.blocks.size() == b.blocks.size());
  for (size_t l = 0; l < a.blocks.size(); ++l) {
    CAPTURE(l);
    CHECK(a.blocks[l].num_dst == b.blocks[l].num_dst);
    CHECK(a.blocks[l].num_src == b.blocks[l].num_src);
    CHECK(a.blocks[l].indptr == b.blocks[l].indptr);
    CHECK(a.blocks[l].indices == b.blocks[l].indices);
    CHECK(a.blocks[l].src_degree == b.blocks[l].src_degree);
  }
}

}  // namespace

TEST_CASE(
    "thread communicators: all-to-all delivers each rank's part, and a missing rank times out") {
  OnRanks(3, [](int rank, dist::Communicator* comm) {
    std::vector<std::string> out;
    for (int to = 0; to < 3; ++to) out.push_back(std::to_string(rank) + "->" + std::to_string(to));
    auto in = comm->AllToAll(out, "test");
    REQUIRE(in.ok());
    for (int from = 0; from < 3; ++from) {
      CHECK((*in)[from] == std::to_string(from) + "->" + std::to_string(rank));
    }
  });
  auto comms = dist::CreateThreadCommunicators(2, {.timeout_seconds = 0.2});
  const auto lonely = comms[0]->AllToAll({"a", "b"}, "rows of hop 0");
  CHECK(lonely.status().code() == StatusCode::kAborted);
  CHECK(lonely.status().message().find("alltoall #0 (rows of hop 0)") != std::string::npos);
}

TEST_CASE("node ranges: owners by binary search, empty ranges skipped") {
  auto ranges = NodeRanges::FromBoundaries({0, 4, 4, 10});
  REQUIRE(ranges.ok());
  CHECK(ranges->OwnerOf(0) == 0);
  CHECK(ranges->OwnerOf(3) == 0);
  CHECK(ranges->OwnerOf(4) == 2);
  CHECK(ranges->OwnerOf(9) == 2);
  CHECK(NodeRanges::FromBoundaries({0, 5, 3}).status().code() == StatusCode::kInvalidArgument);
  CHECK(NodeRanges::FromBoundaries({1, 5}).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("owned partitions: each rank's part is sampled and gathered as one process does") {
  const auto d = MakeData(900, 6);
  struct Setting {
    std::vector<int64_t> first;
    std::vector<int> fanouts;
    bool degrees;
  };
  // Uneven ranges, an empty one; sampled rows, whole rows (-1, and fanouts above most degrees);
  // GCN's recorded degrees (an exchange of the outermost hop's degrees).
  const Setting settings[] = {{{0, 300, 900}, {5, 3}, false},
                              {{0, 100, 450, 450, 900}, {10, 4, 2}, true},
                              {{0, 500, 700, 900}, {-1, 30}, true}};
  for (const Setting& s : settings) {
    const int ranks = static_cast<int>(s.first.size()) - 1;
    CAPTURE(ranks);
    const NodeRanges ranges = NodeRanges::FromBoundaries(s.first).value();
    const sampler::NeighborSampler whole(*d->graph, s.fanouts, s.degrees);
    const auto plan = PlanBatches(d->data.train, 64, true, 3, 1);
    OnRanks(ranks, [&](int rank, dist::Communicator* comm) {
      RankSources mine = SourcesOf(*d, ranges, comm);
      const sampler::NeighborSampler sampler(*mine.graph, s.fanouts, s.degrees);
      OwnedPassSpec spec{.plan = plan,
                         .seed = 3,
                         .stream = kTrainStream,
                         .epoch = 1,
                         .labels = &d->data.labels,
                         .gather_features = true};
      int64_t parts = 0;
      const Status st = RunOwnedPass(
          sampler, *mine.features, ranges, rank, spec, [&](PreparedBatch& got) -> Status {
            const auto b = static_cast<size_t>(got.index);
            const std::vector<int64_t> seeds = OwnedPart(plan[b], ranges, rank);
            sampler::MiniBatch want;
            SKIFF_CHECK(whole.Sample(seeds, sampler::BatchSeed(3, kTrainStream, 1, b), &want).ok());
            CheckSameBatch(got.batch, want);
            std::vector<float> rows(want.input_nodes.size() * 6);
            SKIFF_CHECK(d->features->Gather(want.input_nodes, rows.data()).ok());
            CHECK(std::equal(rows.begin(), rows.end(), got.features.begin(), got.features.end()));
            CHECK(got.whole_labelled == static_cast<int64_t>(plan[b].size()));
            parts += 1;
            return Status::Ok();
          });
      CHECK(st.ok());
      CHECK(parts == static_cast<int64_t>(plan.size()));  // empty parts too
      if (ranks > 1 && ranges.end(rank) > ranges.begin(rank)) {
        CHECK(mine.graph->traffic().rows_fetched > 0);
        CHECK(mine.features->traffic().rows_served > 0);
      }
    });
  }
}

namespace {

// Rank sources whose own lists are partly "on disk": the even nodes' lists are in memory, the odd
// nodes' only through Lists (as pipeline::DiskOwnedRows serves non-resident partitions), which
// counts its calls; NeighborsAt on an odd node is a programmer error.
class PartlyInMemory final : public OwnedRows {
 public:
  explicit PartlyInMemory(std::unique_ptr<OwnedRows> rows) : rows_(std::move(rows)) {}
  int64_t begin() const override { return rows_->begin(); }
  int64_t end() const override { return rows_->end(); }
  int64_t feature_dim() const override { return rows_->feature_dim(); }
  int64_t Degree(int64_t v) const override { return rows_->Degree(v); }
  bool ListInMemory(int64_t v) const override { return v % 2 == 0; }
  void NeighborsAt(int64_t v, std::span<const int64_t> positions, int64_t* out) const override {
    SKIFF_CHECK_MSG(ListInMemory(v), "a list not in memory was read in place");
    rows_->NeighborsAt(v, positions, out);
  }
  Status Lists(std::span<const int64_t> nodes, std::vector<int64_t>* indptr,
               std::vector<int64_t>* neighbors) const override {
    reads += 1;
    return rows_->Lists(nodes, indptr, neighbors);
  }
  Status RowsTo(std::span<const int64_t> nodes, std::span<float* const> dst) const override {
    return rows_->RowsTo(nodes, dst);
  }
  void NormalizeRows() override { rows_->NormalizeRows(); }
  mutable int64_t reads = 0;

 private:
  std::unique_ptr<OwnedRows> rows_;
};

// `d` with the rows of every seventh node emptied (degree 0).
std::unique_ptr<Data> WithEmptyRows(const Data& d) {
  auto out = std::make_unique<Data>();
  out->dim = d.dim;
  out->x = d.x;
  out->offsets = {0};
  for (size_t v = 0; v + 1 < d.offsets.size(); ++v) {
    if (v % 7 != 0) {
      out->neighbours.insert(out->neighbours.end(), d.neighbours.begin() + d.offsets[v],
                             d.neighbours.begin() + d.offsets[v + 1]);
    }
    out->offsets.push_back(static_cast<int64_t>(out->neighbours.size()));
  }
  out->graph = std::move(sampler::InMemoryGraph::FromCsr(out->offsets, out->neighbours)).value();
  out->features = std::move(sampler::InMemoryFeatures::FromMatrix(out->x, out->dim)).value();
  out->data = d.data;
  out->data.graph = out->graph.get();
  out->data.features = out->features.get();
  return out;
}

}  // namespace

TEST_CASE("owned partitions: own lists not in memory are read in chunks and sampled alike") {
  const auto d = WithEmptyRows(*MakeData(900, 6));
  const NodeRanges ranges = NodeRanges::FromBoundaries({0, 400, 900}).value();
  for (const std::vector<int>& fanouts : {std::vector<int>{5, 3}, std::vector<int>{-1, 4}}) {
    CAPTURE(fanouts.size());
    const sampler::NeighborSampler whole(*d->graph, fanouts, true);
    const auto plan = PlanBatches(d->data.train, 64, true, 3, 1);
    OnRanks(2, [&](int rank, dist::Communicator* comm) {
      RankSources mine = SourcesOf(*d, ranges, comm);
      auto partly = std::make_unique<PartlyInMemory>(std::move(mine.own));
      // Chunks of 16 IDs: most lists alone or a few together, rows of up to 40 alone.
      const ExchangeGraph graph(ranges, comm, partly.get(), 16);
      const ExchangeFeatures features(ranges, comm, partly.get());
      const sampler::NeighborSampler sampler(graph, fanouts, true);
      OwnedPassSpec spec{.plan = plan,
                         .seed = 3,
                         .stream = kTrainStream,
                         .epoch = 1,
                         .labels = &d->data.labels,
                         .gather_features = true};
      const Status st =
          RunOwnedPass(sampler, features, ranges, rank, spec, [&](PreparedBatch& got) -> Status {
            const auto b = static_cast<size_t>(got.index);
            sampler::MiniBatch want;
            SKIFF_CHECK(whole
                            .Sample(OwnedPart(plan[b], ranges, rank),
                                    sampler::BatchSeed(3, kTrainStream, 1, b), &want)
                            .ok());
            CheckSameBatch(got.batch, want);
            return Status::Ok();
          });
      CHECK(st.ok());
      CHECK(partly->reads > static_cast<int64_t>(plan.size()));
    });
  }
}

namespace {

TrainOptions Options() {
  TrainOptions o;
  o.model.kind = model::ModelKind::kSage;
  o.model.num_layers = 2;
  o.model.hidden_dim = 8;
  o.model.dropout = 0;  // the one-process comparison: no masks to differ
  o.fanouts = {4, 3};
  o.batch_size = 50;
  o.eval_batch_size = 70;
  o.epochs = 2;
  o.seed = 4;
  o.sampler_threads = 1;
  o.show_progress = false;
  return o;
}

struct Outcome {
  std::vector<EpochMetrics> epochs;
  std::vector<float> parameters;
};

Outcome OutcomeOf(Trainer& trainer, const Result<TrainSummary>& summary) {
  SKIFF_CHECK(summary.ok());
  Outcome out{.epochs = summary->epochs, .parameters = {}};
  for (const model::Parameter& p : trainer.model().Parameters()) {
    out.parameters.insert(out.parameters.end(), p.data, p.data + p.size());
  }
  return out;
}

// One rank's trainer of an owned-partition run over its own sources (`o` with the job's size).
struct RankTrainer {
  RankSources sources;
  std::unique_ptr<TrainData> data;  // the Trainer keeps a reference
  std::unique_ptr<Trainer> trainer;

  static RankTrainer Create(const Data& d, const NodeRanges& ranges, dist::Communicator* comm,
                            TrainOptions o) {
    RankTrainer out{.sources = SourcesOf(d, ranges, comm),
                    .data = std::make_unique<TrainData>(d.data),
                    .trainer = nullptr};
    out.data->graph = out.sources.graph.get();
    out.data->features = out.sources.features.get();
    o.world_size = comm->size();
    out.trainer = std::move(Trainer::Create(*out.data, o)).value();
    SKIFF_CHECK(out.trainer->SetCommunicator(comm).ok());
    SKIFF_CHECK(out.trainer->SetOwnership(&ranges).ok());
    return out;
  }
};

}  // namespace

TEST_CASE("owned partitions: W ranks train the model one process trains, to rounding") {
  const auto d = MakeData(1000, 6);
  // Accumulating 3 plan batches a step, as one process does with --accumulate 3.
  for (const auto& [kind, accumulate] :
       {std::pair{model::ModelKind::kSage, 1}, std::pair{model::ModelKind::kGcn, 1},
        std::pair{model::ModelKind::kSage, 3}}) {
    CAPTURE(static_cast<int>(kind));
    CAPTURE(accumulate);
    TrainOptions o = Options();
    o.model.kind = kind;
    o.accumulate = accumulate;
    auto plain = Trainer::Create(d->data, o);
    REQUIRE(plain.ok());
    auto plain_summary = (*plain)->Run();
    const Outcome one = OutcomeOf(**plain, plain_summary);
    for (const std::vector<int64_t>& first :
         {std::vector<int64_t>{0, 450, 1000}, std::vector<int64_t>{0, 200, 210, 700, 1000}}) {
      const int ranks = static_cast<int>(first.size()) - 1;
      CAPTURE(ranks);
      const NodeRanges ranges = NodeRanges::FromBoundaries(first).value();
      std::vector<Outcome> outcomes(static_cast<size_t>(ranks));
      OnRanks(ranks, [&](int rank, dist::Communicator* comm) {
        const RankTrainer mine = RankTrainer::Create(*d, ranges, comm, o);
        auto summary = mine.trainer->Run();
        outcomes[static_cast<size_t>(rank)] = OutcomeOf(*mine.trainer, summary);
      });
      for (const Outcome& rank : outcomes) {
        // Every rank holds the same model, bitwise.
        CHECK(rank.parameters == outcomes[0].parameters);
      }
      // One process's model to rounding: the same batches and picks, the sums in another order.
      REQUIRE(outcomes[0].parameters.size() == one.parameters.size());
      double worst = 0;
      for (size_t i = 0; i < one.parameters.size(); ++i) {
        worst = std::max(
            worst, std::abs(static_cast<double>(outcomes[0].parameters[i]) - one.parameters[i]) /
                       std::max(1.0, std::abs(static_cast<double>(one.parameters[i]))));
      }
      CHECK(worst < 1e-5);  // measured: 6e-8 to 1.2e-7 after two epochs
      CHECK(worst > 0);     // the parts' sums are ordered differently: not a copy of one process
      for (size_t e = 0; e < one.epochs.size(); ++e) {
        CAPTURE(e);
        CHECK(outcomes[0].epochs[e].loss == doctest::Approx(one.epochs[e].loss).epsilon(1e-4));
        CHECK(outcomes[0].epochs[e].valid_loss ==
              doctest::Approx(one.epochs[e].valid_loss).epsilon(1e-4));
        CHECK(std::abs(outcomes[0].epochs[e].valid_acc - one.epochs[e].valid_acc) <= 0.01);
      }
    }
  }
}

TEST_CASE("owned partitions: W ranks predict every node as one process does, on rank 0") {
  const auto d = MakeData(1000, 6);
  TrainOptions o = Options();
  o.epochs = 1;
  auto plain = Trainer::Create(d->data, o);
  REQUIRE(plain.ok());
  REQUIRE((*plain)->Run().ok());
  const Result<Checkpoint> trained = (*plain)->MakeCheckpoint(0);
  REQUIRE(trained.ok());
  // Every node, in an order that is not the ranks' (as an export's raw-ID order).
  std::vector<int64_t> nodes(1000);
  for (int64_t i = 0; i < 1000; ++i) nodes[i] = (i * 7919) % 1000;
  std::vector<int32_t> want_classes;
  std::vector<float> want_embeddings;
  REQUIRE((*plain)->Predict(nodes, &want_classes, &want_embeddings).ok());
  const int64_t h = (*plain)->model().EmbeddingDim();
  for (const std::vector<int64_t>& first :
       {std::vector<int64_t>{0, 1000}, std::vector<int64_t>{0, 450, 1000},
        std::vector<int64_t>{0, 200, 200, 700, 1000}}) {
    const int ranks = static_cast<int>(first.size()) - 1;
    CAPTURE(ranks);
    const NodeRanges ranges = NodeRanges::FromBoundaries(first).value();
    std::vector<std::vector<int32_t>> classes(static_cast<size_t>(ranks));
    std::vector<std::vector<float>> embeddings(static_cast<size_t>(ranks));
    OnRanks(ranks, [&](int rank, dist::Communicator* comm) {
      const RankTrainer mine = RankTrainer::Create(*d, ranges, comm, o);
      SKIFF_CHECK(mine.trainer->Restore(*trained).ok());
      const size_t r = static_cast<size_t>(rank);
      SKIFF_CHECK(mine.trainer->Predict(nodes, &classes[r], &embeddings[r]).ok());
    });
    // Rank 0 holds every node's row; the others nothing.
    CHECK(classes[0] == want_classes);
    REQUIRE(embeddings[0].size() == want_embeddings.size());
    REQUIRE(embeddings[0].size() == nodes.size() * static_cast<size_t>(h));
    double worst = 0;
    for (size_t i = 0; i < want_embeddings.size(); ++i) {
      worst = std::max(worst, std::abs(static_cast<double>(embeddings[0][i]) - want_embeddings[i]));
    }
    // Measured: 0, bitwise (each row's forward sees its own sampled block only); the tolerance
    // leaves room for a BLAS whose rows depend on how many rows a product has.
    CHECK(worst <= 1e-5);
    for (int r = 1; r < ranks; ++r) {
      CHECK(classes[static_cast<size_t>(r)].empty());
      CHECK(embeddings[static_cast<size_t>(r)].empty());
    }
  }
}

TEST_CASE("owned partitions: W ranks predict layer by layer as one process does, on rank 0") {
  const auto d = MakeData(1000, 6);
  std::vector<int64_t> nodes(1000);
  for (int64_t i = 0; i < 1000; ++i) nodes[i] = (i * 7919) % 1000;
  for (const auto& [kind, layers] :
       {std::pair{model::ModelKind::kSage, 2}, std::pair{model::ModelKind::kGcn, 2},
        std::pair{model::ModelKind::kGat, 2}, std::pair{model::ModelKind::kSage, 1}}) {
    CAPTURE(static_cast<int>(kind));
    CAPTURE(layers);
    TrainOptions o = Options();
    o.model.kind = kind;
    o.model.num_layers = layers;
    o.fanouts.resize(static_cast<size_t>(layers));
    o.epochs = 1;
    auto plain = Trainer::Create(d->data, o);
    REQUIRE(plain.ok());
    REQUIRE((*plain)->Run().ok());
    const Checkpoint trained = (*plain)->MakeCheckpoint(0).value();
    // Chunks of 64 destinations: ranks of 450 and 550 nodes take 8 and 9 chunks.
    const LayerwiseOptions lo{
        .fanouts = std::vector<int>(static_cast<size_t>(layers), 3), .chunk_nodes = 64, .seed = 11};
    std::vector<int32_t> want_classes;
    std::vector<float> want_embeddings;
    REQUIRE(PredictByLayer((*plain)->model(), *d->graph, *d->features, lo, nodes, &want_classes,
                           &want_embeddings)
                .ok());
    for (const std::vector<int64_t>& first :
         {std::vector<int64_t>{0, 450, 1000}, std::vector<int64_t>{0, 200, 200, 700, 1000}}) {
      const int ranks = static_cast<int>(first.size()) - 1;
      CAPTURE(ranks);
      const NodeRanges ranges = NodeRanges::FromBoundaries(first).value();
      std::vector<std::vector<int32_t>> classes(static_cast<size_t>(ranks));
      std::vector<std::vector<float>> embeddings(static_cast<size_t>(ranks));
      OnRanks(ranks, [&](int rank, dist::Communicator* comm) {
        RankSources mine = SourcesOf(*d, ranges, comm);
        auto model = Trainer::Create(d->data, o);  // the model alone: restored, never trained
        SKIFF_CHECK(model.ok());
        SKIFF_CHECK((*model)->Restore(trained).ok());
        const size_t r = static_cast<size_t>(rank);
        const OwnedLayerwiseSources s{.graph = mine.graph.get(),
                                      .features = mine.features.get(),
                                      .ranges = &ranges,
                                      .comm = comm};
        SKIFF_CHECK(
            PredictByLayerOwned((*model)->model(), s, lo, nodes, &classes[r], &embeddings[r]).ok());
      });
      CHECK(classes[0] == want_classes);
      // Measured: bitwise (each node's row depends on its own block's rows only).
      CHECK(embeddings[0] == want_embeddings);
      for (int r = 1; r < ranks; ++r) CHECK(embeddings[static_cast<size_t>(r)].empty());
    }
  }
}
