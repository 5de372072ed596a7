// Tests of `skiff partition`'s layout rewrite: the relabelled dataset is the same graph, errors on
// bad input are clear, and nothing is half-written.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "skiff/format/dataset.h"
#include "skiff/half.h"
#include "skiff/partition/metis_export.h"
#include "skiff/partition/partition_dataset.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using namespace skiff::format;
using namespace skiff::partition;

namespace {

struct Graph {
  std::vector<int64_t> offsets{0};
  std::vector<int64_t> neighbors;
};

// Two-level community graph with n nodes; symmetric, sorted rows, no duplicates.
Graph MakeGraph(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::set<int64_t>> adj(n);
  const int64_t community = 50;
  for (int64_t v = 0; v < n; ++v) {
    for (int d = 0; d < 3; ++d) {
      const int64_t base = (v / community) * community;
      int64_t u = base + static_cast<int64_t>(rng() % community);
      if (rng() % 10 == 0) u = static_cast<int64_t>(rng() % n);
      if (u >= n || u == v) continue;
      adj[v].insert(u);
      adj[u].insert(v);
    }
  }
  // Shuffle IDs so the communities are not contiguous.
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<std::vector<int64_t>> rows(n);
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t u : adj[v]) rows[perm[v]].push_back(perm[u]);
  }
  Graph g;
  for (auto& row : rows) {
    std::sort(row.begin(), row.end());
    g.neighbors.insert(g.neighbors.end(), row.begin(), row.end());
    g.offsets.push_back(static_cast<int64_t>(g.neighbors.size()));
  }
  return g;
}

struct Options {
  DType feature_dtype = DType::kFloat32;
  bool bad_neighbor = false;  // one neighbour ID out of range
  bool idmap = false;
};

Status WriteDataset(const std::string& dir, const Graph& g, int64_t dim, const Options& o = {}) {
  const int64_t n = static_cast<int64_t>(g.offsets.size()) - 1;
  SKIFF_ASSIGN_OR_RETURN(auto w, DatasetWriter::Create(dir));
  auto& m = w->manifest();
  m.name = "test";
  m.num_nodes = n;
  m.num_edges = static_cast<int64_t>(g.neighbors.size());
  m.undirected = true;
  m.feature_dim = dim;
  m.feature_dtype = o.feature_dtype;
  m.num_classes = 5;
  SKIFF_RETURN_IF_ERROR(w->WriteFile(kOffsetsFile, g.offsets.data(), g.offsets.size() * 8));
  std::vector<int32_t> nbrs(g.neighbors.begin(), g.neighbors.end());
  if (o.bad_neighbor) nbrs[nbrs.size() / 2] = static_cast<int32_t>(n + 5);
  SKIFF_RETURN_IF_ERROR(w->WriteFile(kNeighborsFile, nbrs.data(), nbrs.size() * 4));
  std::vector<float> feats(n * dim);
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t d = 0; d < dim; ++d) feats[v * dim + d] = static_cast<float>(v % 1000) + d * 0.25f;
  }
  if (o.feature_dtype == DType::kFloat32) {
    SKIFF_RETURN_IF_ERROR(w->WriteFile(kFeaturesFile, feats.data(), feats.size() * 4));
  } else {
    std::vector<uint16_t> h(feats.size());
    for (size_t i = 0; i < h.size(); ++i) h[i] = FloatToHalf(feats[i]);
    SKIFF_RETURN_IF_ERROR(w->WriteFile(kFeaturesFile, h.data(), h.size() * 2));
  }
  std::vector<int32_t> labels(n);
  for (int64_t v = 0; v < n; ++v) labels[v] = (v % 7 == 0) ? -1 : static_cast<int32_t>(v % 5);
  SKIFF_RETURN_IF_ERROR(w->WriteFile(kLabelsFile, labels.data(), labels.size() * 4));
  std::vector<int64_t> train, valid, test;
  for (int64_t v = 0; v < n; ++v) {
    (v % 10 < 6 ? train : v % 10 < 8 ? valid : test).push_back(v);
  }
  m.train_count = static_cast<int64_t>(train.size());
  m.valid_count = static_cast<int64_t>(valid.size());
  m.test_count = static_cast<int64_t>(test.size());
  SKIFF_RETURN_IF_ERROR(w->WriteFile(kTrainFile, train.data(), train.size() * 8));
  SKIFF_RETURN_IF_ERROR(w->WriteFile(kValidFile, valid.data(), valid.size() * 8));
  SKIFF_RETURN_IF_ERROR(w->WriteFile(kTestFile, test.data(), test.size() * 8));
  if (o.idmap) {
    m.has_id_map = true;
    std::filesystem::create_directories(w->temp_dir() + "/idmap");
    std::ofstream(w->temp_dir() + "/idmap/CURRENT") << "marker\n";
  }
  return w->Commit();
}

