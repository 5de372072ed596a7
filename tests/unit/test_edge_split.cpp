// Edge splits for link prediction (convert::WriteEdgeSplit, the manifest's link_split, and what
// Dataset::VerifyConsistency checks of it): counts near the fractions, determinism, no leak of
// held-out edges into the graph, train pairs kept in it, non-edges, undirected symmetry, directed
// units, tampered files caught, older datasets still open, partitioning and convert keeping the
// split, and the refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "skiff/convert/convert.h"
#include "skiff/convert/edge_split.h"
#include "skiff/convert/largest_component.h"
#include "skiff/format/dataset.h"
#include "skiff/partition/partition_dataset.h"
#include "skiff/random.h"
#include "skiff/train/link_trainer.h"
#include "tests/unit/test_dataset_util.h"
#include "tests/unit/test_text_files.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using convert::EdgeSplitSpec;
using format::Dataset;
using format::DatasetWriter;
using Pair = std::pair<int64_t, int64_t>;

namespace {

// Writes a dataset over `n` nodes with the given edges (stored both ways when undirected; rows
// sorted), 2-dim features, labels v % 3 and small node splits.
void WriteGraphDataset(const std::string& dir, int64_t n, const std::vector<Pair>& edges,
                       bool undirected) {
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(n));
  for (const auto& [u, v] : edges) {
    rows[static_cast<size_t>(u)].push_back(v);
    if (undirected && u != v) rows[static_cast<size_t>(v)].push_back(u);
  }
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> neighbors;
  for (auto& row : rows) {
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    neighbors.insert(neighbors.end(), row.begin(), row.end());
    offsets.push_back(static_cast<int64_t>(neighbors.size()));
  }
  auto w = DatasetWriter::Create(dir);
  REQUIRE(w.ok());
  auto& m = (*w)->manifest();
  m.name = "graph";
  m.num_nodes = n;
  m.num_edges = static_cast<int64_t>(neighbors.size());
  m.undirected = undirected;
  m.feature_dim = 2;
  m.num_classes = 3;
  std::vector<float> features(static_cast<size_t>(n) * 2);
  for (size_t i = 0; i < features.size(); ++i) features[i] = static_cast<float>(i);
  std::vector<int32_t> labels(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) labels[static_cast<size_t>(v)] = static_cast<int32_t>(v % 3);
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

// A random graph: `count` distinct edges u < v (undirected) or u != v (directed) plus three
// self-loops.
std::vector<Pair> RandomEdges(int64_t n, int64_t count, bool undirected, uint64_t seed) {
  Rng rng(seed);
  std::set<Pair> seen;
  std::vector<Pair> edges;
  while (static_cast<int64_t>(edges.size()) < count) {
    auto u = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(n)));
    auto v = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(n)));
    if (u == v) continue;
    if (undirected && u > v) std::swap(u, v);
    if (seen.insert({u, v}).second) edges.push_back({u, v});
  }
  for (const int64_t v : {5, 17, 42}) edges.push_back({v, v});
  return edges;
}

std::unique_ptr<Dataset> Open(const std::string& dir) {
  auto ds = Dataset::Open(dir);
  REQUIRE_MESSAGE(ds.ok(), ds.status().ToString());
  return std::move(*ds);
}

Status Split(const std::string& in, const std::string& out, const EdgeSplitSpec& spec) {
  SKIFF_ASSIGN_OR_RETURN(auto ds, Dataset::Open(in));
  SKIFF_ASSIGN_OR_RETURN(auto w, DatasetWriter::Create(out));
  SKIFF_RETURN_IF_ERROR(convert::WriteEdgeSplit(*ds, *w, spec).status());
  return w->Commit();
}

// Partitions `in` into `out` with GREM, k = 4.
void PartitionInto(const std::string& in, const std::string& out) {
  partition::PartitionOptions o;
  o.dataset_dir = in;
  o.output_dir = out;
  o.partitioner.k = 4;
  o.memory_bytes = 256ull << 20;
  auto report = partition::PartitionDataset(o);
  REQUIRE_MESSAGE(report.ok(), report.status().ToString());
}

