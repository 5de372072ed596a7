// pipeline::LinkLoader on an undirected, partitioned dataset with an edge split: its training
// batches are the ones `skiff train --task link` draws (pairs, orientation, negatives, sampled
// neighbourhoods), they are the same within a small budget, held-out splits come with their
// non-edges, and bad input is refused with a message.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "skiff/convert/edge_split.h"
#include "skiff/format/dataset.h"
#include "skiff/partition/partition_dataset.h"
#include "skiff/pipeline/link_loader.h"
#include "skiff/pipeline/link_passes.h"
#include "skiff/random.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/train/batch_plan.h"
#include "skiff/train/link_trainer.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using namespace skiff::pipeline;

namespace {

constexpr int64_t kNodes = 4000, kDim = 32;

// An undirected graph of `kNodes` nodes in 8 communities (edges mostly inside one), kDim-wide
// features, written at `dir`.
void WriteCommunityGraph(const std::string& dir) {
  Rng rng(3);
  std::vector<std::set<int64_t>> rows(kNodes);
  for (int64_t e = 0; e < 6 * kNodes; ++e) {
    const auto u = static_cast<int64_t>(rng.Below(kNodes));
    auto v = static_cast<int64_t>(rng.Below(kNodes));
    if (rng.Below(10) < 8) v = v - v % 8 + u % 8;  // mostly within u's community
    if (u == v || v >= kNodes) continue;
    rows[u].insert(v);
    rows[v].insert(u);
  }
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> neighbors;
  for (const auto& row : rows) {
    for (int64_t v : row) neighbors.push_back(static_cast<int32_t>(v));
    offsets.push_back(static_cast<int64_t>(neighbors.size()));
  }
  auto w = format::DatasetWriter::Create(dir);
  REQUIRE(w.ok());
  auto& m = (*w)->manifest();
  m.name = "communities";
  m.num_nodes = kNodes;
  m.num_edges = static_cast<int64_t>(neighbors.size());
  m.undirected = true;
  m.feature_dim = kDim;
  m.num_classes = 8;
  std::vector<float> features(kNodes * kDim);
  for (size_t i = 0; i < features.size(); ++i) features[i] = static_cast<float>(i % 97);
  std::vector<int32_t> labels(kNodes);
  for (int64_t v = 0; v < kNodes; ++v) labels[v] = static_cast<int32_t>(v % 8);
  std::vector<int64_t> train{0, 1, 2}, valid{3}, test{4};
  m.train_count = 3;
  m.valid_count = 1;
  m.test_count = 1;
  REQUIRE((*w)->WriteFile(format::kOffsetsFile, offsets.data(), offsets.size() * 8).ok());
  REQUIRE((*w)->WriteFile(format::kNeighborsFile, neighbors.data(), neighbors.size() * 4).ok());
  REQUIRE((*w)->WriteFile(format::kFeaturesFile, features.data(), features.size() * 4).ok());
  REQUIRE((*w)->WriteFile(format::kLabelsFile, labels.data(), labels.size() * 4).ok());
  REQUIRE((*w)->WriteFile(format::kTrainFile, train.data(), 24).ok());
  REQUIRE((*w)->WriteFile(format::kValidFile, valid.data(), 8).ok());
  REQUIRE((*w)->WriteFile(format::kTestFile, test.data(), 8).ok());
  REQUIRE((*w)->Commit().ok());
}

std::unique_ptr<format::Dataset> Open(const std::string& dir) {
  auto ds = format::Dataset::Open(dir);
  REQUIRE_MESSAGE(ds.ok(), ds.status().ToString());
  return std::move(*ds);
}

// The graph above, without an edge split (`plain`) and with one, partitioned into 8 (`split`).
struct Fixture {
  testing::TempDir tmp;
  std::unique_ptr<format::Dataset> plain, split;
  Fixture() {
    WriteCommunityGraph(tmp / "plain");
    plain = Open(tmp / "plain");
    {
      auto w = format::DatasetWriter::Create(tmp / "edges");
      REQUIRE(w.ok());
      REQUIRE(convert::WriteEdgeSplit(*plain, **w, {0.8, 0.1, 0.1, 4}).ok());
      REQUIRE((*w)->Commit().ok());
    }
    partition::PartitionOptions o;
    o.dataset_dir = tmp / "edges";
    o.output_dir = tmp / "split";
    o.partitioner.k = 8;
    o.memory_bytes = 256ull << 20;
    REQUIRE(partition::PartitionDataset(o).ok());
    split = Open(tmp / "split");
  }
};

// What a test compares of a sampled batch.
struct Drawn {
  std::vector<int64_t> seeds, input_nodes;
  std::vector<std::vector<int32_t>> indices;  // per block
  bool operator==(const Drawn&) const = default;
};

Drawn DrawnOf(const sampler::MiniBatch& batch) {
  Drawn d{batch.seeds, batch.input_nodes, {}};
  for (const auto& block : batch.blocks) d.indices.push_back(block.indices);
  return d;
}

// One pass of a loader: each batch's draw, and its pairs and negatives as node IDs.
struct LoaderPass {
  std::vector<Drawn> drawn;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> pairs;
  std::vector<std::vector<int64_t>> negatives;
};

LoaderPass RunLoader(LinkLoader& loader, bool shuffle, uint64_t epoch) {
  auto pass = loader.Start(shuffle, epoch);
  REQUIRE_MESSAGE(pass.ok(), pass.status().ToString());
  LoaderPass out;
  while (true) {
    auto next = pass->stream->Next();
    REQUIRE_MESSAGE(next.ok(), next.status().ToString());
    if (!next->has_value()) break;
    PreparedBatch& b = **next;
    REQUIRE(b.index == static_cast<int64_t>(out.drawn.size()));
    const train::EdgeBatch& e = pass->edges.batches[static_cast<size_t>(b.index)];
    const std::vector<int64_t>& seeds = b.batch.seeds;
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (size_t i = 0; i < e.pos_src.size(); ++i) {
      pairs.emplace_back(seeds[e.pos_src[i]], seeds[e.pos_dst[i]]);
    }
    std::vector<int64_t> negatives;
    for (int32_t row : e.neg_dst) negatives.push_back(seeds[row]);
    out.drawn.push_back(DrawnOf(b.batch));
    out.pairs.push_back(std::move(pairs));
    out.negatives.push_back(std::move(negatives));
    pass->stream->Release(std::move(b));
  }
  REQUIRE(pass->stream->Finish().ok());
  return out;
}

train::TrainOptions LinkTrainOptions() {
  train::TrainOptions t;
  t.task = train::Task::kLink;
  t.model.hidden_dim = 8;
  t.model.num_layers = 2;
  t.fanouts = {3, 2};
  t.batch_size = 256;
  t.epochs = 2;
  t.seed = 17;
  t.link.out_dim = 8;
  t.link.negatives = 12;
  t.link.eval_negatives = 0;
  t.link.eval_edges = 16;
  t.show_progress = false;
  return t;
}

LinkLoaderOptions LoaderOptionsLike(const train::TrainOptions& t) {
  LinkLoaderOptions o;
  o.loader.fanouts = t.fanouts;
  o.loader.batch_size = t.batch_size;
  o.loader.seed = t.seed;
  o.loader.model_bytes = 1 << 20;
  o.negatives = t.link.negatives;
  o.negative_sampler = t.link.negative_sampler;
  return o;
}

}  // namespace