std::vector<int64_t> ReadInt64File(const Dataset& ds, const std::string& name) {
  auto reader = ds.File(name);
  REQUIRE(reader.ok());
  std::vector<int64_t> v((*reader)->info().data_bytes / 8);
  REQUIRE((*reader)->ReadAt(0, v.size() * 8, v.data()).ok());
  return v;
}

// Checks that `after` is `before` relabelled through after's relabel.old_ids (composed with
// `before`'s own map when it has one), partition by partition.
void CheckSameDataset(const std::string& before_dir, const std::string& after_dir, int k,
                      bool direct = true) {
  auto before = Dataset::Open(before_dir);
  auto after = Dataset::Open(after_dir);
  REQUIRE(before.ok());
  REQUIRE(after.ok());
  const auto& mb = (*before)->manifest();
  const auto& ma = (*after)->manifest();
  const int64_t n = mb.num_nodes;
  REQUIRE(ma.num_nodes == n);
  REQUIRE(ma.num_edges == mb.num_edges);
  REQUIRE(ma.partitions.has_value());
  CHECK(ma.partitions->num_partitions == static_cast<uint32_t>(k));
  CHECK(ma.feature_extent_offsets.size() == static_cast<size_t>(k));
  for (uint64_t off : ma.feature_extent_offsets) CHECK(off % 4096 == 0);
  CHECK((*after)->VerifyAll().ok());

  // new -> old (in `before`'s IDs).
  std::vector<int64_t> old_ids = ReadInt64File(**after, kRelabelOldIdsFile);
  if (mb.files.count(kRelabelOldIdsFile)) {
    // Both maps refer to converted IDs; express `after` in `before`'s IDs.
    std::vector<int64_t> before_old = ReadInt64File(**before, kRelabelOldIdsFile);
    std::vector<int64_t> conv_to_before(n);
    for (int64_t v = 0; v < n; ++v) conv_to_before[before_old[v]] = v;
    for (auto& id : old_ids) id = conv_to_before[id];
  }
  REQUIRE(static_cast<int64_t>(old_ids.size()) == n);
  std::vector<int64_t> new_id(n, -1);
  for (int64_t v = 0; v < n; ++v) {
    REQUIRE(old_ids[v] >= 0);
    REQUIRE(old_ids[v] < n);
    REQUIRE(new_id[old_ids[v]] == -1);
    new_id[old_ids[v]] = v;
  }
  // Within a partition, the input's order is kept.
  const auto& b = ma.partitions->boundaries;
  for (int p = 0; p < k && direct; ++p) {
    for (int64_t v = b[p] + 1; v < b[p + 1]; ++v) CHECK(old_ids[v - 1] < old_ids[v]);
  }
  // Graph.
  auto ob = (*before)->LoadOffsets();
  auto nb = (*before)->LoadNeighbors();
  auto oa = (*after)->LoadOffsets();
  auto na = (*after)->LoadNeighbors();
  REQUIRE((ob.ok() && nb.ok() && oa.ok() && na.ok()));
  int64_t cut = 0;
  for (int64_t v = 0; v < n; ++v) {
    const int64_t o = old_ids[v];
    std::vector<int64_t> expected;
    for (int64_t e = (*ob)[o]; e < (*ob)[o + 1]; ++e) expected.push_back(new_id[(*nb)[e]]);
    std::sort(expected.begin(), expected.end());
    std::vector<int64_t> got(na->begin() + (*oa)[v], na->begin() + (*oa)[v + 1]);
    REQUIRE(got == expected);
    for (int64_t u : got) {
      cut +=
          (std::upper_bound(b.begin(), b.end(), u) - std::upper_bound(b.begin(), b.end(), v)) != 0;
    }
  }
  CHECK(std::abs(ma.partitions->edge_cut_fraction -
                 static_cast<double>(cut) / static_cast<double>(mb.num_edges)) < 1e-12);
  // Features, labels.
  auto fb = (*before)->LoadFeatures();
  auto fa = (*after)->LoadFeatures();
  REQUIRE((fb.ok() && fa.ok()));
  const int64_t d = mb.feature_dim;
  for (int64_t v = 0; v < n; ++v) {
    REQUIRE(
        std::equal(fa->begin() + v * d, fa->begin() + (v + 1) * d, fb->begin() + old_ids[v] * d));
  }
  auto lb = (*before)->LoadLabels();
  auto la = (*after)->LoadLabels();
  REQUIRE((lb.ok() && la.ok()));
  for (int64_t v = 0; v < n; ++v) REQUIRE((*la)[v] == (*lb)[old_ids[v]]);
  // Splits: the same node sets, ascending.
  for (const char* split : {kTrainFile, kValidFile, kTestFile}) {
    auto sb = (*before)->LoadSplit(split);
    auto sa = (*after)->LoadSplit(split);
    REQUIRE((sb.ok() && sa.ok()));
    CHECK(std::is_sorted(sa->begin(), sa->end()));
    std::vector<int64_t> mapped;
    for (int64_t v : *sa) mapped.push_back(old_ids[v]);
    std::sort(mapped.begin(), mapped.end());
    CHECK(mapped == *sb);
  }
  // Edge buckets: every stored edge once, in its (src part, dst part) bucket, rows in order.
  const auto index = ReadInt64File(**after, kEdgeBucketsIndexFile);
  REQUIRE(index.size() == static_cast<size_t>(k) * k + 1);
  CHECK(index.front() == 0);
  CHECK(index.back() == ma.num_edges);
  auto bucket_reader = (*after)->File(kEdgeBucketsFile);
  REQUIRE(bucket_reader.ok());
  std::vector<int32_t> records(2 * ma.num_edges);
  REQUIRE((*bucket_reader)->ReadAt(0, records.size() * 4, records.data()).ok());
  std::multiset<std::pair<int64_t, int64_t>> from_buckets, from_csr;
  for (int p = 0; p < k; ++p) {
    for (int q = 0; q < k; ++q) {
      for (int64_t e = index[p * k + q]; e < index[p * k + q + 1]; ++e) {
        const int64_t s = records[2 * e], t = records[2 * e + 1];
        REQUIRE((s >= b[p] && s < b[p + 1]));
        REQUIRE((t >= b[q] && t < b[q + 1]));
        if (e > index[p * k + q]) {
          const std::pair<int64_t, int64_t> prev{records[2 * e - 2], records[2 * e - 1]};
          CHECK(prev <= std::make_pair(s, t));
        }
        from_buckets.insert({s, t});
      }
    }
  }
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t e = (*oa)[v]; e < (*oa)[v + 1]; ++e) from_csr.insert({v, (*na)[e]});
  }
  CHECK(from_buckets == from_csr);
}