// The stored edges of a dataset's graph.
std::set<Pair> GraphEdges(const Dataset& ds) {
  auto offsets = ds.LoadOffsets();
  auto neighbors = ds.LoadNeighbors();
  REQUIRE(offsets.ok());
  REQUIRE(neighbors.ok());
  std::set<Pair> edges;
  for (size_t u = 0; u + 1 < offsets->size(); ++u) {
    for (int64_t e = (*offsets)[u]; e < (*offsets)[u + 1]; ++e) {
      edges.insert({static_cast<int64_t>(u), (*neighbors)[static_cast<size_t>(e)]});
    }
  }
  return edges;
}

std::vector<Pair> Pairs(const Dataset& ds, const char* name) {
  auto flat = ds.LoadEdgePairs(name);
  REQUIRE_MESSAGE(flat.ok(), flat.status().ToString());
  std::vector<Pair> pairs;
  for (size_t i = 0; i < flat->size(); i += 2) pairs.push_back({(*flat)[i], (*flat)[i + 1]});
  return pairs;
}

// Writes a copy of the dataset at `from` into `to`, with file `name` holding `pairs` instead.
void WriteTampered(const std::string& from, const std::string& to, const std::string& name,
                   const std::vector<Pair>& pairs) {
  auto ds = Open(from);
  auto w = DatasetWriter::Create(to);
  REQUIRE(w.ok());
  (*w)->manifest() = ds->manifest();
  (*w)->manifest().files.clear();
  for (const auto& [file, info] : ds->manifest().files) {
    std::vector<char> bytes(info.data_bytes);
    if (file == name) {
      bytes.assign(reinterpret_cast<const char*>(pairs.data()),
                   reinterpret_cast<const char*>(pairs.data() + pairs.size()));
    } else {
      REQUIRE((*ds->File(file))->ReadAt(0, bytes.size(), bytes.data()).ok());
    }
    REQUIRE((*w)->WriteFile(file, bytes.data(), bytes.size()).ok());
  }
  REQUIRE((*w)->Commit().ok());
}

std::string VerifyMessage(const std::string& dir) {
  auto ds = Dataset::Open(dir);
  if (!ds.ok()) return ds.status().ToString();
  const Status st = (*ds)->VerifyConsistency();
  return st.ok() ? "" : st.ToString();
}

}  // namespace

TEST_CASE("edge split: undirected graph, counts, no leak, train pairs kept, non-edges") {
  testing::TempDir tmp;
  const int64_t n = 1000, m = 4000;
  const auto edges = RandomEdges(n, m, true, 3);
  WriteGraphDataset(tmp / "in", n, edges, true);
  EdgeSplitSpec spec{0.8, 0.1, 0.1, 7};
  REQUIRE(Split(tmp / "in", tmp / "out", spec).ok());
  auto in = Open(tmp / "in");
  auto out = Open(tmp / "out");
  const Status verified = out->VerifyAll();
  REQUIRE_MESSAGE(verified.ok(), verified.ToString());  // includes undirected symmetry

  const auto& info = *out->manifest().link_split;
  CHECK(out->manifest().version == format::kFormatVersion);
  CHECK(info.seed == 7);
  CHECK(info.valid_fraction == 0.1);
  // Every non-loop edge is one unit; the counts are binomial (sd ~19 for the valid count).
  CHECK(info.train + info.valid + info.test == m);
  CHECK(std::abs(info.valid - 400) < 100);
  CHECK(std::abs(info.test - 400) < 100);
  CHECK(info.valid_neg == info.valid);
  CHECK(info.test_neg == info.test);

  const auto original = GraphEdges(*in);
  const auto graph = GraphEdges(*out);
  CHECK(out->manifest().num_edges == in->manifest().num_edges - 2 * (info.valid + info.test));
  std::set<Pair> seen;
  for (const char* name : {format::kLinkTrainFile, format::kLinkValidFile, format::kLinkTestFile}) {
    const bool held = name != std::string(format::kLinkTrainFile);
    for (const auto& [u, v] : Pairs(*out, name)) {
      CHECK(u < v);  // stored once, as (min, max)
      CHECK(original.count({u, v}));
      CHECK(seen.insert({u, v}).second);  // in one file only
      CHECK(graph.count({u, v}) == (held ? 0 : 1));
      CHECK(graph.count({v, u}) == (held ? 0 : 1));
    }
  }
  for (const int64_t v : {5, 17, 42}) CHECK(graph.count({v, v}));  // self-loops stay
  std::set<Pair> non_edges;
  for (const char* name : {format::kLinkValidNegFile, format::kLinkTestNegFile}) {
    for (const auto& [u, v] : Pairs(*out, name)) {
      CHECK(u != v);
      CHECK(!original.count({u, v}));
      CHECK(!original.count({v, u}));
      CHECK(non_edges.insert({std::min(u, v), std::max(u, v)}).second);
    }
  }
  // Everything else is copied.
  CHECK(*out->LoadFeatures() == *in->LoadFeatures());
  CHECK(*out->LoadLabels() == *in->LoadLabels());
  CHECK(*out->LoadSplit(format::kTrainFile) == *in->LoadSplit(format::kTrainFile));
}

