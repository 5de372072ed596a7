// `skiff generate`: the model (permutation, degrees, homophily, features), the streamed dataset,
// determinism across thread counts, and option validation.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "skiff/format/dataset.h"
#include "skiff/generate/generator.h"
#include "skiff/generate/sbm_model.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using namespace skiff::generate;

namespace {

GenerateOptions SmallOptions(const std::string& out) {
  GenerateOptions o = *PresetOptions("small");
  o.output = out;
  return o;
}

std::string ReadWhole(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Nearest-centroid accuracy over `nodes` of rows `x` (N x F) against the model's unit centroids.
double NearestCentroidAccuracy(const std::vector<float>& x, const std::vector<int32_t>& labels,
                               const std::vector<float>& centroids, int64_t f, int64_t c) {
  int64_t correct = 0;
  const auto n = static_cast<int64_t>(labels.size());
  for (int64_t v = 0; v < n; ++v) {
    int64_t best = 0;
    double best_score = -1e300;
    for (int64_t cls = 0; cls < c; ++cls) {
      double dot = 0;
      for (int64_t k = 0; k < f; ++k) {
        dot += static_cast<double>(x[static_cast<size_t>(v * f + k)]) *
               centroids[static_cast<size_t>(cls * f + k)];
      }
      if (dot > best_score) {
        best_score = dot;
        best = cls;
      }
    }
    correct += best == labels[static_cast<size_t>(v)] ? 1 : 0;
  }
  return static_cast<double>(correct) / static_cast<double>(n);
}

}  // namespace

TEST_CASE("generate: the node permutation is a bijection") {
  for (uint64_t n : {1ull, 2ull, 3ull, 17ull, 1000ull, 4097ull, 65536ull}) {
    CAPTURE(n);
    NodePermutation perm(n, 42);
    std::vector<bool> hit(n, false);
    int64_t fixed_points = 0;
    for (uint64_t x = 0; x < n; ++x) {
      const uint64_t y = perm.Forward(x);
      REQUIRE(y < n);
      CHECK_FALSE(hit[y]);
      hit[y] = true;
      CHECK(perm.Inverse(y) == x);
      fixed_points += y == x ? 1 : 0;
    }
    if (n >= 1000) CHECK(fixed_points < static_cast<int64_t>(n / 100));
  }
}

TEST_CASE("generate: small preset writes a valid dataset with the asked structure") {
  testing::TempDir dir;
  auto opt = SmallOptions(dir / "small");
  auto summary = GenerateDataset(opt);
  REQUIRE_MESSAGE(summary.ok(), summary.status().ToString());
  auto ds = format::Dataset::Open(dir / "small");
  REQUIRE_MESSAGE(ds.ok(), ds.status().ToString());
  REQUIRE((*ds)->VerifyAll().ok());
  const auto& m = (*ds)->manifest();
  CHECK(m.num_nodes == 10000);
  CHECK(m.num_classes == 8);
  CHECK(m.feature_dim == 64);
  CHECK_FALSE(m.undirected);
  CHECK(m.num_edges == summary->num_edges);
  CHECK(m.train_count + m.valid_count + m.test_count == 10000);  // 0.6,0.2,0.2 covers everyone
  CHECK(std::abs(m.train_count - 6000) < 300);

  const auto offsets = *(*ds)->LoadOffsets();
  const auto neighbors = *(*ds)->LoadNeighbors();
  const auto labels = *(*ds)->LoadLabels();
  std::vector<int64_t> per_class(8, 0), in_degree(10000, 0);
  for (int32_t l : labels) {
    REQUIRE((l >= 0 && l < 8));
    ++per_class[static_cast<size_t>(l)];
  }
  for (int64_t count : per_class) CHECK(count == 1250);
  int64_t same = 0, bad_rows = 0, max_degree = 0;
  for (int64_t v = 0; v < 10000; ++v) {
    const auto begin = neighbors.begin() + offsets[static_cast<size_t>(v)];
    const auto end = neighbors.begin() + offsets[static_cast<size_t>(v) + 1];
    max_degree = std::max<int64_t>(max_degree, end - begin);
    if (!std::is_sorted(begin, end) || std::adjacent_find(begin, end) != end ||
        std::find(begin, end, v) != end) {
      ++bad_rows;
    }
    for (auto it = begin; it != end; ++it) {
      REQUIRE((*it >= 0 && *it < 10000));
      ++in_degree[static_cast<size_t>(*it)];
      same += labels[static_cast<size_t>(*it)] == labels[static_cast<size_t>(v)] ? 1 : 0;
    }
  }
  CHECK(bad_rows == 0);
  const double mean_degree = static_cast<double>(m.num_edges) / 10000.0;
  CHECK(mean_degree > 9.0);
  CHECK(mean_degree <= 10.1);
  const double homophily = static_cast<double>(same) / static_cast<double>(m.num_edges);
  CHECK(homophily == doctest::Approx(0.8).epsilon(0.03));
  CHECK(homophily == doctest::Approx(summary->edge_homophily));
  // Power-law degrees: hubs far above the mean, both out and in.
  CHECK(max_degree > 10 * mean_degree);
  CHECK(max_degree == summary->max_out_degree);
  CHECK(*std::max_element(in_degree.begin(), in_degree.end()) > 10 * mean_degree);
  // Splits: ascending, disjoint.
  std::set<int64_t> seen;
  for (const char* file : {format::kTrainFile, format::kValidFile, format::kTestFile}) {
    const auto split = *(*ds)->LoadSplit(file);
    CHECK(std::is_sorted(split.begin(), split.end()));
    for (int64_t v : split) CHECK(seen.insert(v).second);
  }
}

TEST_CASE("generate: aggregating neighbours classifies far better than features alone") {
  // What makes the dataset a GNN benchmark: nearest-centroid accuracy on a node's own features vs
  // on the mean of its own and its out-neighbours' features (what one GraphSAGE-mean layer sees).
  // Every preset's classes, dimension and degree, at 10,000 nodes to stay fast.
  for (const auto& preset : PresetNames()) {
    CAPTURE(preset);
    testing::TempDir dir;
    GenerateOptions opt = *PresetOptions(preset);
    opt.num_nodes = 10000;
    opt.output = dir / "d";
    REQUIRE(GenerateDataset(opt).ok());
    auto ds = format::Dataset::Open(dir / "d");
    REQUIRE(ds.ok());
    const auto x = *(*ds)->LoadFeatures();
    const auto labels = *(*ds)->LoadLabels();
    const auto offsets = *(*ds)->LoadOffsets();
    const auto neighbors = *(*ds)->LoadNeighbors();
    const int64_t f = opt.feature_dim;
    std::vector<float> mean(x.size(), 0.0f);
    for (int64_t v = 0; v < opt.num_nodes; ++v) {
      const int64_t begin = offsets[static_cast<size_t>(v)],
                    end = offsets[static_cast<size_t>(v) + 1];
      for (int64_t k = 0; k < f; ++k) {
        double sum = x[static_cast<size_t>(v * f + k)];
        for (int64_t e = begin; e < end; ++e) {
          sum += x[static_cast<size_t>(neighbors[static_cast<size_t>(e)] * f + k)];
        }
        mean[static_cast<size_t>(v * f + k)] =
            static_cast<float>(sum / static_cast<double>(1 + end - begin));
      }
    }
    const SbmModel model(opt);
    const double own = NearestCentroidAccuracy(x, labels, model.centroids(), f, opt.num_classes);
    const double aggregated =
        NearestCentroidAccuracy(mean, labels, model.centroids(), f, opt.num_classes);
    MESSAGE("preset " << preset << " (C=" << opt.num_classes << ", F=" << f
                      << ", D=" << opt.avg_degree << ") nearest-centroid accuracy: features alone "
                      << own << ", mean with out-neighbours " << aggregated);
    CHECK(own > 1.5 / static_cast<double>(opt.num_classes));  // features carry signal
    CHECK(own < 0.75);                                        // but are noisy
    CHECK(aggregated > own + 0.2);
  }
}

TEST_CASE("generate: byte-identical for a seed at any thread count, different across seeds") {
  testing::TempDir dir;
  auto base = SmallOptions("");
  base.num_nodes = 30000;  // several chunks, so threads really split the work
  base.feature_dtype = format::DType::kFloat16;
  std::vector<std::string> outs;
  for (int threads : {1, 2, 3}) {
    auto o = base;
    o.threads = threads;
    o.output = dir / ("t" + std::to_string(threads));
    auto s = GenerateDataset(o);
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
    outs.push_back(o.output);
  }
  auto other = base;
  other.seed = 2;
  other.output = dir / "seed2";
  REQUIRE(GenerateDataset(other).ok());
  for (const auto& entry : std::filesystem::directory_iterator(outs[0])) {
    const std::string name = entry.path().filename().string();
    CAPTURE(name);
    const std::string first = ReadWhole(entry.path().string());
    CHECK(first == ReadWhole(outs[1] + "/" + name));
    CHECK(first == ReadWhole(outs[2] + "/" + name));
    if (name == format::kNeighborsFile || name == format::kFeaturesFile) {
      CHECK(first != ReadWhole(other.output + "/" + name));
    }
  }
}

TEST_CASE("generate: per-class splits take exact counts of every class") {
  testing::TempDir dir;
  auto o = SmallOptions(dir / "pc");
  o.split = *convert::ParseSplitSpec("per-class:20,30", 1);
  auto s = GenerateDataset(o);
  REQUIRE(s.ok());
  auto ds = format::Dataset::Open(dir / "pc");
  REQUIRE(ds.ok());
  const auto labels = *(*ds)->LoadLabels();
  CHECK((*ds)->manifest().train_count == 160);
  CHECK((*ds)->manifest().valid_count == 240);
  CHECK((*ds)->manifest().test_count == 10000 - 400);
  std::vector<int64_t> train_per(8, 0);
  const auto train = *(*ds)->LoadSplit(format::kTrainFile);
  for (int64_t v : train) ++train_per[static_cast<size_t>(labels[static_cast<size_t>(v)])];
  for (int64_t count : train_per) CHECK(count == 20);
  std::set<int64_t> seen;
  for (const char* file : {format::kTrainFile, format::kValidFile, format::kTestFile}) {
    const auto split = *(*ds)->LoadSplit(file);
    for (int64_t v : split) CHECK(seen.insert(v).second);
  }
  CHECK(seen.size() == 10000);
}

TEST_CASE("generate: homophily and degree knobs move the measured values") {
  testing::TempDir dir;
  for (double h : {0.0, 0.5, 1.0}) {
    CAPTURE(h);
    auto o = SmallOptions(dir / ("h" + std::to_string(static_cast<int>(h * 10))));
    o.homophily = h;
    o.feature_dim = 4;
    auto s = GenerateDataset(o);
    REQUIRE(s.ok());
    CHECK(s->edge_homophily == doctest::Approx(h).epsilon(0.02));
  }
  auto o = SmallOptions(dir / "deg");
  o.avg_degree = 25;
  o.feature_dim = 4;
  auto s = GenerateDataset(o);
  REQUIRE(s.ok());
  CHECK(static_cast<double>(s->num_edges) / 10000.0 == doctest::Approx(25).epsilon(0.08));
}

TEST_CASE("generate: bad options and existing outputs are refused without writing") {
  testing::TempDir dir;
  auto bad = [&](auto edit, const std::string& expect) {
    auto o = SmallOptions(dir / "x");
    edit(o);
    auto s = GenerateDataset(o);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(s.status().message().find(expect) != std::string::npos, s.status().message());
    CHECK_FALSE(std::filesystem::exists(dir / "x"));
  };
  bad([](GenerateOptions& o) { o.num_nodes = 0; }, "--nodes");
  bad([](GenerateOptions& o) { o.num_classes = 0; }, "--classes");
  bad([](GenerateOptions& o) { o.homophily = 1.5; }, "--homophily");
  bad([](GenerateOptions& o) { o.power_law_exponent = 1.0; }, "--power-law-exponent");
  bad([](GenerateOptions& o) { o.avg_degree = -1; }, "--avg-degree");
  bad([](GenerateOptions& o) { o.feature_dim = 0; }, "--feature-dim");
  bad([](GenerateOptions& o) { o.feature_dtype = format::DType::kInt32; }, "--feature-dtype");
  CHECK(PresetOptions("huge").status().message().find("small, 1m, 10m, 100m") != std::string::npos);
  for (const auto& name : PresetNames()) CHECK(PresetOptions(name).ok());

  auto o = SmallOptions(dir / "exists");
  o.feature_dim = 2;
  REQUIRE(GenerateDataset(o).ok());
  CHECK(GenerateDataset(o).status().message().find("already exists") != std::string::npos);
  o.overwrite = true;
  CHECK(GenerateDataset(o).ok());
}