PartitionOptions Opts(const std::string& in, const std::string& out, int k) {
  PartitionOptions o;
  o.dataset_dir = in;
  o.output_dir = out;
  o.partitioner.k = k;
  o.memory_bytes = 256ull << 20;
  return o;
}

}  // namespace

TEST_CASE("partition dataset: relabelling preserves graph, features, labels and splits") {
  testing::TempDir tmp;
  const Graph g = MakeGraph(3000, 1);
  REQUIRE(WriteDataset(tmp / "in", g, 5).ok());
  for (Algorithm a : {Algorithm::kGrem, Algorithm::kFennel, Algorithm::kLdg, Algorithm::kRandom}) {
    CAPTURE(AlgorithmName(a));
    auto o = Opts(tmp / "in", tmp / "out", 6);
    o.partitioner.algorithm = a;
    o.overwrite = true;
    auto r = PartitionDataset(o);
    REQUIRE_MESSAGE(r.ok(), r.status().ToString());
    CHECK(r->boundaries.size() == 7u);
    CHECK(r->imbalance <= 0.03 + 1e-9);
    CheckSameDataset(tmp / "in", tmp / "out", 6);
    auto ds = Dataset::Open(tmp / "out");
    REQUIRE(ds.ok());
    CHECK((*ds)->manifest().partitions->algorithm == AlgorithmName(a));
    CHECK((*ds)->manifest().partitions->peak_memory_bytes > 0);
  }
}

TEST_CASE("partition dataset: out-of-core paths (tiny chunks) give the same dataset") {
  testing::TempDir tmp;
  const Graph g = MakeGraph(2500, 2);
  Options fo;
  fo.feature_dtype = DType::kFloat16;
  REQUIRE(WriteDataset(tmp / "in", g, 3, fo).ok());
  auto o = Opts(tmp / "in", tmp / "small", 5);
  o.max_chunk_edges = 64;  // many chunks; edge-bucket windows of a few buckets
  o.partitioner.balance_train = true;
  auto small = PartitionDataset(o);
  REQUIRE_MESSAGE(small.ok(), small.status().ToString());
  CheckSameDataset(tmp / "in", tmp / "small", 5);
  CHECK(small->train_imbalance <= 0.03 + 1e-9);
}