TEST_CASE("edge split: the seed decides, and decides alone") {
  testing::TempDir tmp;
  WriteGraphDataset(tmp / "in", 500, RandomEdges(500, 2000, true, 4), true);
  REQUIRE(Split(tmp / "in", tmp / "a", {0.85, 0.05, 0.1, 1}).ok());
  REQUIRE(Split(tmp / "in", tmp / "b", {0.85, 0.05, 0.1, 1}).ok());
  REQUIRE(Split(tmp / "in", tmp / "c", {0.85, 0.05, 0.1, 2}).ok());
  auto a = Open(tmp / "a");
  auto b = Open(tmp / "b");
  auto c = Open(tmp / "c");
  for (const char* name : {format::kLinkTrainFile, format::kLinkValidFile, format::kLinkTestFile,
                           format::kLinkValidNegFile, format::kLinkTestNegFile}) {
    CHECK(Pairs(*a, name) == Pairs(*b, name));
  }
  CHECK(*a->LoadNeighbors() == *b->LoadNeighbors());
  CHECK(Pairs(*a, format::kLinkValidFile) != Pairs(*c, format::kLinkValidFile));
  CHECK(Pairs(*a, format::kLinkValidNegFile) != Pairs(*c, format::kLinkValidNegFile));
}

TEST_CASE("edge split: directed units are stored edges, in their direction") {
  testing::TempDir tmp;
  const auto edges = RandomEdges(800, 3000, false, 5);
  WriteGraphDataset(tmp / "in", 800, edges, false);
  REQUIRE(Split(tmp / "in", tmp / "out", {0.7, 0.15, 0.15, 9}).ok());
  auto in = Open(tmp / "in");
  auto out = Open(tmp / "out");
  const Status verified = out->VerifyAll();
  REQUIRE_MESSAGE(verified.ok(), verified.ToString());
  const auto& info = *out->manifest().link_split;
  CHECK(info.train + info.valid + info.test == 3000);
  CHECK(out->manifest().num_edges == in->manifest().num_edges - info.valid - info.test);
  const auto original = GraphEdges(*in);
  const auto graph = GraphEdges(*out);
  for (const auto& p : Pairs(*out, format::kLinkValidFile)) {
    CHECK(original.count(p));
    CHECK(!graph.count(p));
  }
  for (const auto& p : Pairs(*out, format::kLinkTrainFile)) CHECK(graph.count(p));
  for (const auto& p : Pairs(*out, format::kLinkTestNegFile)) CHECK(!original.count(p));
}

