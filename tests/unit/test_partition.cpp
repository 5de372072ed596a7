// Tests of the streaming partitioner on in-memory graphs: planted partitions, the balance bound,
// determinism, and option validation.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include "skiff/partition/graph_source.h"
#include "skiff/partition/partitioner.h"

using namespace skiff;
using namespace skiff::partition;

namespace {

struct Csr {
  std::vector<int64_t> offsets{0};
  std::vector<int64_t> neighbors;
};

// Builds a symmetric CSR from undirected edges (duplicates removed, no self-loops).
Csr FromEdges(int64_t n, std::vector<std::pair<int64_t, int64_t>> edges) {
  std::vector<std::vector<int64_t>> adj(n);
  for (auto [u, v] : edges) {
    if (u == v) continue;
    adj[u].push_back(v);
    adj[v].push_back(u);
  }
  Csr g;
  for (auto& row : adj) {
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    g.neighbors.insert(g.neighbors.end(), row.begin(), row.end());
    g.offsets.push_back(static_cast<int64_t>(g.neighbors.size()));
  }
  return g;
}

// `parts` communities of `size` nodes, each node with ~intra_degree random neighbours inside its
// community and a `cross` probability of one edge to another community. Node IDs are shuffled so
// the natural order carries no hint. Returns the planted community of each node in *planted.
Csr Planted(int parts, int64_t size, int intra_degree, double cross, uint64_t seed,
            std::vector<int32_t>* planted) {
  const int64_t n = parts * size;
  std::mt19937_64 rng(seed);
  std::vector<int64_t> id(n);
  std::iota(id.begin(), id.end(), 0);
  std::shuffle(id.begin(), id.end(), rng);
  planted->assign(n, 0);
  std::vector<std::pair<int64_t, int64_t>> edges;
  for (int64_t c = 0; c < parts; ++c) {
    for (int64_t i = 0; i < size; ++i) {
      const int64_t u = id[c * size + i];
      (*planted)[u] = static_cast<int32_t>(c);
      // A ring keeps each community connected; random chords make it dense.
      edges.push_back({u, id[c * size + (i + 1) % size]});
      for (int d = 0; d < intra_degree / 2; ++d) {
        edges.push_back({u, id[c * size + static_cast<int64_t>(rng() % size)]});
      }
      if (std::uniform_real_distribution<double>(0, 1)(rng) < cross) {
        const int64_t other = (c + 1 + static_cast<int64_t>(rng() % (parts - 1))) % parts;
        edges.push_back({u, id[other * size + static_cast<int64_t>(rng() % size)]});
      }
    }
  }
  return FromEdges(n, edges);
}

// Random graph with n nodes and ~m undirected edges.
Csr RandomGraph(int64_t n, int64_t m, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::pair<int64_t, int64_t>> edges;
  for (int64_t e = 0; e < m; ++e) {
    edges.push_back({static_cast<int64_t>(rng() % n), static_cast<int64_t>(rng() % n)});
  }
  return FromEdges(n, edges);
}

int64_t CutOf(const Csr& g, const std::vector<int32_t>& part) {
  int64_t cut = 0;
  for (size_t v = 0; v + 1 < g.offsets.size(); ++v) {
    for (int64_t e = g.offsets[v]; e < g.offsets[v + 1]; ++e)
      cut += part[g.neighbors[e]] != part[v];
  }
  return cut;
}

}  // namespace

TEST_CASE("partition: GREM recovers a planted partition with near-zero cut") {
  std::vector<int32_t> planted;
  const Csr g = Planted(8, 500, 10, 0.01, 42, &planted);
  InMemoryGraphSource src(g.offsets, g.neighbors);
  const double planted_cut =
      static_cast<double>(CutOf(g, planted)) / static_cast<double>(g.neighbors.size());
  CHECK(planted_cut < 0.005);
  PartitionerOptions o;
  o.k = 8;
  o.algorithm = Algorithm::kGrem;
  o.chunk_edges = 2000;  // many chunks
  auto r = PartitionGraph(src, o);
  REQUIRE(r.ok());
  CHECK(r->cut_edges == CutOf(g, r->part));
  MESSAGE("planted cut " << planted_cut << ", GREM cut " << r->edge_cut_fraction());
  CHECK(r->edge_cut_fraction() <= 2 * planted_cut + 0.002);
  // Each recovered part is (almost) one planted community.
  std::vector<std::vector<int64_t>> overlap(8, std::vector<int64_t>(8, 0));
  for (size_t v = 0; v < planted.size(); ++v) ++overlap[r->part[v]][planted[v]];
  for (int p = 0; p < 8; ++p) {
    CHECK(*std::max_element(overlap[p].begin(), overlap[p].end()) >= 490);
  }
}

TEST_CASE("partition: refinement lowers the cut below frozen streaming and plain Fennel") {
  std::vector<int32_t> planted;
  const Csr g = Planted(16, 400, 8, 0.05, 7, &planted);
  InMemoryGraphSource src(g.offsets, g.neighbors);
  PartitionerOptions o;
  o.k = 16;
  o.chunk_edges = 4000;
  o.algorithm = Algorithm::kGrem;
  auto refined = PartitionGraph(src, o);
  o.refine = false;
  auto frozen = PartitionGraph(src, o);
  o.algorithm = Algorithm::kFennel;
  o.passes = 1;
  auto fennel = PartitionGraph(src, o);
  REQUIRE(refined.ok());
  REQUIRE(frozen.ok());
  REQUIRE(fennel.ok());
  MESSAGE("refined " << refined->edge_cut_fraction() << " frozen " << frozen->edge_cut_fraction()
                     << " fennel " << fennel->edge_cut_fraction());
  CHECK(refined->cut_edges < frozen->cut_edges);
  CHECK(refined->cut_edges < fennel->cut_edges);
  CHECK(refined->moves > 0);
}

