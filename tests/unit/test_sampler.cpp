#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "skiff/sampler/feature_source.h"
#include "skiff/sampler/graph_source.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/train/batch_plan.h"
#include "skiff/train/batch_stream.h"

using namespace skiff;
using namespace skiff::sampler;

namespace {

// A random graph with degrees in [0, max_degree], sorted distinct rows, no self loops.
std::unique_ptr<InMemoryGraph> RandomGraph(int64_t n, int max_degree, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> offsets{0}, nbrs;
  for (int64_t v = 0; v < n; ++v) {
    std::set<int64_t> row;
    const int d = static_cast<int>(rng() % (max_degree + 1));
    for (int i = 0; i < d; ++i) {
      const int64_t w = static_cast<int64_t>(rng() % n);
      if (w != v) row.insert(w);
    }
    nbrs.insert(nbrs.end(), row.begin(), row.end());
    offsets.push_back(static_cast<int64_t>(nbrs.size()));
  }
  auto g = InMemoryGraph::FromCsr(std::move(offsets), std::move(nbrs));
  REQUIRE(g.ok());
  return std::move(g).value();
}

// Checks the MiniBatch layout invariants; returns the global edges (dst, src) of each block.
void CheckLayout(const sampler::MiniBatch& mb, const GraphSource& g,
                 const std::vector<int>& fanouts) {
  const int L = static_cast<int>(fanouts.size());
  REQUIRE(mb.blocks.size() == static_cast<size_t>(L));
  // Seeds are the prefix of input_nodes; input_nodes are distinct.
  REQUIRE(mb.input_nodes.size() >= mb.seeds.size());
  CHECK(std::equal(mb.seeds.begin(), mb.seeds.end(), mb.input_nodes.begin()));
  std::set<int64_t> distinct(mb.input_nodes.begin(), mb.input_nodes.end());
  CHECK(distinct.size() == mb.input_nodes.size());
  CHECK(mb.blocks[0].num_src == static_cast<int64_t>(mb.input_nodes.size()));
  CHECK(mb.blocks[L - 1].num_dst == static_cast<int64_t>(mb.seeds.size()));
  for (int l = 0; l < L; ++l) {
    const auto& b = mb.blocks[l];
    CHECK(b.num_dst <= b.num_src);
    if (l + 1 < L) CHECK(mb.blocks[l + 1].num_src == b.num_dst);
    REQUIRE(b.indptr.size() == static_cast<size_t>(b.num_dst + 1));
    for (int64_t d = 0; d < b.num_dst; ++d) {
      const int64_t v = mb.input_nodes[d];
      std::vector<int64_t> row;
      REQUIRE(g.Neighbors(v, &row).ok());
      std::set<int64_t> seen;
      for (int64_t e = b.indptr[d]; e < b.indptr[d + 1]; ++e) {
        REQUIRE(b.indices[e] >= 0);
        REQUIRE(b.indices[e] < b.num_src);
        const int64_t w = mb.input_nodes[b.indices[e]];
        CHECK(std::binary_search(row.begin(), row.end(), w));  // a real edge
        CHECK(seen.insert(w).second);                          // no duplicate neighbours
      }
      // Every destination of block l has exactly min(fanouts[l], degree) edges (all for -1), as
      // in DGL, whichever hop the node first appeared at.
      const int64_t count = b.indptr[d + 1] - b.indptr[d];
      const int f = fanouts[l];
      const int64_t degree = static_cast<int64_t>(row.size());
      CHECK(count == (f < 0 ? degree : std::min<int64_t>(f, degree)));
    }
  }
}

}  // namespace

TEST_CASE("sampler: fanout parsing") {
  auto f = ParseFanouts("15,10,5");
  REQUIRE(f.ok());
  CHECK(*f == std::vector<int>{15, 10, 5});
  CHECK(ParseFanouts("-1,-1")->size() == 2);
  CHECK(!ParseFanouts("15,x").ok());
  CHECK(*ParseFanouts("0,0") == std::vector<int>{0, 0});  // features only (an MLP for SAGE)
  CHECK(!ParseFanouts("").ok());
  CHECK(ParseFanouts("3,-2").status().message().find("element 1") != std::string::npos);
}