TEST_CASE("edge split: drawn ranking candidates, K per held-out pair, through partitioning") {
  testing::TempDir tmp;
  constexpr int64_t kN = 800, kK = 20;
  WriteGraphDataset(tmp / "in", kN, RandomEdges(kN, 3000, false, 5), false);
  EdgeSplitSpec spec{0.7, 0.15, 0.15, 9};
  spec.candidates = kK;
  REQUIRE(Split(tmp / "in", tmp / "out", spec).ok());
  REQUIRE(Split(tmp / "in", tmp / "again", spec).ok());
  spec.seed = 10;
  REQUIRE(Split(tmp / "in", tmp / "other", spec).ok());
  auto out = Open(tmp / "out");
  const Status verified = out->VerifyAll();
  REQUIRE_MESSAGE(verified.ok(), verified.ToString());
  const auto& info = *out->manifest().link_split;
  CHECK(info.candidates == kK);
  auto valid = out->LoadCandidates(format::kLinkValidCandFile);
  auto test = out->LoadCandidates(format::kLinkTestCandFile);
  REQUIRE((valid.ok() && test.ok()));
  CHECK(static_cast<int64_t>(valid->size()) == info.valid * kK);
  CHECK(static_cast<int64_t>(test->size()) == info.test * kK);
  double sum = 0;
  for (const int64_t c : *valid) {
    CHECK((c >= 0 && c < kN));
    sum += static_cast<double>(c);
  }
  // Uniform over [0, N): the mean of ~9000 draws lies within 10 of (N - 1) / 2 (sd ~2.4).
  CHECK(std::abs(sum / static_cast<double>(valid->size()) - (kN - 1) / 2.0) < 10);
  CHECK(*valid != *test);
  CHECK(*Open(tmp / "again")->LoadCandidates(format::kLinkValidCandFile) == *valid);
  // Loaded for evaluation of the first 3 held-out pairs: only their rows, the training pairs whole.
  train::LinkData scored;
  REQUIRE(train::LoadEdgeSplit(*out, &scored, 3).ok());
  CHECK(static_cast<int64_t>(scored.train.size()) == 2 * info.train);
  CHECK(scored.valid.size() == 6);
  CHECK(scored.test_neg.size() == 6);
  REQUIRE(scored.valid_cand.size() == 3 * kK);
  CHECK(std::equal(scored.valid_cand.begin(), scored.valid_cand.end(), valid->begin()));
  CHECK(scored.test_cand.size() == 3 * kK);
  CHECK(*Open(tmp / "other")->LoadCandidates(format::kLinkValidCandFile) != *valid);

  // Partitioning relabels each row with its pair: mapped back, the same rows in the same order.
  PartitionInto(tmp / "out", tmp / "parts");
  auto parts = Open(tmp / "parts");
  REQUIRE(parts->VerifyAll().ok());
  std::vector<int64_t> old(static_cast<size_t>(kN));
  REQUIRE((*parts->File(format::kRelabelOldIdsFile))->ReadAt(0, kN * 8, old.data()).ok());
  auto relabelled = parts->LoadCandidates(format::kLinkValidCandFile);
  REQUIRE(relabelled.ok());
  REQUIRE(relabelled->size() == valid->size());
  const auto before = Pairs(*out, format::kLinkValidFile);
  const auto after = Pairs(*parts, format::kLinkValidFile);
  for (size_t i = 0; i < after.size(); ++i) {
    const Pair mapped{old[static_cast<size_t>(after[i].first)],
                      old[static_cast<size_t>(after[i].second)]};
    const auto at = std::find(before.begin(), before.end(), mapped);
    REQUIRE(at != before.end());
    const auto j = static_cast<size_t>(at - before.begin());
    for (size_t c = 0; c < static_cast<size_t>(kK); ++c) {
      CHECK(old[static_cast<size_t>((*relabelled)[i * kK + c])] == (*valid)[j * kK + c]);
    }
  }

  // An undirected dataset stores (min, max), losing the endpoint the candidates replace.
  WriteGraphDataset(tmp / "undirected", 200, RandomEdges(200, 600, true, 9), true);
  EdgeSplitSpec undirected{0.8, 0.1, 0.1, 1};
  undirected.candidates = 5;
  const Status st = Split(tmp / "undirected", tmp / "refused", undirected);
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(st.message().find("ranking candidates need a directed dataset") != std::string::npos);
  CHECK(!std::filesystem::exists(tmp / "refused"));
}