TEST_CASE("partition: every algorithm meets the balance bound exactly") {
  const Csr g = RandomGraph(1003, 5000, 3);
  InMemoryGraphSource src(g.offsets, g.neighbors);
  for (Algorithm a : {Algorithm::kRandom, Algorithm::kLdg, Algorithm::kFennel, Algorithm::kGrem}) {
    for (StreamOrder order : {StreamOrder::kNatural, StreamOrder::kRandom, StreamOrder::kBfs}) {
      for (int k : {1, 2, 7, 64}) {
        for (double eps : {0.0, 0.03, 0.5}) {
          PartitionerOptions o;
          o.k = k;
          o.algorithm = a;
          o.order = order;
          o.eps = eps;
          o.passes = 3;
          o.chunk_edges = 700;
          auto r = PartitionGraph(src, o);
          REQUIRE(r.ok());
          const int64_t ideal = (1003 + k - 1) / k;
          const int64_t bound = static_cast<int64_t>(std::floor((1 + eps) * ideal));
          CAPTURE(AlgorithmName(a));
          CAPTURE(StreamOrderName(order));
          CAPTURE(k);
          CAPTURE(eps);
          CHECK(*std::max_element(r->part_sizes.begin(), r->part_sizes.end()) <= bound);
          std::vector<int64_t> sizes(k, 0);
          for (int32_t p : r->part) {
            REQUIRE(p >= 0);
            REQUIRE(p < k);
            ++sizes[p];
          }
          CHECK(sizes == r->part_sizes);
          CHECK(r->cut_edges == CutOf(g, r->part));
        }
      }
    }
  }
}

TEST_CASE("partition: training nodes are balanced too when asked") {
  std::vector<int32_t> planted;
  const Csr g = Planted(4, 300, 8, 0.02, 11, &planted);
  // Training nodes concentrated in community 0: an unconstrained partition keeps them together.
  std::vector<uint8_t> train(planted.size(), 0);
  int64_t num_train = 0;
  for (size_t v = 0; v < planted.size(); ++v) {
    if (planted[v] == 0 && v % 2 == 0) {
      train[v] = 1;
      ++num_train;
    }
  }
  InMemoryGraphSource src(g.offsets, g.neighbors);
  PartitionerOptions o;
  o.k = 4;
  o.train_mask = &train;
  o.balance_train = true;
  o.eps = 0.1;
  auto r = PartitionGraph(src, o);
  REQUIRE(r.ok());
  const int64_t train_bound = static_cast<int64_t>(std::floor(1.1 * ((num_train + 3) / 4)));
  CHECK(*std::max_element(r->train_sizes.begin(), r->train_sizes.end()) <= train_bound);
  o.balance_train = false;
  auto loose = PartitionGraph(src, o);
  REQUIRE(loose.ok());
  CHECK(*std::max_element(loose->train_sizes.begin(), loose->train_sizes.end()) > train_bound);
}

TEST_CASE("partition: same seed gives the same partition, whatever the thread count") {
  const Csr g = RandomGraph(20000, 100000, 5);
  InMemoryGraphSource src(g.offsets, g.neighbors);
  for (StreamOrder order : {StreamOrder::kNatural, StreamOrder::kRandom, StreamOrder::kBfs}) {
    PartitionerOptions o;
    o.k = 16;
    o.order = order;
    o.seed = 99;
    o.chunk_edges = 50000;
    o.threads = 1;
    auto a = PartitionGraph(src, o);
    o.threads = 2;
    auto b = PartitionGraph(src, o);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->part == b->part);
    if (order != StreamOrder::kNatural) {
      o.seed = 100;
      auto c = PartitionGraph(src, o);
      REQUIRE(c.ok());
      CHECK(a->part != c->part);
    }
  }
}

TEST_CASE("partition: options are validated") {
  const Csr g = RandomGraph(10, 20, 1);
  InMemoryGraphSource src(g.offsets, g.neighbors);
  PartitionerOptions o;
  o.k = 11;
  auto r = PartitionGraph(src, o);
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  o.k = 0;
  CHECK(PartitionGraph(src, o).status().code() == StatusCode::kInvalidArgument);
  o.k = 2;
  o.eps = -0.1;
  CHECK(PartitionGraph(src, o).status().code() == StatusCode::kInvalidArgument);
  o.eps = 0.03;
  std::vector<uint8_t> mask(9, 0);
  o.train_mask = &mask;
  CHECK(PartitionGraph(src, o).status().code() == StatusCode::kInvalidArgument);
  CHECK(ParseAlgorithm("metis").status().code() == StatusCode::kInvalidArgument);
  CHECK(*ParseAlgorithm("hash") == Algorithm::kRandom);
  CHECK(ParseStreamOrder("dfs").status().code() == StatusCode::kInvalidArgument);
}
