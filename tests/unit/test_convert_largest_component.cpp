// ConvertGraph with largest_component: weak connectivity, renumbering in old-ID order, features,
// labels, the ID map and splits of the kept nodes, the identity on a connected graph, the memory
// refusal, and the largest component of the shared cora.npz checked by a BFS of its own.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "skiff/convert/convert.h"
#include "skiff/convert/id_map.h"
#include "skiff/format/dataset.h"
#include "tests/unit/test_text_files.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using namespace skiff::convert;
using skiff::testing::ReadFileBytes;
using skiff::testing::WriteGz;
using skiff::testing::WriteNpy;
using skiff::testing::WriteText;
namespace fs = std::filesystem;

namespace {

ConvertOptions Options(const std::string& in, const std::string& out, bool largest) {
  ConvertOptions o;
  o.input = in;
  o.output = out;
  o.memory_bytes = 16ull << 20;
  o.largest_component = largest;
  return o;
}

std::unique_ptr<format::Dataset> OpenDataset(const std::string& dir) {
  auto ds = format::Dataset::Open(dir);
  REQUIRE_MESSAGE(ds.ok(), ds.status().ToString());
  const Status verified = (*ds)->VerifyAll();
  REQUIRE_MESSAGE(verified.ok(), verified.ToString());
  return std::move(*ds);
}

// Component number of each node, by BFS over out-neighbours (for a graph stored both ways), and
// each component's size.
std::vector<int64_t> ComponentsByBfs(const std::vector<int64_t>& offsets,
                                     const std::vector<int64_t>& neighbors,
                                     std::vector<int64_t>* sizes) {
  const auto n = static_cast<int64_t>(offsets.size()) - 1;
  std::vector<int64_t> component(static_cast<size_t>(n), -1);
  for (int64_t start = 0; start < n; ++start) {
    if (component[static_cast<size_t>(start)] >= 0) continue;
    const auto c = static_cast<int64_t>(sizes->size());
    std::vector<int64_t> queue = {start};
    component[static_cast<size_t>(start)] = c;
    for (size_t head = 0; head < queue.size(); ++head) {
      const int64_t v = queue[head];
      for (int64_t e = offsets[static_cast<size_t>(v)]; e < offsets[static_cast<size_t>(v) + 1];
           ++e) {
        const int64_t u = neighbors[static_cast<size_t>(e)];
        if (component[static_cast<size_t>(u)] < 0) {
          component[static_cast<size_t>(u)] = c;
          queue.push_back(u);
        }
      }
    }
    sizes->push_back(static_cast<int64_t>(queue.size()));
  }
  return component;
}

}  // namespace

TEST_CASE("convert: largest component of a directed edge list, with features and labels") {
  testing::TempDir dir;
  // Three weakly connected components: {0, 3, 5, 8} (5 edges; 0 -> 3 <- 5 joins 0 and 5 only when
  // direction is ignored), {1, 4, 7} (2 edges) and {2, 6} (1 edge).
  WriteText(dir / "g.txt", "0 3\n3 0\n5 3\n8 5\n8 0\n4 1\n7 4\n2 6\n");
  std::vector<float> feats(9 * 2);
  std::vector<int64_t> labels(9);
  for (int v = 0; v < 9; ++v) {
    feats[v * 2] = static_cast<float>(v);
    feats[v * 2 + 1] = static_cast<float>(10 * v);
    labels[v] = v % 3 == 1 ? -1 : v % 4;
  }
  WriteNpy(dir / "x.npy", "<f4", {9, 2}, feats.data(), feats.size() * 4);
  WriteNpy(dir / "y.npy", "<i8", {9}, labels.data(), labels.size() * 8);
  auto o = Options(dir / "g.txt", dir / "lcc", true);
  o.features_npy = dir / "x.npy";
  o.labels_npy = dir / "y.npy";
  auto s = ConvertGraph(o);
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  CHECK(s->num_components == 3);
  CHECK(s->num_nodes == 4);
  CHECK(s->component_nodes_dropped == 5);
  CHECK(s->num_edges == 5);
  CHECK(s->component_edges_dropped == 3);
  CHECK(s->feature_dim == 2);

  auto ds = OpenDataset(dir / "lcc");
  const auto& m = ds->manifest();
  CHECK(m.num_nodes == 4);
  CHECK(m.num_edges == 5);
  CHECK_FALSE(m.undirected);
  CHECK_FALSE(m.has_id_map);
  CHECK(m.name == "lcc");
  // Old 0, 3, 5, 8 become 0, 1, 2, 3.
  CHECK(*ds->LoadOffsets() == std::vector<int64_t>{0, 1, 2, 3, 5});
  CHECK(*ds->LoadNeighbors() == std::vector<int64_t>{1, 0, 1, 0, 2});
  CHECK(*ds->LoadFeatures() == std::vector<float>{0, 0, 3, 30, 5, 50, 8, 80});
  CHECK(*ds->LoadLabels() == std::vector<int32_t>{0, 3, 1, 0});
  CHECK(m.num_classes == 4);  // class numbers are kept, so is their range
  CHECK(m.train_count + m.valid_count + m.test_count == 4);
  // The whole dataset staged inside the temporary directory is gone with it.
  CHECK(fs::exists(dir / "lcc"));
  CHECK_FALSE(fs::exists(dir / "lcc/whole"));
  for (const auto& e : fs::directory_iterator(dir.path())) {
    CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
  }
}

