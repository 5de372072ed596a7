// Tests of FmRefine (GREM's last step, in memory): the cut never grows and no part passes its
// cap, over random graphs and partitions; it finds the one-edge cut between two cliques that
// start mixed, and a better cut that only a losing first move leads to; a pass that cannot gain is
// undone; vertices over max_degree stay; no work, no moves.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "src/partition/fm_refine.h"

using skiff::partition::FmOptions;
using skiff::partition::FmRefine;
using skiff::partition::FmResult;
using skiff::partition::WeightedGraph;

namespace {

// A symmetric graph of unit weights from undirected edges (both rows get each edge).
WeightedGraph Symmetric(int32_t n, const std::vector<std::pair<int32_t, int32_t>>& edges) {
  std::vector<std::vector<int32_t>> rows(static_cast<size_t>(n));
  for (const auto& [a, b] : edges) {
    rows[a].push_back(b);
    rows[b].push_back(a);
  }
  WeightedGraph g;
  g.offsets.assign(1, 0);
  for (const std::vector<int32_t>& row : rows) {
    g.adj.insert(g.adj.end(), row.begin(), row.end());
    g.offsets.push_back(static_cast<int64_t>(g.adj.size()));
  }
  g.weight.assign(static_cast<size_t>(n), 1);
  return g;
}

// Entries of rows whose endpoints are in different parts: twice the undirected cut.
int64_t CutEntries(const WeightedGraph& g, const std::vector<int32_t>& part) {
  int64_t cut = 0;
  for (int32_t v = 0; v < g.size(); ++v) {
    for (int64_t e = g.offsets[v]; e < g.offsets[v + 1]; ++e) cut += part[v] != part[g.adj[e]];
  }
  return cut;
}

std::vector<int64_t> Sizes(const std::vector<int32_t>& part, int k) {
  std::vector<int64_t> sizes(static_cast<size_t>(k), 0);
  for (int32_t p : part) ++sizes[p];
  return sizes;
}

// Two 5-cliques, {0..4} and {5..9}, joined by the edge (4, 5).
WeightedGraph TwoCliques() {
  std::vector<std::pair<int32_t, int32_t>> edges;
  for (int32_t base : {0, 5}) {
    for (int32_t a = 0; a < 5; ++a) {
      for (int32_t b = a + 1; b < 5; ++b) edges.push_back({base + a, base + b});
    }
  }
  edges.push_back({4, 5});
  return Symmetric(10, edges);
}

}  // namespace

TEST_CASE("FmRefine never grows the cut and keeps every part within its cap") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const int32_t n = 50 + static_cast<int32_t>(rng() % 400);
    const int k = 2 + static_cast<int>(rng() % 9);
    std::vector<std::pair<int32_t, int32_t>> edges;
    const int64_t m = n * (1 + static_cast<int64_t>(rng() % 6));
    for (int64_t i = 0; i < m; ++i) {
      const auto a = static_cast<int32_t>(rng() % n);
      const auto b = static_cast<int32_t>(rng() % n);
      if (a != b) edges.push_back({a, b});
    }
    const WeightedGraph g = Symmetric(n, edges);
    std::vector<int32_t> part(static_cast<size_t>(n));
    for (int32_t v = 0; v < n; ++v) part[v] = static_cast<int32_t>(v % k);  // balanced, no locality
    std::vector<int64_t> sizes = Sizes(part, k);
    const int64_t cap = (n + k - 1) / k + 2;
    const int64_t before = CutEntries(g, part);
    const FmResult r = FmRefine(g, k, cap, FmOptions{}, &part, &sizes);
    const int64_t after = CutEntries(g, part);
    CHECK(after <= before);
    CHECK(before - after == 2 * r.gain);  // each removed cut edge leaves both endpoints' rows
    CHECK(sizes == Sizes(part, k));
    for (int64_t s : sizes) CHECK(s <= cap);
    if (edges.size() > static_cast<size_t>(2 * n)) CHECK(r.gain > 0);  // round robin is poor
  }
}