TEST_CASE("edge split: VerifyConsistency names the file and pair of a tampered split") {
  testing::TempDir tmp;
  WriteGraphDataset(tmp / "in", 300, RandomEdges(300, 1200, true, 6), true);
  REQUIRE(Split(tmp / "in", tmp / "ok", {0.8, 0.1, 0.1, 3}).ok());
  auto ok = Open(tmp / "ok");
  CHECK(VerifyMessage(tmp / "ok").empty());
  auto train = Pairs(*ok, format::kLinkTrainFile);
  auto valid = Pairs(*ok, format::kLinkValidFile);
  auto valid_neg = Pairs(*ok, format::kLinkValidNegFile);
  REQUIRE(!valid.empty());

  SUBCASE("a valid pair that is still in the graph") {
    valid[1] = train[0];
    WriteTampered(tmp / "ok", tmp / "bad", format::kLinkValidFile, valid);
    const std::string message = VerifyMessage(tmp / "bad");
    CHECK(message.find("link_valid.edges: pair 1") != std::string::npos);
    CHECK(message.find("is still an edge of graph.neighbors") != std::string::npos);
  }
  SUBCASE("a pair out of range") {
    valid[0] = {0, 300};
    WriteTampered(tmp / "ok", tmp / "bad", format::kLinkValidFile, valid);
    const std::string message = VerifyMessage(tmp / "bad");
    CHECK(message.find("link_valid.edges: pair 0") != std::string::npos);
    CHECK(message.find("outside [0, 300)") != std::string::npos);
  }
  SUBCASE("a pair in two splits") {
    train[2] = valid[0];
    WriteTampered(tmp / "ok", tmp / "bad", format::kLinkTrainFile, train);
    const std::string message = VerifyMessage(tmp / "bad");
    CHECK(message.find("link_train.edges: pair 2") != std::string::npos);
    CHECK(message.find("is also in link_valid.edges") != std::string::npos);
  }
  SUBCASE("a non-edge that is an edge") {
    valid_neg[0] = {train[0].second, train[0].first};
    WriteTampered(tmp / "ok", tmp / "bad", format::kLinkValidNegFile, valid_neg);
    const std::string message = VerifyMessage(tmp / "bad");
    CHECK(message.find("link_valid_neg.edges: pair 0") != std::string::npos);
    CHECK(message.find("not a non-edge") != std::string::npos);
  }
}