TEST_CASE("convert: largest component keeps the ID map of its nodes, renumbered") {
  testing::TempDir dir;
  // First seen: dave 0, erin 1, alice 2, bob 3, carol 4, zed 5; the component {alice, bob, carol,
  // zed} becomes 0..3 in that order.
  WriteText(dir / "s.txt", "dave erin\nalice bob\ncarol bob\nzed alice\n");
  auto s = ConvertGraph(Options(dir / "s.txt", dir / "lcc", true));
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  CHECK(s->id_map_used);
  CHECK(s->num_components == 2);
  CHECK(s->num_nodes == 4);
  CHECK(s->num_edges == 3);
  auto ds = OpenDataset(dir / "lcc");
  CHECK(ds->manifest().has_id_map);
  CHECK(*ds->LoadOffsets() == std::vector<int64_t>{0, 1, 1, 2, 3});
  CHECK(*ds->LoadNeighbors() == std::vector<int64_t>{1, 1, 0});

  auto map = IdMap::OpenReadOnly(dir / "lcc/idmap");
  REQUIRE(map.ok());
  CHECK((*map)->size() == 4);
  const std::vector<std::string> kept = {"alice", "bob", "carol", "zed"};
  for (int64_t v = 0; v < 4; ++v) {
    auto raw = (*map)->RawId(v);
    REQUIRE(raw.ok());
    CHECK(*raw == kept[static_cast<size_t>(v)]);
    auto dense = (*map)->Find(kept[static_cast<size_t>(v)]);
    REQUIRE(dense.ok());
    REQUIRE(dense->has_value());
    CHECK(**dense == v);
  }
  for (const char* dropped : {"dave", "erin"}) {
    auto dense = (*map)->Find(dropped);
    REQUIRE(dense.ok());
    CHECK_FALSE(dense->has_value());
  }
  // Both key kinds hold exactly the kept nodes, in their orders.
  std::vector<std::pair<std::string, int64_t>> raws;
  REQUIRE((*map)
              ->ForEachRaw([&](std::string_view raw, int64_t dense) {
                raws.emplace_back(std::string(raw), dense);
                return Status::Ok();
              })
              .ok());
  CHECK(raws == std::vector<std::pair<std::string, int64_t>>{
                    {"alice", 0}, {"bob", 1}, {"carol", 2}, {"zed", 3}});
  int64_t dense_count = 0;
  REQUIRE((*map)
              ->ForEachDense([&](int64_t dense, std::string_view raw) {
                CHECK(dense == dense_count);
                CHECK(raw == kept[static_cast<size_t>(dense_count++)]);
                return Status::Ok();
              })
              .ok());
  CHECK(dense_count == 4);
}