TEST_CASE("sampler: fanout 0 samples no neighbours") {
  // A 3-node path 0-1-2: with fanouts 0,0 every block has its destinations and no edges.
  std::vector<int64_t> offsets{0, 1, 3, 4};
  std::vector<int64_t> neighbors{1, 0, 2, 1};
  auto graph = InMemoryGraph::FromCsr(std::move(offsets), std::move(neighbors));
  REQUIRE(graph.ok());
  NeighborSampler sampler(**graph, {0, 0});
  sampler::MiniBatch batch;
  const std::vector<int64_t> seeds{1, 2};
  REQUIRE(sampler.Sample(seeds, 7, &batch).ok());
  CHECK(batch.input_nodes == std::vector<int64_t>{1, 2});
  REQUIRE(batch.blocks.size() == 2);
  for (const auto& block : batch.blocks) {
    CHECK(block.num_dst == 2);
    CHECK(block.num_src == 2);
    CHECK(block.num_edges() == 0);
  }
}

TEST_CASE("sampler: layout, fanout bounds, no duplicates, prefix property") {
  auto g = RandomGraph(500, 30, 1);
  std::vector<int> fanouts{7, 4, 3};
  NeighborSampler s(*g, fanouts);
  std::vector<int64_t> seeds{5, 17, 99, 123, 400, 0};
  sampler::MiniBatch mb;
  REQUIRE(s.Sample(seeds, 42, &mb).ok());
  CheckLayout(mb, *g, fanouts);
  // Seeds' rows in the last block have min(3, degree) edges exactly.
  const auto& last = mb.blocks.back();
  for (size_t i = 0; i < seeds.size(); ++i) {
    CHECK(last.indptr[i + 1] - last.indptr[i] == std::min<int64_t>(3, g->Degree(seeds[i])));
  }
  // A node is sampled once: its picks in a block with a smaller fanout are a subset of its picks
  // in a block with a larger one (here fanouts fall from block 0 to block 2).
  for (int l = 0; l + 1 < 3; ++l) {
    const auto& wide = mb.blocks[l];
    const auto& narrow = mb.blocks[l + 1];
    for (int64_t d = 0; d < narrow.num_dst; ++d) {
      std::set<int32_t> wide_row(wide.indices.begin() + wide.indptr[d],
                                 wide.indices.begin() + wide.indptr[d + 1]);
      for (int64_t e = narrow.indptr[d]; e < narrow.indptr[d + 1]; ++e) {
        CHECK(wide_row.count(narrow.indices[e]) == 1);
      }
    }
  }
}

TEST_CASE("sampler: deterministic for a seed, different for another") {
  auto g = RandomGraph(300, 40, 2);
  NeighborSampler s(*g, {10, 5});
  std::vector<int64_t> seeds{1, 2, 3, 50, 60};
  sampler::MiniBatch a, b, c;
  REQUIRE(s.Sample(seeds, 7, &a).ok());
  REQUIRE(s.Sample(seeds, 7, &b).ok());
  REQUIRE(s.Sample(seeds, 8, &c).ok());
  CHECK(a.input_nodes == b.input_nodes);
  CHECK(a.blocks[0].indices == b.blocks[0].indices);
  CHECK(a.input_nodes != c.input_nodes);
}

TEST_CASE("sampler: batches alternating the ID map's dense and hashed forms stay exact") {
  // The map is dense (indexed by node ID) when that is no larger than a hash table for the batch:
  // a big batch on this graph is dense, two seeds with small fanouts are hashed. One thread's map
  // serves both in turn, and each batch must come out as it does alone.
  auto g = RandomGraph(50000, 8, 3);
  NeighborSampler small(*g, {3, 2}), big(*g, {8, 8});
  std::vector<int64_t> few{17, 40000}, many;
  for (int64_t v = 0; v < 2000; ++v) many.push_back(v * 23);
  sampler::MiniBatch a1, b1, a2, b2;
  REQUIRE(small.Sample(few, 5, &a1).ok());
  REQUIRE(big.Sample(many, 6, &b1).ok());
  REQUIRE(small.Sample(few, 5, &a2).ok());
  REQUIRE(big.Sample(many, 6, &b2).ok());
  CheckLayout(a1, *g, {3, 2});
  CheckLayout(b1, *g, {8, 8});
  CHECK(a1.input_nodes == a2.input_nodes);
  CHECK(b1.input_nodes == b2.input_nodes);
  for (size_t l = 0; l < 2; ++l) {
    CHECK(a1.blocks[l].indices == a2.blocks[l].indices);
    CHECK(b1.blocks[l].indices == b2.blocks[l].indices);
  }
}