TEST_CASE("link loader: the training batches are the ones skiff train --task link draws") {
  Fixture f;
  for (const auto sampler : {train::NegativeSampler::kUniform, train::NegativeSampler::kDegree}) {
    CAPTURE(static_cast<int>(sampler));
    train::TrainOptions t = LinkTrainOptions();
    t.link.negative_sampler = sampler;
    // The trainer as `skiff train --task link` runs it, its training batches recorded.
    auto engine = OpenOutOfCoreLink(f.split.get(), t, 0, SamplingMode::kExact, 2, false);
    REQUIRE_MESSAGE(engine.ok(), engine.status().ToString());
    auto trainer = train::LinkTrainer::Create((*engine)->data, t);
    REQUIRE_MESSAGE(trainer.ok(), trainer.status().ToString());
    std::map<int64_t, std::vector<Drawn>> trained;  // per epoch
    train::LinkPassRunner runner = MakeOutOfCoreLinkRunner(engine->get(), t, false);
    (*trainer)->SetPassRunner([&](train::LinkPassSpec pass,
                                  const std::function<Status(train::PreparedBatch&)>& consume,
                                  std::string* report) {
      if (!pass.training) return runner(std::move(pass), consume, report);
      const int64_t epoch = pass.epoch;
      return runner(
          std::move(pass),
          [&](train::PreparedBatch& b) {
            trained[epoch].push_back(DrawnOf(b.batch));
            return consume(b);
          },
          report);
    });
    REQUIRE((*trainer)->Run().ok());
    REQUIRE(trained.size() == 2);

    auto edges = SplitEdges(*f.split, "train");
    REQUIRE(edges.ok());
    CHECK(edges->reorient);  // undirected
    const std::vector<int64_t> train_pairs = edges->pairs;
    auto loader = LinkLoader::Create(f.split.get(), std::move(*edges), LoaderOptionsLike(t));
    REQUIRE_MESSAGE(loader.ok(), loader.status().ToString());
    sampler::DatasetCsr csr(*f.split);
    for (uint64_t epoch : {0, 1}) {
      const LoaderPass got = RunLoader(**loader, /*shuffle=*/true, epoch);
      // The trainer's sampled batches, seeds and neighbourhoods alike.
      CHECK(got.drawn == trained[static_cast<int64_t>(epoch)]);
      // The pairs and negatives, from the trainer's definitions: shuffled by (seed, epoch), each
      // pair reoriented by (seed, epoch), negatives from (seed, epoch, batch).
      const auto plan = train::PlanEdgeBatches(static_cast<int64_t>(train_pairs.size() / 2),
                                               t.batch_size, true, t.seed, epoch);
      REQUIRE(got.pairs.size() == plan.size());
      std::set<int64_t> seen;
      int reversed = 0;
      for (size_t b = 0; b < plan.size(); ++b) {
        REQUIRE(got.pairs[b].size() == plan[b].size());
        for (size_t i = 0; i < plan[b].size(); ++i) {
          const int64_t p = plan[b][i];
          seen.insert(p);
          std::pair<int64_t, int64_t> want{train_pairs[2 * p], train_pairs[2 * p + 1]};
          if (train::ReversedInEpoch(t.seed, epoch, p)) {
            std::swap(want.first, want.second);
            ++reversed;
          }
          CHECK(got.pairs[b][i] == want);
        }
        const train::NegativeOptions neg{t.link.negatives, sampler, kNodes, &csr};
        CHECK(got.negatives[b] == *train::DrawNegatives(neg, t.seed, epoch, b));
      }
      CHECK(static_cast<int64_t>(seen.size()) == (*loader)->num_pairs());  // each pair once
      CHECK(reversed > 0);
    }
  }
}