TEST_CASE("convert: a connected graph comes out of largest component byte for byte the same") {
  testing::TempDir dir;
  // A METIS ring of 40 vertices with 10 chords, and labels so that splits are drawn.
  std::string metis = "40 50\n";
  for (int v = 0; v < 40; ++v) {
    std::vector<int> nbrs = {(v + 39) % 40, (v + 1) % 40};
    if (v % 2 == 0) nbrs.push_back((v + 20) % 40);
    std::sort(nbrs.begin(), nbrs.end());
    for (int u : nbrs) metis += std::to_string(u + 1) + " ";
    metis += "\n";
  }
  WriteText(dir / "ring.graph", metis);
  std::vector<int64_t> labels(40);
  for (int v = 0; v < 40; ++v) labels[v] = v % 3;
  WriteNpy(dir / "y.npy", "<i8", {40}, labels.data(), labels.size() * 8);
  auto plain = Options(dir / "ring.graph", dir / "plain", false);
  auto lcc = Options(dir / "ring.graph", dir / "lcc", true);
  plain.labels_npy = lcc.labels_npy = dir / "y.npy";
  plain.split = lcc.split = *ParseSplitSpec("per-class:3,2", 7);
  auto a = ConvertGraph(plain);
  auto b = ConvertGraph(lcc);
  REQUIRE_MESSAGE(a.ok(), a.status().ToString());
  REQUIRE_MESSAGE(b.ok(), b.status().ToString());
  CHECK(b->num_components == 1);
  CHECK(b->component_nodes_dropped == 0);
  CHECK(b->component_edges_dropped == 0);
  CHECK(b->num_edges == a->num_edges);
  for (const char* name :
       {format::kOffsetsFile, format::kNeighborsFile, format::kLabelsFile, format::kFeaturesFile,
        format::kTrainFile, format::kValidFile, format::kTestFile}) {
    INFO(name);
    const std::string bytes = ReadFileBytes(dir / (std::string("plain/") + name));
    CHECK(bytes == ReadFileBytes(dir / (std::string("lcc/") + name)));
    CHECK(ReadFileBytes(dir / (std::string("plain/") + name + ".sum")) ==
          ReadFileBytes(dir / (std::string("lcc/") + name + ".sum")));
  }
  OpenDataset(dir / "lcc");
}

TEST_CASE("convert: drawn splits are drawn on the component, carried splits are filtered") {
  testing::TempDir dir;
  // Component {0..17}: a path, 6 nodes each of classes 0, 1, 2. Component {18..29}: a path of
  // nodes of class 3 and 0 (drawing on the whole graph would put some in the splits).
  std::string text;
  for (int v = 0; v < 17; ++v) text += std::to_string(v) + " " + std::to_string(v + 1) + "\n";
  for (int v = 18; v < 29; ++v) text += std::to_string(v) + " " + std::to_string(v + 1) + "\n";
  WriteText(dir / "g.txt", text);
  std::vector<int64_t> labels(30);
  for (int v = 0; v < 30; ++v) labels[v] = v < 18 ? v % 3 : 3 * (v % 2);
  WriteNpy(dir / "y.npy", "<i8", {30}, labels.data(), labels.size() * 8);
  auto o = Options(dir / "g.txt", dir / "lcc", true);
  o.labels_npy = dir / "y.npy";
  o.split = *ParseSplitSpec("per-class:2,3", 5);
  auto s = ConvertGraph(o);
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  CHECK(s->num_nodes == 18);
  CHECK(s->train_count == 6);
  CHECK(s->valid_count == 9);
  CHECK(s->test_count == 3);
  auto ds = OpenDataset(dir / "lcc");
  const auto kept_labels = *ds->LoadLabels();
  const std::pair<const char*, int> per_class[] = {
      {format::kTrainFile, 2}, {format::kValidFile, 3}, {format::kTestFile, 1}};
  for (const auto& [name, count] : per_class) {
    INFO(name);
    std::map<int32_t, int> by_class;
    const auto split = ds->LoadSplit(name);
    REQUIRE(split.ok());
    for (int64_t v : *split) ++by_class[kept_labels[static_cast<size_t>(v)]];
    CHECK(by_class == std::map<int32_t, int>{{0, count}, {1, count}, {2, count}});
  }

  // OGB carries its splits: those of kept nodes stay, renumbered (node 4 is isolated).
  const std::string root = dir / "ogbn-toy";
  testing::WriteOgb(root, {.edges = "0,1\n1,2\n3,2\n3,5\n",
                           .num_nodes = "6\n",
                           .features = "0,1\n1,2\n2,3\n3,4\n4,5\n5,6\n",
                           .labels = "0\n1\n2\n1\n0\n2\n",
                           .train = "0\n4\n",
                           .valid = "2\n",
                           .test = "5\n3\n"});
  auto ogb = ConvertGraph(Options(root, dir / "ogb", true));
  REQUIRE_MESSAGE(ogb.ok(), ogb.status().ToString());
  CHECK(ogb->splits_from_input);
  CHECK(ogb->num_components == 2);
  CHECK(ogb->num_nodes == 5);  // old 0, 1, 2, 3, 5
  auto og = OpenDataset(dir / "ogb");
  CHECK(*og->LoadSplit(format::kTrainFile) == std::vector<int64_t>{0});
  CHECK(*og->LoadSplit(format::kValidFile) == std::vector<int64_t>{2});
  CHECK(*og->LoadSplit(format::kTestFile) == std::vector<int64_t>{3, 4});
  CHECK(*og->LoadLabels() == std::vector<int32_t>{0, 1, 2, 1, 2});
  CHECK(*og->LoadFeatures() == std::vector<float>{0, 1, 1, 2, 2, 3, 3, 4, 5, 6});
}