TEST_CASE("sampler: SampleGroup gives each batch exactly what Sample gives it") {
  auto g = RandomGraph(400, 30, 5);
  for (const std::vector<int>& fanouts : {std::vector<int>{10, 5}, std::vector<int>{4, -1, 3}}) {
    NeighborSampler s(*g, fanouts, /*record_degrees=*/true);
    // Batches of different sizes that share neighbours, sampled alone and as one group.
    const std::vector<std::vector<int64_t>> seeds{{1, 2, 3, 50}, {60, 61}, {7, 300, 301, 302, 9}};
    const std::vector<uint64_t> rng_seeds{11, 12, 13};
    std::vector<sampler::MiniBatch> alone(seeds.size()), grouped(seeds.size());
    std::vector<std::span<const int64_t>> spans;
    std::vector<sampler::MiniBatch*> outs;
    for (size_t b = 0; b < seeds.size(); ++b) {
      REQUIRE(s.Sample(seeds[b], rng_seeds[b], &alone[b]).ok());
      spans.emplace_back(seeds[b]);
      outs.push_back(&grouped[b]);
    }
    REQUIRE(s.SampleGroup(spans, rng_seeds, outs).ok());
    for (size_t b = 0; b < seeds.size(); ++b) {
      CAPTURE(b);
      CHECK(grouped[b].seeds == alone[b].seeds);
      CHECK(grouped[b].input_nodes == alone[b].input_nodes);
      REQUIRE(grouped[b].blocks.size() == alone[b].blocks.size());
      for (size_t l = 0; l < alone[b].blocks.size(); ++l) {
        CHECK(grouped[b].blocks[l].num_dst == alone[b].blocks[l].num_dst);
        CHECK(grouped[b].blocks[l].indptr == alone[b].blocks[l].indptr);
        CHECK(grouped[b].blocks[l].indices == alone[b].blocks[l].indices);
        CHECK(grouped[b].blocks[l].src_degree == alone[b].blocks[l].src_degree);
      }
      CheckLayout(grouped[b], *g, fanouts);
    }
  }
}

TEST_CASE("sampler: record_degrees gives every block its sources' whole-graph degrees") {
  auto g = RandomGraph(300, 40, 2);
  NeighborSampler plain(*g, {10, 5});
  NeighborSampler with(*g, {10, 5}, /*record_degrees=*/true);
  std::vector<int64_t> seeds{1, 2, 3, 50, 60};
  sampler::MiniBatch a, b;
  REQUIRE(plain.Sample(seeds, 7, &a).ok());
  REQUIRE(with.Sample(seeds, 7, &b).ok());
  CHECK(a.input_nodes == b.input_nodes);  // recording does not change the picks
  for (size_t l = 0; l < b.blocks.size(); ++l) {
    CHECK(a.blocks[l].src_degree.empty());
    const sampler::Block& block = b.blocks[l];
    REQUIRE(static_cast<int64_t>(block.src_degree.size()) == block.num_src);
    for (int64_t s = 0; s < block.num_src; ++s) {
      CHECK(block.src_degree[s] == g->Degree(b.input_nodes[s]));
    }
  }
}

TEST_CASE("sampler: full-neighbourhood mode is exact") {
  auto g = RandomGraph(200, 12, 3);
  NeighborSampler s(*g, {-1, -1});
  std::vector<int64_t> seeds{10, 20, 30};
  sampler::MiniBatch mb;
  REQUIRE(s.Sample(seeds, 1, &mb).ok());
  CheckLayout(mb, *g, {-1, -1});
  for (int l = 0; l < 2; ++l) {
    const auto& b = mb.blocks[l];
    for (int64_t d = 0; d < b.num_dst; ++d) {
      std::vector<int64_t> row, got;
      REQUIRE(g->Neighbors(mb.input_nodes[d], &row).ok());
      for (int64_t e = b.indptr[d]; e < b.indptr[d + 1]; ++e) {
        got.push_back(mb.input_nodes[b.indices[e]]);
      }
      CHECK(got == row);  // all neighbours, in row order
    }
  }
  // The 2-hop closure: input nodes are exactly seeds + 1-hop + 2-hop neighbourhoods.
  std::set<int64_t> expect(seeds.begin(), seeds.end());
  std::set<int64_t> frontier = expect;
  for (int h = 0; h < 2; ++h) {
    std::set<int64_t> next;
    for (int64_t v : frontier) {
      std::vector<int64_t> row;
      REQUIRE(g->Neighbors(v, &row).ok());
      for (int64_t w : row) {
        if (expect.insert(w).second) next.insert(w);
      }
    }
    frontier = next;
  }
  CHECK(std::set<int64_t>(mb.input_nodes.begin(), mb.input_nodes.end()) == expect);
}

