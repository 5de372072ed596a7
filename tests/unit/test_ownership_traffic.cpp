// Ownership traffic (train/ownership_traffic.h): which rank owns which node (partition ranges
// balanced by training nodes, or random), and the counts of sampled neighbours and input rows a
// rank would fetch from another rank, checked on graphs small enough to count by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <vector>

#include "skiff/random.h"
#include "skiff/sampler/graph_source.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/train/batch_plan.h"
#include "skiff/train/ownership_traffic.h"

namespace skiff::train {
namespace {

std::unique_ptr<sampler::InMemoryGraph> Graph(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<int64_t> offsets{0}, neighbors;
  for (const auto& row : rows) {
    neighbors.insert(neighbors.end(), row.begin(), row.end());
    offsets.push_back(static_cast<int64_t>(neighbors.size()));
  }
  auto graph = sampler::InMemoryGraph::FromCsr(std::move(offsets), std::move(neighbors));
  REQUIRE(graph.ok());
  return std::move(graph.value());
}

// 0 -> {1, 2}, 1 -> {0}, 2 -> {3}, 3 -> {2}; rank 0 owns 0 and 1, rank 1 owns 2 and 3.
struct Tiny {
  std::unique_ptr<sampler::InMemoryGraph> graph = Graph({{1, 2}, {0}, {3}, {2}});
  std::vector<int64_t> train{0, 2};
  std::vector<int32_t> owners{0, 0, 1, 1};
};

TEST_CASE("MeasureOwnershipTraffic: owned seeds on a hand-counted graph") {
  Tiny g;
  TrafficOptions o;
  o.fanouts = {-1, -1};  // every neighbour: the picks are the whole rows
  o.batch_size = 2;
  o.rule = SeedRule::kOwned;
  auto t = MeasureOwnershipTraffic(*g.graph, g.train, g.owners, 2, o);
  REQUIRE(t.ok());
  REQUIRE(t->size() == 2);
  // Rank 0 trains seed 0: last block 0 -> {1, 2} (2 edges); first block expands 0, 1, 2 (2 + 1 + 1
  // edges), of which 2's list (1 edge) is rank 1's; inputs 0, 1, 2, 3, of which 2 and 3 are rank
  // 1's.
  const RankTraffic& r0 = (*t)[0];
  CHECK(r0.seeds == 1);
  CHECK(r0.batches == 1);
  CHECK(r0.neighbors == 6);
  CHECK(r0.remote_neighbors == 1);
  CHECK(r0.rows_expanded == 3);
  CHECK(r0.remote_rows == 1);
  CHECK(r0.picks == 4);
  CHECK(r0.remote_picks == 1);
  CHECK(r0.input_rows == 4);
  CHECK(r0.remote_input_rows == 2);
  CHECK(r0.remote_adjacency_bytes() == 16);  // one neighbour ID and one row length
  CHECK(r0.remote_feature_bytes(512) == 1024);
  // Rank 1 trains seed 2: 2 -> {3}, then 2 and 3 expanded; everything its own.
  const RankTraffic& r1 = (*t)[1];
  CHECK(r1.seeds == 1);
  CHECK(r1.neighbors == 3);
  CHECK(r1.remote_neighbors == 0);
  CHECK(r1.rows_expanded == 2);
  CHECK(r1.input_rows == 2);
  CHECK(r1.remote_input_rows == 0);
  CHECK(r1.remote_adjacency_bytes() == 0);
}

TEST_CASE("MeasureOwnershipTraffic: round robin gives whole batches to ranks") {
  Tiny g;
  TrafficOptions o;
  o.fanouts = {-1, -1};
  o.batch_size = 2;  // one batch, {0, 2}: rank 0 takes it, rank 1 has none
  o.rule = SeedRule::kRoundRobin;
  auto t = MeasureOwnershipTraffic(*g.graph, g.train, g.owners, 2, o);
  REQUIRE(t.ok());
  const RankTraffic& r0 = (*t)[0];
  CHECK(r0.seeds == 2);
  // Last block: 0 -> {1, 2}, 2 -> {3} (2's remote); first block: 0, 2, 1, 3 expanded (2 + 1 + 1 +
  // 1 edges; 2 and 3 remote).
  CHECK(r0.neighbors == 8);
  CHECK(r0.remote_neighbors == 3);
  CHECK(r0.rows_expanded == 4);
  CHECK(r0.remote_rows == 2);
  CHECK(r0.picks == 5);
  CHECK(r0.remote_picks == 2);
  CHECK(r0.input_rows == 4);
  CHECK(r0.remote_input_rows == 2);
  CHECK((*t)[1].batches == 0);
  CHECK((*t)[1].neighbors == 0);
}

// A random graph: n nodes, each with `degree` random out-neighbours.
std::unique_ptr<sampler::InMemoryGraph> RandomGraph(int64_t n, int degree, uint64_t seed) {
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(n));
  for (int64_t node = 0; node < n; ++node) {
    for (int j = 0; j < degree; ++j) {
      rows[node].push_back(static_cast<int64_t>(HashKey(seed, node, j) % static_cast<uint64_t>(n)));
    }
    std::sort(rows[node].begin(), rows[node].end());
    rows[node].erase(std::unique(rows[node].begin(), rows[node].end()), rows[node].end());
  }
  return Graph(rows);
}

TEST_CASE("MeasureOwnershipTraffic: one rank fetches nothing, and every seed is trained once") {
  auto graph = RandomGraph(500, 8, 3);
  std::vector<int64_t> train;
  for (int64_t node = 0; node < 500; node += 3) train.push_back(node);
  for (SeedRule rule : {SeedRule::kOwned, SeedRule::kRoundRobin}) {
    TrafficOptions o;
    o.batch_size = 16;
    o.rule = rule;
    o.threads = 3;
    auto one = MeasureOwnershipTraffic(*graph, train, RandomOwners(500, 1, 9), 1, o);
    REQUIRE(one.ok());
    CHECK((*one)[0].seeds == static_cast<int64_t>(train.size()));
    CHECK((*one)[0].neighbors > 0);
    CHECK((*one)[0].remote_neighbors == 0);
    CHECK((*one)[0].remote_rows == 0);
    CHECK((*one)[0].remote_input_rows == 0);
    for (int ranks : {2, 4, 7}) {
      auto t = MeasureOwnershipTraffic(*graph, train, RandomOwners(500, ranks, 9), ranks, o);
      REQUIRE(t.ok());
      int64_t seeds = 0;
      for (const RankTraffic& r : *t) seeds += r.seeds;
      CHECK(seeds == static_cast<int64_t>(train.size()));
    }
  }
}

TEST_CASE("A rank's part of a plan batch draws the neighbours the whole batch draws") {
  // What the owned-seeds rule relies on: with the batch's number (its rng seed) kept, a node's
  // sampled neighbours do not depend on the other seeds of its batch.
  auto graph = RandomGraph(300, 25, 4);
  std::vector<int64_t> nodes(300);
  std::iota(nodes.begin(), nodes.end(), 0);
  const auto plan = PlanBatches(nodes, 64, true, 0, 0);
  const sampler::NeighborSampler sampler(*graph, {15, 10});
  const uint64_t rng_seed = sampler::BatchSeed(0, kTrainStream, 0, 1);
  sampler::MiniBatch whole, part;
  REQUIRE(sampler.Sample(plan[1], rng_seed, &whole).ok());
  std::vector<int64_t> mine;
  for (int64_t seed : plan[1]) {
    if (seed % 3 == 0) mine.push_back(seed);
  }
  REQUIRE(sampler.Sample(mine, rng_seed, &part).ok());
  // Each node's row of the input block, as global IDs.
  const auto rows = [](const sampler::MiniBatch& mb) {
    std::map<int64_t, std::vector<int64_t>> out;
    const sampler::Block& block = mb.blocks.front();
    for (int64_t dst = 0; dst < block.num_dst; ++dst) {
      auto& row = out[mb.input_nodes[dst]];
      for (int64_t e = block.indptr[dst]; e < block.indptr[dst + 1]; ++e) {
        row.push_back(mb.input_nodes[block.indices[e]]);
      }
    }
    return out;
  };
  const auto whole_rows = rows(whole), part_rows = rows(part);
  REQUIRE(part_rows.size() > mine.size());
  for (const auto& [node, row] : part_rows) {
    REQUIRE(whole_rows.count(node) == 1);
    CHECK(row == whole_rows.at(node));
  }
}

TEST_CASE("MeasureOwnershipTraffic: counts do not depend on the thread count") {
  auto graph = RandomGraph(400, 6, 5);
  std::vector<int64_t> train(400);
  std::iota(train.begin(), train.end(), 0);
  const std::vector<int32_t> owners = RandomOwners(400, 3, 2);
  TrafficOptions o;
  o.batch_size = 32;
  auto one = MeasureOwnershipTraffic(*graph, train, owners, 3, o);
  o.threads = 4;
  auto four = MeasureOwnershipTraffic(*graph, train, owners, 3, o);
  REQUIRE(one.ok());
  REQUIRE(four.ok());
  for (int rank = 0; rank < 3; ++rank) {
    CHECK((*one)[rank].remote_neighbors == (*four)[rank].remote_neighbors);
    CHECK((*one)[rank].remote_input_rows == (*four)[rank].remote_input_rows);
    CHECK((*one)[rank].picks == (*four)[rank].picks);
  }
}

TEST_CASE("Partition ownership keeps a two-community graph local; random ownership does not") {
  // Two communities of 200 nodes (IDs 0..199 and 200..399), 10 neighbours each inside, and one
  // edge across per 20 nodes.
  const int64_t half = 200;
  std::vector<std::vector<int64_t>> rows(2 * half);
  for (int64_t node = 0; node < 2 * half; ++node) {
    const int64_t base = node < half ? 0 : half;
    for (int j = 0; j < 10; ++j) {
      rows[node].push_back(base + static_cast<int64_t>(HashKey(11, node, j) % half));
    }
    if (node % 20 == 0) rows[node].push_back((node + half) % (2 * half));
    std::sort(rows[node].begin(), rows[node].end());
    rows[node].erase(std::unique(rows[node].begin(), rows[node].end()), rows[node].end());
  }
  auto graph = Graph(rows);
  std::vector<int64_t> train;
  for (int64_t node = 0; node < 2 * half; node += 2) train.push_back(node);
  const std::vector<int64_t> boundaries{0, half, 2 * half};
  std::vector<int> first;
  auto grem = PartitionOwners(boundaries, train, 2, &first);
  REQUIRE(grem.ok());
  CHECK(first == std::vector<int>{0, 1, 2});
  TrafficOptions o;
  o.batch_size = 32;
  const auto fraction = [&](const std::vector<int32_t>& owners, bool rows_not_edges) {
    auto t = MeasureOwnershipTraffic(*graph, train, owners, 2, o);
    REQUIRE(t.ok());
    RankTraffic total;
    for (const RankTraffic& r : *t) total.Add(r);
    return rows_not_edges ? static_cast<double>(total.remote_input_rows) / total.input_rows
                          : static_cast<double>(total.remote_neighbors) / total.neighbors;
  };
  const std::vector<int32_t> random = RandomOwners(2 * half, 2, 1);
  CHECK(fraction(*grem, false) < 0.05);
  CHECK(fraction(*grem, true) < 0.1);
  CHECK(fraction(random, false) > 0.35);
  CHECK(fraction(random, true) > 0.35);
}

TEST_CASE("PartitionOwners balances training nodes with contiguous partition ranges") {
  // Four partitions of 10 nodes; training nodes only in partitions 0 and 3.
  const std::vector<int64_t> boundaries{0, 10, 20, 30, 40};
  std::vector<int64_t> train;
  for (int64_t node = 0; node < 10; ++node) train.push_back(node);
  for (int64_t node = 30; node < 40; ++node) train.push_back(node);
  std::vector<int> first;
  auto two = PartitionOwners(boundaries, train, 2, &first);
  REQUIRE(two.ok());
  CHECK(first == std::vector<int>{0, 1, 4});  // 10 training nodes each side
  CHECK((*two)[9] == 0);
  CHECK((*two)[10] == 1);
  CHECK((*two)[39] == 1);
  auto four = PartitionOwners(boundaries, train, 4, &first);
  REQUIRE(four.ok());
  CHECK(first == std::vector<int>{0, 1, 2, 3, 4});  // every rank at least one partition
  CHECK((*four)[25] == 2);
  auto one = PartitionOwners(boundaries, train, 1, &first);
  REQUIRE(one.ok());
  CHECK(first == std::vector<int>{0, 4});
  CHECK(!PartitionOwners(boundaries, train, 5, nullptr).ok());  // more ranks than partitions
  CHECK(!PartitionOwners(boundaries, std::vector<int64_t>{41}, 2, nullptr).ok());
}

TEST_CASE("RandomOwners is deterministic by seed and spreads nodes over every rank") {
  const std::vector<int32_t> a = RandomOwners(4000, 4, 7), b = RandomOwners(4000, 4, 7);
  CHECK(a == b);
  CHECK(a != RandomOwners(4000, 4, 8));
  std::vector<int> counts(4, 0);
  for (int32_t owner : a) {
    REQUIRE(owner >= 0);
    REQUIRE(owner < 4);
    ++counts[owner];
  }
  for (int count : counts) CHECK(count > 800);
}

TEST_CASE("MeasureOwnershipTraffic refuses ownership that does not fit the graph") {
  Tiny g;
  TrafficOptions o;
  CHECK(!MeasureOwnershipTraffic(*g.graph, g.train, std::vector<int32_t>{0, 0, 1}, 2, o).ok());
  CHECK(!MeasureOwnershipTraffic(*g.graph, g.train, std::vector<int32_t>{0, 0, 1, 2}, 2, o).ok());
  CHECK(!MeasureOwnershipTraffic(*g.graph, std::vector<int64_t>{4}, g.owners, 2, o).ok());
}

}  // namespace
}  // namespace skiff::train