TEST_CASE("convert: largest component refuses a node table beyond --memory, leaving nothing") {
  testing::TempDir dir;
  WriteText(dir / "g.txt", "0 1\n1 200000\n");  // 200001 nodes: 8 bytes each > 1 MiB
  auto o = Options(dir / "g.txt", dir / "lcc", true);
  o.id_map = IdMapMode::kNever;
  o.memory_bytes = 1ull << 20;
  auto s = ConvertGraph(o);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == StatusCode::kResourceExhausted);
  CHECK(s.status().message().find("--memory") != std::string::npos);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    left.push_back(e.path().filename().string());
  }
  CHECK(left == std::vector<std::string>{"g.txt"});
}

TEST_CASE("convert: largest component of the shared cora.npz, checked by a BFS") {
  const std::string datasets = testing::DatasetsDir();
  const std::string path = datasets + "/cora.npz";
  if (datasets.empty() || !fs::exists(path)) {
    MESSAGE("skipped: cora.npz not found");
    return;
  }
  testing::TempDir dir;
  auto whole = Options(path, dir / "whole", false);
  whole.direction = Direction::kUndirected;
  REQUIRE(ConvertGraph(whole).ok());
  auto full = OpenDataset(dir / "whole");
  const auto offsets = *full->LoadOffsets();
  const auto neighbors = *full->LoadNeighbors();
  const int64_t n = full->manifest().num_nodes;
  std::vector<int64_t> sizes;
  const auto component = ComponentsByBfs(offsets, neighbors, &sizes);
  const auto largest = std::max_element(sizes.begin(), sizes.end()) - sizes.begin();
  std::vector<int64_t> members;
  int64_t member_edges = 0;
  for (int64_t v = 0; v < n; ++v) {
    if (component[static_cast<size_t>(v)] != largest) continue;
    members.push_back(v);
    member_edges += offsets[static_cast<size_t>(v) + 1] - offsets[static_cast<size_t>(v)];
  }

  auto o = Options(path, dir / "lcc", true);
  o.direction = Direction::kUndirected;
  o.split = *ParseSplitSpec("per-class:20,30", 1);
  auto s = ConvertGraph(o);
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  CHECK(s->num_components == static_cast<int64_t>(sizes.size()));
  CHECK(s->num_nodes == static_cast<int64_t>(members.size()));
  CHECK(s->num_edges == member_edges);
  // Shchur et al.'s figures for Cora's largest component (datasets README): 2,485 nodes and
  // 5,069 undirected edges.
  CHECK(s->num_nodes == 2485);
  CHECK(s->num_edges == 2 * 5069);
  CHECK(s->train_count == 140);
  CHECK(s->valid_count == 210);
  CHECK(s->test_count == 2485 - 350);
  auto lcc = OpenDataset(dir / "lcc");
  const auto full_labels = *full->LoadLabels();
  const auto labels = *lcc->LoadLabels();
  const int64_t dim = full->manifest().feature_dim;
  std::vector<float> row(static_cast<size_t>(dim)), kept_row(static_cast<size_t>(dim));
  for (size_t i = 0; i < members.size(); i += 97) {
    CHECK(labels[i] == full_labels[static_cast<size_t>(members[i])]);
    REQUIRE(full->ReadFeatureRows(members[i], 1, row.data()).ok());
    REQUIRE(lcc->ReadFeatureRows(static_cast<int64_t>(i), 1, kept_row.data()).ok());
    CHECK(row == kept_row);
  }
}
