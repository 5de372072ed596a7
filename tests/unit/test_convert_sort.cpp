// External edge sort and CSR building: a tiny budget that forces spills (and intermediate merge
// passes) must give exactly the in-memory result.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <vector>

#include "skiff/convert/csr_builder.h"
#include "skiff/convert/external_sort.h"
#include "skiff/format/dataset.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using namespace skiff::convert;

namespace {
std::vector<Edge> RandomEdges(size_t count, int64_t num_nodes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> node(0, num_nodes - 1);
  std::vector<Edge> edges(count);
  for (auto& e : edges) e = Edge{node(rng), node(rng)};
  return edges;
}

struct Sorted {
  std::vector<Edge> edges;
  EdgeSorterStats stats;
};

Sorted SortAll(const std::vector<Edge>& input, EdgeSorterOptions options) {
  auto sorter = EdgeSorter::Create(options);
  REQUIRE(sorter.ok());
  for (const Edge& e : input) REQUIRE((*sorter)->Add(e.src, e.dst).ok());
  REQUIRE((*sorter)->Finish().ok());
  Sorted out;
  std::vector<Edge> buf(777);  // an odd batch size on purpose
  for (;;) {
    auto n = (*sorter)->Read(buf.data(), buf.size());
    REQUIRE(n.ok());
    if (*n == 0) break;
    out.edges.insert(out.edges.end(), buf.begin(), buf.begin() + static_cast<ptrdiff_t>(*n));
  }
  out.stats = (*sorter)->stats();
  return out;
}
}  // namespace