TEST_CASE("link loader: the same batches within a small budget, with O_DIRECT reads") {
  Fixture f;
  LinkLoaderOptions o = LoaderOptionsLike(LinkTrainOptions());
  auto all = LinkLoader::Create(f.split.get(), *SplitEdges(*f.split, "train"), o);
  REQUIRE(all.ok());
  CHECK((*all)->memory_plan().fully_resident);
  o.loader.memory_bytes = 15 << 19;  // 7.5 MiB: the least is 7.3 MiB, the data 0.7 MiB in 8 parts
  o.loader.direct_io = true;
  auto small = LinkLoader::Create(f.split.get(), *SplitEdges(*f.split, "train"), o);
  REQUIRE_MESSAGE(small.ok(), small.status().ToString());
  CHECK_FALSE((*small)->memory_plan().fully_resident);
  for (uint64_t epoch : {0, 3}) {
    const LoaderPass a = RunLoader(**all, true, epoch), b = RunLoader(**small, true, epoch);
    CHECK(a.drawn == b.drawn);
    CHECK(a.pairs == b.pairs);
    CHECK(a.negatives == b.negatives);
  }
}

TEST_CASE("link loader: held-out splits, caller pairs, unshuffled order") {
  Fixture f;
  const train::TrainOptions t = LinkTrainOptions();
  train::LinkData data;
  REQUIRE(train::LoadEdgeSplit(*f.split, &data).ok());
  auto valid = SplitEdges(*f.split, "valid");
  REQUIRE(valid.ok());
  CHECK(valid->stream == train::kValidStream);
  CHECK_FALSE(valid->reorient);
  CHECK(valid->positives == static_cast<int64_t>(data.valid.size() / 2));
  CHECK(valid->pairs.size() == data.valid.size() + data.valid_neg.size());
  LinkLoaderOptions o = LoaderOptionsLike(t);
  o.negatives = 0;
  auto loader = LinkLoader::Create(f.split.get(), std::move(*valid), o);
  REQUIRE(loader.ok());
  const LoaderPass pass = RunLoader(**loader, /*shuffle=*/false, 0);
  std::vector<int64_t> flat;
  for (const auto& batch : pass.pairs) {
    for (const auto& [s, d] : batch) {
      flat.push_back(s);
      flat.push_back(d);
    }
  }
  std::vector<int64_t> want = data.valid;
  want.insert(want.end(), data.valid_neg.begin(), data.valid_neg.end());
  CHECK(flat == want);  // in the given order, never reoriented
  for (const auto& negatives : pass.negatives) CHECK(negatives.empty());

  // Caller pairs draw as the training split does, in their own orientation.
  auto given = LinkLoader::Create(f.split.get(), GivenEdges(data.train), LoaderOptionsLike(t));
  REQUIRE(given.ok());
  const LoaderPass g = RunLoader(**given, true, 1);
  const auto plan = train::PlanEdgeBatches(static_cast<int64_t>(data.train.size() / 2),
                                           t.batch_size, true, t.seed, 1);
  for (size_t i = 0; i < plan[0].size(); ++i) {
    CHECK(g.pairs[0][i] ==
          std::make_pair(data.train[2 * plan[0][i]], data.train[2 * plan[0][i] + 1]));
  }
}

