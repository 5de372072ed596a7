// OGB link-prediction layouts (convert/ogb.h; docs/convert.md): raw/ as for node tasks, the edge
// split in split/<name>/{train,valid,test}.npz (OGB's .pt files rewritten by
// tools/ogb/link_splits_to_npz.py). The split is imported as given (WriteGivenEdgeSplit): held-out
// pairs leave the graph, repeats and self-loops are dropped and counted, negatives become the
// non-edges, and what the format forbids is dropped or refused with the file named.
#include <doctest/doctest.h>
#include <xxhash.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "skiff/convert/convert.h"
#include "skiff/convert/ogb.h"
#include "skiff/format/dataset.h"
#include "skiff/partition/partition_dataset.h"
#include "tests/unit/test_npy_util.h"
#include "tests/unit/test_text_files.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using Pair = std::pair<int64_t, int64_t>;

namespace {

std::string PairsNpy(const std::vector<Pair>& pairs) {
  std::vector<int64_t> flat;
  for (const auto& [u, v] : pairs) {
    flat.push_back(u);
    flat.push_back(v);
  }
  return testing::NpyBytes("<i8", "(" + std::to_string(pairs.size()) + ", 2)", testing::Raw(flat));
}

std::string IdsNpy(const std::vector<int32_t>& ids) {
  return testing::NpyBytes("<i4", "(" + std::to_string(ids.size()) + ",)", testing::Raw(ids));
}

// An OGB link layout in `dir`: raw/edge.csv with `graph`, 2-column features for `n` nodes, and
// split/time/<name>.npz for each entry of `splits`.
void WriteLayout(const std::string& dir, int64_t n, const std::vector<Pair>& graph,
                 const std::map<std::string, std::map<std::string, std::string>>& splits) {
  std::filesystem::create_directories(dir + "/raw");
  std::filesystem::create_directories(dir + "/split/time");
  std::string edges, features;
  for (const auto& [u, v] : graph) edges += std::to_string(u) + "," + std::to_string(v) + "\n";
  for (int64_t v = 0; v < n; ++v) features += std::to_string(v) + ",1\n";
  testing::WriteText(dir + "/raw/edge.csv", edges);
  testing::WriteText(dir + "/raw/node-feat.csv", features);
  testing::WriteText(dir + "/raw/num-node-list.csv", std::to_string(n) + "\n");
  for (const auto& [name, entries] : splits) {
    testing::WriteNpz(dir + "/split/time/" + name + ".npz", entries, false);
  }
}

Result<convert::ConvertSummary> Convert(const std::string& in, const std::string& out,
                                        bool undirected) {
  convert::ConvertOptions o;
  o.input = in;
  o.output = out;
  o.memory_bytes = 16ull << 20;
  o.direction = undirected ? convert::Direction::kUndirected : convert::Direction::kDirected;
  return convert::ConvertGraph(o);
}

std::vector<Pair> Pairs(const format::Dataset& ds, const char* name) {
  auto flat = ds.LoadEdgePairs(name);
  REQUIRE_MESSAGE(flat.ok(), flat.status().ToString());
  std::vector<Pair> out;
  for (size_t i = 0; i < flat->size(); i += 2) out.push_back({(*flat)[i], (*flat)[i + 1]});
  return out;
}

// A ring of 30 nodes with chords (i, i + 5).
std::vector<Pair> Ring() {
  std::vector<Pair> edges;
  for (int64_t v = 0; v < 30; ++v) {
    edges.push_back({v, (v + 1) % 30});
    edges.push_back({v, (v + 5) % 30});
  }
  return edges;
}

}  // namespace