TEST_CASE("external sort: spilled runs merge to exactly the in-memory result") {
  testing::TempDir dir;
  const auto input = RandomEdges(150000, 5000, 7);
  for (bool undirected : {false, true}) {
    for (bool dedup : {false, true}) {
      CAPTURE(undirected);
      CAPTURE(dedup);
      EdgeSorterOptions options;
      options.spill_parent_dir = dir.path();
      options.add_reverse = undirected;
      options.drop_duplicates = dedup;
      options.drop_self_loops = true;
      options.memory_bytes = 1ull << 30;
      Sorted in_memory = SortAll(input, options);
      CHECK(in_memory.stats.runs_spilled == 0);
      options.memory_bytes = EdgeSorter::kMinRunEdges * sizeof(Edge);  // 1024-edge runs
      Sorted spilled = SortAll(input, options);
      CHECK(spilled.stats.runs_spilled > EdgeSorter::kMaxFanIn);  // forces a merge pass
      CHECK(spilled.stats.merge_passes >= 1);
      CHECK(spilled.edges == in_memory.edges);
      CHECK(spilled.stats.duplicates_dropped == in_memory.stats.duplicates_dropped);
      CHECK(std::is_sorted(spilled.edges.begin(), spilled.edges.end()));

      // Reference: the same edges through std::sort / std::set.
      std::vector<Edge> expect;
      for (const Edge& e : input) {
        if (e.src == e.dst) continue;
        expect.push_back(e);
        if (undirected) expect.push_back(Edge{e.dst, e.src});
      }
      std::sort(expect.begin(), expect.end());
      if (dedup) expect.erase(std::unique(expect.begin(), expect.end()), expect.end());
      CHECK(spilled.edges == expect);
    }
  }
  // Spill directories are removed with their sorters.
  CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE(
    "external sort: runs sorted by several threads, the last one merged from memory or spilled") {
  testing::TempDir dir;
  // 300k edges over 700 nodes: long runs (threads split at 65,536 edges) with many duplicates.
  const auto input = RandomEdges(300000, 700, 11);
  std::vector<Edge> all;
  for (const Edge& e : input) {
    if (e.src != e.dst) all.push_back(e);
  }
  std::sort(all.begin(), all.end());
  std::vector<Edge> unique = all;
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  struct Setting {
    uint64_t run_edges;
    bool dedup;
    uint64_t spilled;
  };
  // 100k-edge runs: two full runs spill. The last run's duplicates leave room for their merge
  // buffers beside it, so it stays in memory; with duplicates kept it fills its buffer and spills.
  for (const Setting& setting :
       {Setting{1 << 20, true, 0}, Setting{100000, true, 2}, Setting{100000, false, 3}}) {
    for (const int threads : {1, 2, 3, 8}) {
      CAPTURE(setting.run_edges);
      CAPTURE(setting.dedup);
      CAPTURE(threads);
      EdgeSorterOptions options;
      options.spill_parent_dir = dir.path();
      options.memory_bytes = setting.run_edges * sizeof(Edge);
      options.drop_duplicates = setting.dedup;
      options.threads = threads;
      const Sorted sorted = SortAll(input, options);
      CHECK(sorted.stats.runs_spilled == setting.spilled);
      CHECK(sorted.edges == (setting.dedup ? unique : all));
      CHECK(sorted.stats.duplicates_dropped == (setting.dedup ? all.size() - unique.size() : 0));
    }
  }
}

TEST_CASE("external sort: spill directories of runs that no longer exist are removed") {
  testing::TempDir dir;
  const pid_t dead = testing::ExitedPid();  // a PID that no longer exists
  REQUIRE(dead > 0);
  const std::string d = std::to_string(dead);
  const std::string stale = dir / ("skiff-sort-" + d + "-7");
  std::filesystem::create_directories(stale);
  std::ofstream(stale + "/run-0") << "edges";
  // Not a dead run's sorter spill: a live process's (PID 1), another tag's, another name.
  const std::vector<std::string> kept{"skiff-sort-1-0", "skiff-idmap-" + d + "-0",
                                      "skiff-sort-" + d, "skiff-sort-" + d + "-x"};
  for (const std::string& name : kept) std::filesystem::create_directories(dir / name);
  EdgeSorterOptions options;
  options.spill_parent_dir = dir.path();
  options.memory_bytes = EdgeSorter::kMinRunEdges * sizeof(Edge);
  CHECK(SortAll(RandomEdges(5000, 100, 1), options).stats.runs_spilled > 0);
  CHECK_FALSE(std::filesystem::exists(stale));
  for (const std::string& name : kept) CHECK(std::filesystem::exists(dir / name));
}

TEST_CASE("external sort: self-loops kept on request, empty input") {
  testing::TempDir dir;
  EdgeSorterOptions options;
  options.spill_parent_dir = dir.path();
  options.drop_self_loops = false;
  Sorted s = SortAll({{2, 2}, {1, 0}, {2, 2}}, options);
  CHECK(s.edges == std::vector<Edge>{{1, 0}, {2, 2}});
  CHECK(s.stats.self_loops_dropped == 0);
  CHECK(SortAll({}, options).edges.empty());
}

TEST_CASE("CSR builder writes offsets and neighbours, including empty rows") {
  testing::TempDir dir;
  auto writer = format::DatasetWriter::Create(dir / "ds");
  REQUIRE(writer.ok());
  EdgeSorterOptions options;
  options.spill_parent_dir = (*writer)->temp_dir();
  options.memory_bytes = 0;  // minimum runs: spills
  auto sorter = EdgeSorter::Create(options);
  REQUIRE(sorter.ok());
  // Node 0 -> {3, 1}, node 2 -> {0}, nodes 1, 3, 4 have none; 5 nodes.
  for (auto [s, d] : std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {2, 0}, {0, 1}, {0, 3}}) {
    REQUIRE((*sorter)->Add(s, d).ok());
  }
  REQUIRE((*sorter)->Finish().ok());
  auto csr = WriteCsr(**sorter, 5, **writer, 4);
  REQUIRE(csr.ok());
  CHECK(csr->num_edges == 3);
  CHECK(csr->neighbor_dtype == format::DType::kInt32);
  auto& m = (*writer)->manifest();
  CHECK(m.num_nodes == 5);
  CHECK(m.num_edges == 3);
  // Complete the dataset so it can be opened and read back.
  REQUIRE((*writer)->WriteFile(format::kFeaturesFile, nullptr, 0).ok());
  std::vector<int32_t> labels(5, -1);
  REQUIRE((*writer)->WriteFile(format::kLabelsFile, labels.data(), 20).ok());
  for (const char* f : {format::kTrainFile, format::kValidFile, format::kTestFile}) {
    REQUIRE((*writer)->WriteFile(f, nullptr, 0).ok());
  }
  REQUIRE((*writer)->Commit().ok());
  auto ds = format::Dataset::Open(dir / "ds");
  REQUIRE(ds.ok());
  auto offsets = (*ds)->LoadOffsets();
  auto nbrs = (*ds)->LoadNeighbors();
  REQUIRE(offsets.ok());
  REQUIRE(nbrs.ok());
  CHECK(*offsets == std::vector<int64_t>{0, 2, 2, 3, 3, 3});
  CHECK(*nbrs == std::vector<int64_t>{1, 3, 0});
}

TEST_CASE("CSR builder rejects an edge outside [0, N)") {
  testing::TempDir dir;
  auto writer = format::DatasetWriter::Create(dir / "ds");
  REQUIRE(writer.ok());
  auto sorter = EdgeSorter::Create(EdgeSorterOptions{});
  REQUIRE(sorter.ok());
  REQUIRE((*sorter)->Add(0, 9).ok());
  REQUIRE((*sorter)->Finish().ok());
  auto csr = WriteCsr(**sorter, 3, **writer, 1);
  CHECK(csr.status().code() == StatusCode::kCorruption);
  CHECK(csr.status().message().find("outside [0, 3)") != std::string::npos);
}