TEST_CASE("link loader: refusals name what is wrong") {
  Fixture f;
  auto none = SplitEdges(*f.plain, "train");
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == StatusCode::kInvalidArgument);
  CHECK(none.status().message().find("no edge split") != std::string::npos);
  auto name = SplitEdges(*f.split, "everything");
  CHECK(name.status().message().find("'everything' is not a split") != std::string::npos);
  const LinkLoaderOptions o = LoaderOptionsLike(LinkTrainOptions());
  auto outside = LinkLoader::Create(f.plain.get(), GivenEdges({0, 1, 2, kNodes}), o);
  REQUIRE_FALSE(outside.ok());
  CHECK(outside.status().message().find("pair 1 has node 4000, not in [0, 4000)") !=
        std::string::npos);
  CHECK(LinkLoader::Create(f.plain.get(), GivenEdges({}), o).status().code() ==
        StatusCode::kInvalidArgument);
  CHECK(LinkLoader::Create(f.plain.get(), GivenEdges({0, 1, 2}), o).status().code() ==
        StatusCode::kInvalidArgument);
  LinkLoaderOptions negative = o;
  negative.negatives = -1;
  CHECK(LinkLoader::Create(f.plain.get(), GivenEdges({0, 1}), negative).status().message() ==
        "negatives -1 is negative");
  LinkLoaderOptions tiny = o;
  tiny.loader.memory_bytes = 64 << 10;
  CHECK(LinkLoader::Create(f.plain.get(), GivenEdges({0, 1}), tiny).status().code() ==
        StatusCode::kResourceExhausted);
  // Caller pairs need no edge split.
  auto plain = LinkLoader::Create(f.plain.get(), GivenEdges({0, 1, 5, 9}), o);
  REQUIRE(plain.ok());
  CHECK(RunLoader(**plain, false, 0).pairs.size() == 1);
}