TEST_CASE("OGB link layout: the split is imported as given, held-out pairs leave the graph") {
  testing::TempDir tmp;
  std::vector<Pair> graph = Ring();
  graph.push_back({3, 20});  // a valid pair the raw graph also holds: it leaves the graph
  std::vector<Pair> train = Ring();
  train.push_back({0, 1});   // repeated
  train.push_back({2, 2});   // a self-loop
  train.push_back({9, 7});   // also a test pair (as (7, 9))
  train.push_back({4, 25});  // no edge of the graph
  const std::vector<Pair> valid = {{3, 20}, {11, 22}};
  const std::vector<Pair> test = {{7, 9}, {12, 27}};
  const std::vector<Pair> valid_neg = {{0, 15}, {22, 11}, {1, 0}};  // a positive, an edge
  const std::vector<Pair> test_neg = {{2, 16}, {0, 15}};            // a repeat across files
  WriteLayout(tmp / "ogbl", 30, graph,
              {{"train", {{"edge", PairsNpy(train)}, {"year", IdsNpy({1})}}},
               {"valid", {{"edge", PairsNpy(valid)}, {"edge_neg", PairsNpy(valid_neg)}}},
               {"test", {{"edge", PairsNpy(test)}, {"edge_neg", PairsNpy(test_neg)}}}});
  auto summary = Convert(tmp / "ogbl", tmp / "ds", /*undirected=*/true);
  REQUIRE_MESSAGE(summary.ok(), summary.status().ToString());
  auto ds = format::Dataset::Open(tmp / "ds");
  REQUIRE(ds.ok());
  const Status verified = (*ds)->VerifyAll();
  REQUIRE_MESSAGE(verified.ok(), verified.ToString());
  const auto& split = *(*ds)->manifest().link_split;
  CHECK(split.train == 60);  // the ring; the repeat, self-loop, test pair and non-edge dropped
  CHECK(split.valid == 2);
  CHECK(split.test == 2);
  CHECK(split.valid_neg == 1);  // (0, 15) alone
  CHECK(split.test_neg == 1);   // (2, 16) alone
  CHECK(split.train_fraction == 0);
  CHECK(Pairs(**ds, format::kLinkValidFile) == valid);
  CHECK(Pairs(**ds, format::kLinkTestFile) == test);
  CHECK(Pairs(**ds, format::kLinkValidNegFile) == std::vector<Pair>{{0, 15}});
  CHECK(Pairs(**ds, format::kLinkTestNegFile) == std::vector<Pair>{{2, 16}});
  // 61 undirected edges stored both ways, less (3, 20); the ring holds no test pair.
  CHECK((*ds)->manifest().num_edges == 120);
  CHECK((*ds)->manifest().source.find("edge split from") != std::string::npos);
}