TEST_CASE("sampler: uniform picks in row order, on rows short and long") {
  // A star per degree: node 0 has d neighbours, fanout 5 over 4000 draws picks each about
  // 20000 / d times, in row order. Rows of at most 64 hold their picks as a bit set, longer ones as
  // a list: both sides of the boundary.
  for (const int d : {20, 64, 65, 200}) {
    CAPTURE(d);
    std::vector<int64_t> offsets{0, d}, nbrs;
    for (int i = 1; i <= d; ++i) nbrs.push_back(i);
    for (int i = 1; i <= d; ++i) offsets.push_back(d);
    auto g = InMemoryGraph::FromCsr(offsets, nbrs);
    REQUIRE(g.ok());
    NeighborSampler s(**g, {5});
    std::map<int64_t, int> counts;
    std::vector<int64_t> seeds{0};
    const int draws = 4000;
    for (uint64_t r = 0; r < draws; ++r) {
      sampler::MiniBatch mb;
      REQUIRE(s.Sample(seeds, BatchSeed(0, 0, 0, r), &mb).ok());
      REQUIRE(mb.blocks[0].num_edges() == 5);
      std::vector<int64_t> picked;
      for (int32_t local : mb.blocks[0].indices) picked.push_back(mb.input_nodes[local]);
      CHECK(std::is_sorted(picked.begin(), picked.end()));
      for (size_t i = 1; i < mb.input_nodes.size(); ++i) counts[mb.input_nodes[i]]++;
    }
    REQUIRE(counts.size() == static_cast<size_t>(d));
    const double expected = draws * 5.0 / d;  // 1000 .. 100 per neighbour
    for (auto [v, c] : counts) CHECK(c == doctest::Approx(expected).epsilon(0.35));
  }
}

TEST_CASE("sampler: nested picks stay uniform in every layer") {
  // Star again, two layers: the seed takes 3 neighbours in the last block and 8 in the first; each
  // block's picks must be a uniform subset of its size (a prefix of one ordered sample).
  std::vector<int64_t> offsets{0, 20}, nbrs;
  for (int i = 1; i <= 20; ++i) nbrs.push_back(i);
  for (int i = 1; i <= 20; ++i) offsets.push_back(20);
  auto g = InMemoryGraph::FromCsr(offsets, nbrs);
  REQUIRE(g.ok());
  NeighborSampler s(**g, {8, 3});
  std::map<int64_t, int> narrow, wide;
  std::vector<int64_t> seeds{0};
  const int draws = 4000;
  for (uint64_t r = 0; r < draws; ++r) {
    sampler::MiniBatch mb;
    REQUIRE(s.Sample(seeds, BatchSeed(0, 0, 0, r), &mb).ok());
    REQUIRE(mb.blocks[1].indptr[1] == 3);
    REQUIRE(mb.blocks[0].indptr[1] == 8);
    for (int64_t e = 0; e < 3; ++e) narrow[mb.input_nodes[mb.blocks[1].indices[e]]]++;
    for (int64_t e = 0; e < 8; ++e) wide[mb.input_nodes[mb.blocks[0].indices[e]]]++;
  }
  REQUIRE(narrow.size() == 20);
  REQUIRE(wide.size() == 20);
  for (int v = 1; v <= 20; ++v) {
    CHECK(narrow[v] == doctest::Approx(draws * 3 / 20.0).epsilon(0.2));
    CHECK(wide[v] == doctest::Approx(draws * 8 / 20.0).epsilon(0.1));
  }
}

TEST_CASE("sampler: bad seeds are rejected") {
  auto g = RandomGraph(10, 3, 4);
  NeighborSampler s(*g, {2});
  sampler::MiniBatch mb;
  std::vector<int64_t> out_of_range{3, 10};
  CHECK(s.Sample(out_of_range, 0, &mb).code() == StatusCode::kInvalidArgument);
  std::vector<int64_t> repeated{3, 3};
  CHECK(s.Sample(repeated, 0, &mb).code() == StatusCode::kInvalidArgument);
  CHECK(!InMemoryGraph::FromCsr({0, 1}, {5}).ok());
}