TEST_CASE("FmRefine separates two cliques that start mixed") {
  const WeightedGraph g = TwoCliques();
  // Sizes 5 and 5 under a cap of 6: every improvement needs a second move that undoes the
  // imbalance of the first.
  std::vector<int32_t> part = {0, 0, 1, 1, 1, 0, 0, 0, 1, 1};
  std::vector<int64_t> sizes = Sizes(part, 2);
  const FmResult r = FmRefine(g, 2, 6, FmOptions{}, &part, &sizes);
  CHECK(CutEntries(g, part) == 2);  // only the bridge (4, 5)
  for (int32_t v = 1; v < 5; ++v) CHECK(part[v] == part[0]);
  for (int32_t v = 6; v < 10; ++v) CHECK(part[v] == part[5]);
  CHECK(part[0] != part[5]);
  CHECK(r.moves > 0);
}

TEST_CASE("FmRefine leaves a local minimum where every single move loses") {
  // Part 0: a triangle {0, 1, 2} and a triangle {3, 4, 5}, joined by 0-3, 1-4, 2-5; part 1: a
  // 4-clique {6..9}, with two edges from each of 0, 1, 2. Every single move adds cut edges (0, 1
  // and 2 lose one each), yet moving the first triangle over cuts 3 edges instead of 6.
  std::vector<std::pair<int32_t, int32_t>> edges = {{0, 1}, {1, 2}, {0, 2}, {3, 4}, {4, 5},
                                                    {3, 5}, {0, 3}, {1, 4}, {2, 5}, {0, 6},
                                                    {0, 7}, {1, 7}, {1, 8}, {2, 8}, {2, 9}};
  for (int32_t a = 6; a < 10; ++a) {
    for (int32_t b = a + 1; b < 10; ++b) edges.push_back({a, b});
  }
  const WeightedGraph g = Symmetric(10, edges);
  std::vector<int32_t> part = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
  std::vector<int64_t> sizes = Sizes(part, 2);
  CHECK(CutEntries(g, part) == 2 * 6);
  const FmResult r = FmRefine(g, 2, 7, FmOptions{}, &part, &sizes);
  CHECK(CutEntries(g, part) == 2 * 3);
  CHECK(part == std::vector<int32_t>{1, 1, 1, 0, 0, 0, 1, 1, 1, 1});
  CHECK(r.gain == 3);
}

TEST_CASE("FmRefine undoes a pass that cannot gain") {
  const WeightedGraph g = TwoCliques();
  std::vector<int32_t> part = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1};  // the optimum
  std::vector<int64_t> sizes = Sizes(part, 2);
  const std::vector<int32_t> optimum = part;
  const FmResult r = FmRefine(g, 2, 6, FmOptions{}, &part, &sizes);
  CHECK(part == optimum);
  CHECK(sizes == Sizes(optimum, 2));
  CHECK(r.gain == 0);
  CHECK(r.moves == 0);
  CHECK(r.passes == 1);
}

TEST_CASE("FmRefine leaves vertices above max_degree and does nothing without work") {
  const WeightedGraph g = TwoCliques();
  const std::vector<int32_t> mixed = {0, 0, 1, 1, 1, 0, 0, 0, 1, 1};
  SUBCASE("max_degree") {
    // Every clique vertex has degree 4 (the bridge's ends 5): with max_degree 3 none may move.
    std::vector<int32_t> part = mixed;
    std::vector<int64_t> sizes = Sizes(part, 2);
    FmOptions o;
    o.max_degree = 3;
    const FmResult r = FmRefine(g, 2, 6, o, &part, &sizes);
    CHECK(part == mixed);
    CHECK(r.moves == 0);
    // With 4, the bridge's ends (degree 5) stay where they are and the rest still improves.
    o.max_degree = 4;
    FmRefine(g, 2, 6, o, &part, &sizes);
    CHECK(part[4] == mixed[4]);
    CHECK(part[5] == mixed[5]);
    CHECK(CutEntries(g, part) < CutEntries(g, mixed));
  }
  SUBCASE("no work") {
    std::vector<int32_t> part = mixed;
    std::vector<int64_t> sizes = Sizes(part, 2);
    FmOptions o;
    o.min_work = 1;
    o.work_per_entry = 0;
    const FmResult r = FmRefine(g, 2, 6, o, &part, &sizes);
    CHECK(part == mixed);
    CHECK(r.moves == 0);
  }
}