TEST_CASE("OGB link layout: source_node / target_node, directed, with per-positive candidates") {
  testing::TempDir tmp;
  const std::vector<Pair> graph = Ring();
  std::vector<int32_t> sources, targets;
  for (const auto& [u, v] : graph) {
    sources.push_back(static_cast<int32_t>(u));
    targets.push_back(static_cast<int32_t>(v));
  }
  // Valid: (2, 17), then (2, 17) again (dropped, with its candidate row), then (4, 19).
  const std::string valid_cand =
      testing::NpyBytes("<i8", "(3, 2)", testing::Raw<int64_t>({10, 11, 12, 13, 14, 15}));
  const std::string test_cand = testing::NpyBytes("<i8", "(1, 2)", testing::Raw<int64_t>({7, 8}));
  WriteLayout(tmp / "ogbl", 30, graph,
              {{"train", {{"source_node", IdsNpy(sources)}, {"target_node", IdsNpy(targets)}}},
               {"valid",
                {{"source_node", IdsNpy({2, 2, 4})},
                 {"target_node", IdsNpy({17, 17, 19})},
                 {"target_node_neg", valid_cand}}},
               {"test",
                {{"source_node", IdsNpy({17})},
                 {"target_node", IdsNpy({3})},
                 {"target_node_neg", test_cand}}}});
  auto summary = Convert(tmp / "ogbl", tmp / "ds", /*undirected=*/false);
  REQUIRE_MESSAGE(summary.ok(), summary.status().ToString());
  auto ds = format::Dataset::Open(tmp / "ds");
  REQUIRE(ds.ok());
  const Status verified = (*ds)->VerifyAll();
  REQUIRE_MESSAGE(verified.ok(), verified.ToString());
  const auto& split = *(*ds)->manifest().link_split;
  CHECK(split.train == 60);
  CHECK(split.candidates == 2);
  CHECK((*ds)->manifest().version == format::kFormatVersion);
  CHECK(Pairs(**ds, format::kLinkValidFile) == std::vector<Pair>{{2, 17}, {4, 19}});
  CHECK(Pairs(**ds, format::kLinkTestFile) == std::vector<Pair>{{17, 3}});
  CHECK(*(*ds)->LoadCandidates(format::kLinkValidCandFile) == std::vector<int64_t>{10, 11, 14, 15});
  CHECK(*(*ds)->LoadCandidates(format::kLinkTestCandFile) == std::vector<int64_t>{7, 8});
  CHECK(split.valid_neg == 0);

  // Partitioning relabels the candidates with the pairs.
  partition::PartitionOptions o;
  o.dataset_dir = tmp / "ds";
  o.output_dir = tmp / "parts";
  o.partitioner.k = 3;
  o.memory_bytes = 64ull << 20;
  auto report = partition::PartitionDataset(o);
  REQUIRE_MESSAGE(report.ok(), report.status().ToString());
  auto parts = format::Dataset::Open(tmp / "parts");
  REQUIRE(parts.ok());
  REQUIRE((*parts)->VerifyAll().ok());
  std::vector<int64_t> old(30);
  REQUIRE((*(*parts)->File(format::kRelabelOldIdsFile))->ReadAt(0, 30 * 8, old.data()).ok());
  auto relabelled = (*parts)->LoadCandidates(format::kLinkValidCandFile);
  REQUIRE(relabelled.ok());
  std::vector<int64_t> back;
  for (int64_t v : *relabelled) back.push_back(old[static_cast<size_t>(v)]);
  CHECK(back == std::vector<int64_t>{10, 11, 14, 15});

  // Undirected: the candidates are not imported (the pairs become (min, max)).
  auto undirected = Convert(tmp / "ogbl", tmp / "und", /*undirected=*/true);
  REQUIRE_MESSAGE(undirected.ok(), undirected.status().ToString());
  auto und = format::Dataset::Open(tmp / "und");
  REQUIRE(und.ok());
  CHECK((*und)->manifest().link_split->candidates == 0);
}

TEST_CASE("format: ranking candidates need version 4 and a directed dataset") {
  testing::TempDir tmp;
  const std::vector<Pair> graph = Ring();
  const auto ids = [](std::initializer_list<int32_t> v) { return IdsNpy(std::vector<int32_t>(v)); };
  WriteLayout(
      tmp / "ogbl", 30, graph,
      {{"train", {{"edge", PairsNpy(graph)}}},
       {"valid",
        {{"source_node", ids({2})},
         {"target_node", ids({17})},
         {"target_node_neg", testing::NpyBytes("<i8", "(1, 1)", testing::Raw<int64_t>({9}))}}},
       {"test",
        {{"source_node", ids({3})},
         {"target_node", ids({18})},
         {"target_node_neg", testing::NpyBytes("<i8", "(1, 1)", testing::Raw<int64_t>({8}))}}}});
  REQUIRE(Convert(tmp / "ogbl", tmp / "ds", false).ok());
  // Rewrites the manifest with `edit` applied, and its checksum (docs/FORMAT.md: XXH3-64 of the
  // compact JSON without the field).
  const auto rewrite = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j;
    {
      std::ifstream in(tmp / "ds/manifest.json");
      j = nlohmann::json::parse(in);
    }
    edit(j);
    j.erase("manifest_xxh3");
    const std::string body = j.dump();
    char seal[17];
    std::snprintf(seal, sizeof(seal), "%016llx",
                  static_cast<unsigned long long>(XXH3_64bits(body.data(), body.size())));
    j["manifest_xxh3"] = seal;
    testing::WriteText(tmp / "ds/manifest.json", j.dump());
  };
  rewrite([](nlohmann::json& j) { j["undirected"] = true; });
  auto undirected = format::Dataset::Open(tmp / "ds");
  CHECK(undirected.status().code() == StatusCode::kCorruption);
  CHECK(undirected.status().message().find("candidates on an undirected dataset") !=
        std::string::npos);
  rewrite([](nlohmann::json& j) {
    j["undirected"] = false;
    j["version"] = 3;
  });
  auto old = format::Dataset::Open(tmp / "ds");
  CHECK(old.status().code() == StatusCode::kCorruption);
  CHECK(old.status().message().find("ranking candidates came with version 4") != std::string::npos);
}