TEST_CASE("batch plan: every node exactly once per epoch; epochs differ; deterministic") {
  std::vector<int64_t> nodes(1000);
  std::iota(nodes.begin(), nodes.end(), 100);
  auto e0 = train::PlanBatches(nodes, 64, true, 1, 0);
  auto e0b = train::PlanBatches(nodes, 64, true, 1, 0);
  auto e1 = train::PlanBatches(nodes, 64, true, 1, 1);
  CHECK(e0 == e0b);
  CHECK(e0 != e1);
  CHECK(e0.size() == 16);
  std::vector<int64_t> all;
  for (auto& b : e0) {
    CHECK(b.size() <= 64);
    all.insert(all.end(), b.begin(), b.end());
  }
  std::sort(all.begin(), all.end());
  CHECK(all == nodes);
}

TEST_CASE("batch stream: in order, independent of thread count, labels and features gathered") {
  auto g = RandomGraph(400, 20, 5);
  std::vector<float> feats(400 * 3);
  for (size_t i = 0; i < feats.size(); ++i) feats[i] = static_cast<float>(i);
  auto f = InMemoryFeatures::FromMatrix(feats, 3);
  REQUIRE(f.ok());
  std::vector<int32_t> labels(400);
  for (int i = 0; i < 400; ++i) labels[i] = i % 7;
  NeighborSampler s(*g, {6, 4});
  std::vector<int64_t> nodes(300);
  std::iota(nodes.begin(), nodes.end(), 0);
  auto run = [&](int threads) {
    train::BatchStreamOptions o;
    o.threads = threads;
    o.capacity = 3;
    o.seed = 9;
    o.epoch = 2;
    train::BatchStream stream(s, **f, &labels, train::PlanBatches(nodes, 32, true, 9, 2), o);
    std::vector<train::PreparedBatch> out;
    while (true) {
      auto r = stream.Next();
      REQUIRE(r.ok());
      if (!r->has_value()) break;
      out.push_back(std::move(**r));
    }
    return out;
  };
  auto one = run(1);
  auto four = run(4);
  REQUIRE(one.size() == 10);
  REQUIRE(four.size() == one.size());
  std::set<int64_t> visited;
  for (size_t i = 0; i < one.size(); ++i) {
    CHECK(one[i].index == static_cast<int64_t>(i));
    CHECK(one[i].batch.input_nodes == four[i].batch.input_nodes);
    CHECK(one[i].batch.blocks[0].indices == four[i].batch.blocks[0].indices);
    CHECK(one[i].features == four[i].features);
    const auto& mb = one[i].batch;
    for (size_t j = 0; j < mb.seeds.size(); ++j) {
      CHECK(mb.labels[j] == mb.seeds[j] % 7);
      CHECK(visited.insert(mb.seeds[j]).second);
    }
    for (size_t j = 0; j < mb.input_nodes.size(); ++j) {
      CHECK(one[i].features[j * 3 + 1] == static_cast<float>(mb.input_nodes[j] * 3 + 1));
    }
  }
  CHECK(visited.size() == 300);
}

namespace {
class FailingGraph final : public GraphSource {
 public:
  int64_t num_nodes() const override { return 100; }
  int64_t Degree(int64_t v) const override { return 5; }
  Status NeighborsAt(int64_t v, std::span<const int64_t> positions, int64_t* out) const override {
    if (v == 77) return Status::IOError("graph.neighbors: injected read failure");
    for (size_t i = 0; i < positions.size(); ++i) out[i] = (v + positions[i] + 1) % 100;
    return Status::Ok();
  }
};
}  // namespace

TEST_CASE("batch stream: a source error surfaces from Next()") {
  FailingGraph g;
  auto f = InMemoryFeatures::FromMatrix(std::vector<float>(100, 1.0f), 1);
  REQUIRE(f.ok());
  NeighborSampler s(g, {2});
  std::vector<int64_t> nodes(100);
  std::iota(nodes.begin(), nodes.end(), 0);
  train::BatchStreamOptions o;
  o.threads = 3;
  train::BatchStream stream(s, **f, nullptr, train::PlanBatches(nodes, 10, false, 0, 0), o);
  Status error;
  for (int i = 0; i < 20; ++i) {
    auto r = stream.Next();
    if (!r.ok()) {
      error = r.status();
      break;
    }
    if (!r->has_value()) break;
  }
  CHECK(error.code() == StatusCode::kIOError);
  CHECK(error.message().find("injected") != std::string::npos);
}