TEST_CASE("edge split: datasets of format version 2 (no link_split) still open") {
  testing::TempDir tmp;
  const std::string dir = tmp / "v2";
  REQUIRE(testing::WriteTinyDataset(dir, 10, 1).ok());
  nlohmann::json j = nlohmann::json::parse(std::ifstream(dir + "/" + format::kManifestFile));
  j["version"] = 2;
  j.erase("manifest_xxh3");
  const std::string body = j.dump();
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(format::Xxh3(body.data(), body.size())));
  j["manifest_xxh3"] = hex;
  std::ofstream(dir + "/" + format::kManifestFile, std::ios::trunc) << j.dump(2);
  auto ds = Open(dir);
  CHECK(ds->manifest().version == 2);
  CHECK(!ds->manifest().link_split);
  CHECK(ds->VerifyAll().ok());
  CHECK(ds->LoadEdgePairs(format::kLinkTrainFile).status().code() == StatusCode::kNotFound);
  CHECK(ds->LoadEdgePairs("train.idx").status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("edge split: partitioning relabels the pairs and keeps the split consistent") {
  testing::TempDir tmp;
  WriteGraphDataset(tmp / "in", 600, RandomEdges(600, 2400, true, 8), true);
  REQUIRE(Split(tmp / "in", tmp / "split", {0.85, 0.05, 0.1, 5}).ok());
  PartitionInto(tmp / "split", tmp / "parts");
  auto before = Open(tmp / "split");
  auto after = Open(tmp / "parts");
  const Status verified = after->VerifyAll();
  REQUIRE_MESSAGE(verified.ok(), verified.ToString());
  REQUIRE(after->manifest().link_split);
  CHECK(after->manifest().link_split->valid == before->manifest().link_split->valid);
  // Mapped back through relabel.old_ids, the pairs are the same.
  std::vector<int64_t> old(600);
  REQUIRE((*after->File(format::kRelabelOldIdsFile))->ReadAt(0, 600 * 8, old.data()).ok());
  for (const char* name : {format::kLinkValidFile, format::kLinkTestNegFile}) {
    std::set<Pair> expected, got;
    for (const auto& p : Pairs(*before, name)) expected.insert(p);
    for (const auto& [u, v] : Pairs(*after, name)) {
      CHECK(u < v);
      const int64_t a = old[static_cast<size_t>(u)], b = old[static_cast<size_t>(v)];
      got.insert({std::min(a, b), std::max(a, b)});
    }
    CHECK(got == expected);
  }
}

TEST_CASE("edge split: refusals") {
  testing::TempDir tmp;
  WriteGraphDataset(tmp / "in", 200, RandomEdges(200, 600, true, 9), true);
  REQUIRE(Split(tmp / "in", tmp / "split", {0.8, 0.1, 0.1, 1}).ok());
  SUBCASE("a dataset that already has a split") {
    const Status st = Split(tmp / "split", tmp / "again", {0.8, 0.1, 0.1, 2});
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find("already has an edge split") != std::string::npos);
  }
  SUBCASE("the largest component of a split dataset") {
    auto ds = Open(tmp / "split");
    auto w = DatasetWriter::Create(tmp / "component");
    REQUIRE(w.ok());
    convert::ComponentOptions co;
    co.memory_bytes = 16 << 20;
    co.keep_splits = true;
    const Status st = convert::WriteLargestComponent(*ds, **w, co).status();
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find("has an edge split") != std::string::npos);
  }
  SUBCASE("a graph too dense for its non-edges") {
    std::vector<Pair> complete;
    for (int64_t u = 0; u < 6; ++u) {
      for (int64_t v = u + 1; v < 6; ++v) complete.push_back({u, v});
    }
    WriteGraphDataset(tmp / "dense", 6, complete, true);
    const Status st = Split(tmp / "dense", tmp / "dense_split", {0, 0.5, 0.5, 1});
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find("too dense") != std::string::npos);
    CHECK(!std::filesystem::exists(tmp / "dense_split"));
  }
  SUBCASE("malformed fractions name the option") {
    for (const char* text : {"0.8,0.1", "0.8,0.1,x", "0.8,0.3,0.1", "1.5,0,0", "-0.1,0.1,0.1"}) {
      auto spec = convert::ParseEdgeSplitSpec(text, 0, "--split-edges");
      CHECK(spec.status().code() == StatusCode::kInvalidArgument);
      CHECK(spec.status().message().find("--split-edges '") != std::string::npos);
    }
    auto spec = convert::ParseEdgeSplitSpec("0.85,0.05,0.1", 4, "--split-edges");
    REQUIRE(spec.ok());
    CHECK(spec->valid_fraction == 0.05);
    CHECK(spec->seed == 4);
  }
}

TEST_CASE("edge split: convert --split-edges, after --largest-component") {
  testing::TempDir tmp;
  // Two components: a 40-node cycle with chords and a separate edge.
  std::string text;
  for (int v = 0; v < 40; ++v) {
    text += std::to_string(v) + " " + std::to_string((v + 1) % 40) + "\n";
    text += std::to_string(v) + " " + std::to_string((v + 7) % 40) + "\n";
  }
  text += "100 101\n";
  testing::WriteText(tmp / "g.tsv", text);
  convert::ConvertOptions o;
  o.input = tmp / "g.tsv";
  o.output = tmp / "out";
  o.memory_bytes = 16ull << 20;
  o.direction = convert::Direction::kUndirected;
  o.largest_component = true;
  o.edge_split = EdgeSplitSpec{0.6, 0.2, 0.2, 11};
  auto summary = convert::ConvertGraph(o);
  REQUIRE_MESSAGE(summary.ok(), summary.status().ToString());
  REQUIRE(summary->link_split);
  auto ds = Open(tmp / "out");
  const Status verified = ds->VerifyAll();
  REQUIRE_MESSAGE(verified.ok(), verified.ToString());
  CHECK(ds->manifest().num_nodes == 40);
  const auto& info = *ds->manifest().link_split;
  CHECK(info.train + info.valid + info.test == 80);
  CHECK(ds->manifest().num_edges == 160 - 2 * (info.valid + info.test));
  CHECK(summary->num_edges == ds->manifest().num_edges);
  CHECK(ds->manifest().source.find("largest component, edge split") != std::string::npos);
  for (const auto& entry : std::filesystem::directory_iterator(tmp / "out")) {
    CHECK(entry.path().filename() != "unsplit");
  }
}