TEST_CASE("OGB link layout: refusals name the file and what to do") {
  testing::TempDir tmp;
  const std::vector<Pair> graph = Ring();
  // Torch pickles only: the conversion script is named.
  std::filesystem::create_directories(tmp / "pt/split/time");
  WriteLayout(tmp / "pt", 30, graph, {});
  for (const char* name : {"train", "valid", "test"}) {
    testing::WriteText(tmp / ("pt/split/time/" + std::string(name) + ".pt"), "not read");
  }
  auto pt = Convert(tmp / "pt", tmp / "pt-ds", true);
  CHECK(pt.status().code() == StatusCode::kInvalidArgument);
  CHECK(pt.status().message().find("tools/ogb/link_splits_to_npz.py") != std::string::npos);

  const auto edges = [&](const std::vector<Pair>& p) {
    return std::map<std::string, std::string>{{"edge", PairsNpy(p)}};
  };
  // A pair in both valid and test.
  WriteLayout(tmp / "both", 30, graph,
              {{"train", edges(graph)}, {"valid", edges({{3, 20}})}, {"test", edges({{20, 3}})}});
  auto both = Convert(tmp / "both", tmp / "both-ds", true);
  CHECK(both.status().code() == StatusCode::kInvalidArgument);
  CHECK(both.status().message().find("(3, 20) is both a valid and a test edge") !=
        std::string::npos);
  // A node out of range, and an array of the wrong shape: the file and key named.
  WriteLayout(tmp / "range", 30, graph,
              {{"train", edges(graph)}, {"valid", edges({{3, 31}})}, {"test", edges({{1, 3}})}});
  auto range = Convert(tmp / "range", tmp / "range-ds", true);
  CHECK(range.status().code() == StatusCode::kCorruption);
  CHECK(range.status().message().find("valid.npz:edge") != std::string::npos);
  CHECK(range.status().message().find("node 31, outside [0, 30)") != std::string::npos);
  WriteLayout(
      tmp / "shape", 30, graph,
      {{"train", edges(graph)},
       {"valid", {{"edge", testing::NpyBytes("<i8", "(1, 3)", testing::Raw<int64_t>({1, 2, 3}))}}},
       {"test", edges({{1, 3}})}});
  auto shape = Convert(tmp / "shape", tmp / "shape-ds", true);
  CHECK(shape.status().code() == StatusCode::kCorruption);
  CHECK(shape.status().message().find("shape [n, 2]") != std::string::npos);
  // Neither "edge" nor source/target: the keys found are listed.
  WriteLayout(tmp / "keys", 30, graph,
              {{"train", {{"pairs", PairsNpy(graph)}}}, {"valid", edges({})}, {"test", edges({})}});
  auto keys = Convert(tmp / "keys", tmp / "keys-ds", true);
  CHECK(keys.status().code() == StatusCode::kInvalidArgument);
  CHECK(keys.status().message().find("found: pairs") != std::string::npos);
  // --split-edges would replace the given split.
  convert::ConvertOptions o;
  o.input = tmp / "both";
  o.output = tmp / "resplit";
  o.memory_bytes = 16ull << 20;
  o.edge_split = convert::EdgeSplitSpec{};
  auto resplit = convert::ConvertGraph(o);
  CHECK(resplit.status().code() == StatusCode::kInvalidArgument);
  CHECK(resplit.status().message().find("keeps as given") != std::string::npos);
  for (const char* out : {"pt-ds", "both-ds", "range-ds", "shape-ds", "keys-ds", "resplit"}) {
    CHECK(!std::filesystem::exists(tmp / out));  // nothing half-written
  }
}