TEST_CASE("partition dataset: in place, twice; the ID map stays consistent") {
  testing::TempDir tmp;
  const Graph g = MakeGraph(1200, 3);
  Options io;
  io.idmap = true;
  REQUIRE(WriteDataset(tmp / "orig", g, 4, io).ok());
  REQUIRE(WriteDataset(tmp / "ds", g, 4, io).ok());
  auto o = Opts(tmp / "ds", "", 4);
  REQUIRE(PartitionDataset(o).ok());
  CheckSameDataset(tmp / "orig", tmp / "ds", 4);
  CHECK(std::filesystem::exists(tmp / "ds/idmap/CURRENT"));
  // Partition the partitioned dataset again (different k): old_ids still maps to the original IDs.
  std::filesystem::copy(tmp / "ds", tmp / "ds1", std::filesystem::copy_options::recursive);
  o.partitioner.k = 3;
  o.partitioner.algorithm = Algorithm::kLdg;
  REQUIRE(PartitionDataset(o).ok());
  CheckSameDataset(tmp / "ds1", tmp / "ds", 3);
  CheckSameDataset(tmp / "orig", tmp / "ds", 3, /*direct=*/false);
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
    CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
  }
}

TEST_CASE("partition dataset: same seed, same dataset") {
  testing::TempDir tmp;
  const Graph g = MakeGraph(2000, 4);
  REQUIRE(WriteDataset(tmp / "in", g, 2).ok());
  auto o = Opts(tmp / "in", tmp / "a", 8);
  o.partitioner.order = StreamOrder::kRandom;
  REQUIRE(PartitionDataset(o).ok());
  o.output_dir = tmp / "b";
  REQUIRE(PartitionDataset(o).ok());
  auto a = Dataset::Open(tmp / "a");
  auto b = Dataset::Open(tmp / "b");
  REQUIRE((a.ok() && b.ok()));
  CHECK(ReadInt64File(**a, kRelabelOldIdsFile) == ReadInt64File(**b, kRelabelOldIdsFile));
  CHECK((*a)->manifest().files.at(kNeighborsFile).sum_xxh3 ==
        (*b)->manifest().files.at(kNeighborsFile).sum_xxh3);
}

TEST_CASE("partition dataset: corrupted or mismatched input gives a clear error") {
  testing::TempDir tmp;
  const Graph g = MakeGraph(1000, 5);
  SUBCASE("flipped byte in graph.neighbors") {
    REQUIRE(WriteDataset(tmp / "in", g, 2).ok());
    {
      std::fstream f(tmp / "in/graph.neighbors", std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(100);
      f.put('\x7f');
    }
    auto r = PartitionDataset(Opts(tmp / "in", tmp / "out", 4));
    REQUIRE(!r.ok());
    CHECK(r.status().code() == StatusCode::kCorruption);
    CHECK(r.status().message().find("graph.neighbors") != std::string::npos);
  }
  SUBCASE("neighbour ID out of range") {
    Options bad;
    bad.bad_neighbor = true;
    REQUIRE(WriteDataset(tmp / "in", g, 2, bad).ok());
    auto r = PartitionDataset(Opts(tmp / "in", tmp / "out", 4));
    REQUIRE(!r.ok());
    CHECK(r.status().code() == StatusCode::kCorruption);
    CHECK(r.status().message().find("graph.neighbors: byte offset") != std::string::npos);
    CHECK(r.status().message().find("outside [0, 1000)") != std::string::npos);
  }
  SUBCASE("bad options") {
    REQUIRE(WriteDataset(tmp / "in", g, 2).ok());
    CHECK(PartitionDataset(Opts(tmp / "in", tmp / "out", 1001)).status().code() ==
          StatusCode::kInvalidArgument);
    auto tiny = Opts(tmp / "in", tmp / "out", 4);
    tiny.memory_bytes = 1 << 20;
    CHECK(PartitionDataset(tiny).status().code() == StatusCode::kResourceExhausted);
    CHECK(PartitionDataset(Opts(tmp / "missing", tmp / "out", 4)).status().code() ==
          StatusCode::kNotFound);
    // The output exists: refused, and the existing directory is untouched.
    REQUIRE(WriteDataset(tmp / "out", g, 2).ok());
    CHECK(PartitionDataset(Opts(tmp / "in", tmp / "out", 4)).status().code() ==
          StatusCode::kInvalidArgument);
    auto ds = Dataset::Open(tmp / "out");
    REQUIRE(ds.ok());
    CHECK(!(*ds)->manifest().partitions.has_value());
  }
  // Nothing half-written is left behind.
  CHECK(!std::filesystem::exists(tmp / "out.tmp-" + std::to_string(::getpid())));
}

TEST_CASE("partition dataset: METIS export") {
  testing::TempDir tmp;
  const Graph g = MakeGraph(300, 6);
  REQUIRE(WriteDataset(tmp / "in", g, 1).ok());
  REQUIRE(ExportMetisGraph(tmp / "in", tmp / "g.graph").ok());
  std::ifstream f(tmp / "g.graph");
  int64_t n = 0, m = 0;
  f >> n >> m;
  CHECK(n == 300);
  CHECK(2 * m == static_cast<int64_t>(g.neighbors.size()));
}
