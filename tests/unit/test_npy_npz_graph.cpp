// ConvertNpzGraph: hand-built archives in the cora.npz layout, malformed archives, and the shared
// cora.npz itself (counts from its README).
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>

#include "skiff/convert/npz_graph.h"
#include "tests/unit/test_npy_util.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using namespace skiff::testing;

namespace {

// A 4-node graph with an unsorted row, a duplicate edge and a self loop:
//   0 -> 2, 1, 2      1 -> 1 (self)      2 -> 3      3 -> (none)
// CSR attributes (4 x 3) and int64 labels {0, 1, -1, 1}.
std::map<std::string, std::string> TinyGraph() {
  return {
      {"adj_data", NpyBytes("<f4", "(5,)", Raw<float>({1, 1, 1, 1, 1}))},
      {"adj_indices", NpyBytes("<i4", "(5,)", Raw<int32_t>({2, 1, 2, 1, 3}))},
      {"adj_indptr", NpyBytes("<i4", "(5,)", Raw<int32_t>({0, 3, 4, 5, 5}))},
      {"adj_shape", NpyBytes("<i8", "(2,)", Raw<int64_t>({4, 4}))},
      {"attr_data", NpyBytes("<f4", "(4,)", Raw<float>({1.5f, 2.0f, -1.0f, 4.0f}))},
      {"attr_indices", NpyBytes("<i4", "(4,)", Raw<int32_t>({0, 2, 1, 2}))},
      {"attr_indptr", NpyBytes("<i4", "(5,)", Raw<int32_t>({0, 2, 3, 3, 4}))},
      {"attr_shape", NpyBytes("<i8", "(2,)", Raw<int64_t>({4, 3}))},
      {"labels", NpyBytes("<i8", "(4,)", Raw<int64_t>({0, 1, -1, 1}))},
      {"class_names", NpyBytes("<U3", "(2,)", std::string(24, '\0'))},  // ignored
  };
}

convert::NpzGraphOptions Options(const std::string& in, const std::string& out) {
  convert::NpzGraphOptions o;
  o.input = in;
  o.output = out;
  o.split = *convert::ParseSplitSpec("0.34,0.33,0.33", 1);
  return o;
}

}  // namespace

TEST_CASE("npz graph: directed conversion sorts, de-duplicates and drops self loops") {
  TempDir dir;
  const auto entries = TinyGraph();
  WriteNpz(dir / "tiny.npz", entries, true);
  auto opt = Options(dir / "tiny.npz", dir / "out");
  const Status st = convert::ConvertNpzGraph(opt);
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  auto ds = format::Dataset::Open(dir / "out");
  REQUIRE_MESSAGE(ds.ok(), ds.status().ToString());
  const auto& m = (*ds)->manifest();
  CHECK(m.num_nodes == 4);
  CHECK(m.num_edges == 3);
  CHECK_FALSE(m.undirected);
  CHECK(m.feature_dim == 3);
  CHECK(m.num_classes == 2);
  CHECK(m.name == "tiny");
  CHECK(*(*ds)->LoadOffsets() == std::vector<int64_t>{0, 2, 2, 3, 3});
  CHECK(*(*ds)->LoadNeighbors() == std::vector<int64_t>{1, 2, 3});
  CHECK(*(*ds)->LoadFeatures() ==
        std::vector<float>{1.5f, 0, 2.0f, 0, -1.0f, 0, 0, 0, 0, 0, 0, 4.0f});
  CHECK(*(*ds)->LoadLabels() == std::vector<int32_t>{0, 1, -1, 1});
  // Only the 3 labelled nodes are split.
  CHECK(m.train_count + m.valid_count + m.test_count == 3);
  CHECK((*ds)->VerifyAll().ok());
}

TEST_CASE("npz graph: undirected adds reverse edges, keeps self loops on request, writes float16") {
  TempDir dir;
  WriteNpz(dir / "tiny.npz", TinyGraph(), false);
  auto opt = Options(dir / "tiny.npz", dir / "out");
  opt.undirected = true;
  opt.keep_self_loops = true;
  opt.feature_dtype = format::DType::kFloat16;
  const Status st = convert::ConvertNpzGraph(opt);
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  auto ds = format::Dataset::Open(dir / "out");
  REQUIRE(ds.ok());
  CHECK((*ds)->manifest().undirected);
  CHECK((*ds)->manifest().feature_dtype == format::DType::kFloat16);
  // 0:{1,2} 1:{0,1} 2:{0,3} 3:{2}
  CHECK(*(*ds)->LoadOffsets() == std::vector<int64_t>{0, 2, 4, 6, 7});
  CHECK(*(*ds)->LoadNeighbors() == std::vector<int64_t>{1, 2, 0, 1, 0, 3, 2});
  CHECK((*(*ds)->LoadFeatures())[0] == 1.5f);
}

TEST_CASE(
    "npz graph: idx_train and idx_val give the splits, dense attr_matrix, CSR one-hot labels") {
  TempDir dir;
  auto entries = TinyGraph();
  entries.erase("attr_data");
  entries.erase("attr_indices");
  entries.erase("attr_indptr");
  entries.erase("attr_shape");
  entries.erase("labels");
  entries["attr_matrix"] = NpyBytes("<f8", "(4, 2)", Raw<double>({1, 2, 3, 4, 5, 6, 7, 8}));
  entries["labels_data"] = NpyBytes("<f4", "(3,)", Raw<float>({1, 1, 1}));
  entries["labels_indices"] = NpyBytes("<i4", "(3,)", Raw<int32_t>({2, 0, 1}));
  entries["labels_indptr"] = NpyBytes("<i4", "(5,)", Raw<int32_t>({0, 1, 1, 2, 3}));
  entries["labels_shape"] = NpyBytes("<i8", "(2,)", Raw<int64_t>({4, 3}));
  entries["idx_train"] = NpyBytes("<i8", "(2,)", Raw<int64_t>({3, 0}));
  entries["idx_val"] = NpyBytes("<i8", "(1,)", Raw<int64_t>({2}));
  WriteNpz(dir / "g.npz", entries, true);
  const Status st = convert::ConvertNpzGraph(Options(dir / "g.npz", dir / "out"));
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  auto ds = format::Dataset::Open(dir / "out");
  REQUIRE(ds.ok());
  CHECK((*ds)->manifest().feature_dim == 2);
  CHECK((*ds)->manifest().num_classes == 3);
  CHECK(*(*ds)->LoadLabels() == std::vector<int32_t>{2, -1, 0, 1});
  CHECK(*(*ds)->LoadFeatures() == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(*(*ds)->LoadSplit(format::kTrainFile) == std::vector<int64_t>{0, 3});
  CHECK(*(*ds)->LoadSplit(format::kValidFile) == std::vector<int64_t>{2});
  CHECK((*ds)->manifest().test_count == 0);
}

TEST_CASE("npz graph: malformed archives fail with a clear error and leave no dataset") {
  TempDir dir;
  struct Case {
    std::string what;
    std::function<void(std::map<std::string, std::string>&)> edit;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"feature rows != nodes",
       [](auto& e) {
         e["attr_shape"] = NpyBytes("<i8", "(2,)", Raw<int64_t>({5, 3}));
       },
       "one per node"},
      {"neighbour out of range",
       [](auto& e) {
         e["adj_indices"] = NpyBytes("<i4", "(5,)", Raw<int32_t>({2, 1, 9, 1, 3}));
       },
       "adj_indices.npy: element 2 is node 9"},
      {"labels of the wrong length",
       [](auto& e) {
         e["labels"] = NpyBytes("<i8", "(3,)", Raw<int64_t>({0, 1, 1}));
       },
       "labels.npy: shape mismatch"},
      {"no labels", [](auto& e) { e.erase("labels"); }, "lacks labels"},
      {"indptr not ending at nnz",
       [](auto& e) {
         e["adj_indptr"] = NpyBytes("<i4", "(5,)", Raw<int32_t>({0, 3, 4, 5, 4}));
       },
       "adj_indptr.npy"},
      {"string labels",
       [](auto& e) { e["labels"] = NpyBytes("<U1", "(4,)", std::string(16, 'a')); },
       "unsupported dtype"},
      {"truncated attribute values",
       [](auto& e) {
         e["attr_data"] = NpyBytes("<f4", "(4,)", Raw<float>({1, 2}));
       },
       "attr_data.npy: truncated"},
      {"label below -1",
       [](auto& e) {
         e["labels"] = NpyBytes("<i8", "(4,)", Raw<int64_t>({0, 1, -3, 1}));
       },
       "element 2 is label -3"},
      {"overlapping given splits",
       [](auto& e) {
         e["idx_train"] = NpyBytes("<i8", "(2,)", Raw<int64_t>({0, 1}));
         e["idx_val"] = NpyBytes("<i8", "(2,)", Raw<int64_t>({1, 2}));
         e["idx_test"] = NpyBytes("<i8", "(1,)", Raw<int64_t>({3}));
       },
       "idx_train.npy and "},
      {"overlapping given splits, named",
       [](auto& e) {
         e["idx_train"] = NpyBytes("<i8", "(2,)", Raw<int64_t>({0, 1}));
         e["idx_val"] = NpyBytes("<i8", "(2,)", Raw<int64_t>({1, 2}));
         e["idx_test"] = NpyBytes("<i8", "(1,)", Raw<int64_t>({3}));
       },
       "idx_val.npy share 1 nodes (first: 1); splits must be disjoint"},
      {"attribute column out of range",
       [](auto& e) {
         e["attr_indices"] = NpyBytes("<i4", "(4,)", Raw<int32_t>({0, 7, 1, 2}));
       },
       "column 7"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto entries = TinyGraph();
    c.edit(entries);
    WriteNpz(dir / "bad.npz", entries, true);
    const Status st = convert::ConvertNpzGraph(Options(dir / "bad.npz", dir / "out"));
    REQUIRE_FALSE(st.ok());
    CHECK_MESSAGE(st.message().find(c.expect) != std::string::npos, st.message());
    CHECK(st.message().find("bad.npz") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir / "out"));
    // No temporary directory is left behind either.
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      CHECK(entry.path().filename().string().rfind("out", 0) != 0);
    }
  }
  // Not an archive at all.
  WriteBytes(dir / "text.npz", "hello");
  CHECK_FALSE(convert::ConvertNpzGraph(Options(dir / "text.npz", dir / "out")).ok());
}

TEST_CASE("npz graph: the shared cora.npz converts to the counts in its README") {
  const std::string datasets = DatasetsDir();
  const std::string path = datasets + "/cora.npz";
  if (datasets.empty() || !std::filesystem::exists(path)) {
    MESSAGE("skipped: cora.npz not found");
    return;
  }
  TempDir dir;
  convert::NpzGraphOptions opt;
  opt.input = path;
  opt.output = dir / "cora";
  opt.undirected = true;
  opt.split = *convert::ParseSplitSpec("per-class:20,30", 1);
  const Status st = convert::ConvertNpzGraph(opt);
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  auto ds = format::Dataset::Open(dir / "cora");
  REQUIRE(ds.ok());
  const auto& m = (*ds)->manifest();
  CHECK(m.num_nodes == 2708);
  CHECK(m.num_edges == 10556);
  CHECK(m.feature_dim == 1433);
  CHECK(m.num_classes == 7);
  CHECK(m.train_count == 140);
  CHECK(m.valid_count == 210);
  CHECK(m.test_count == 2708 - 350);
  // Bag-of-words features are 0/1; every row has at least one word.
  const auto features = *(*ds)->LoadFeatures();
  int64_t nonzero = 0, not_binary = 0;
  for (float x : features) {
    not_binary += (x != 0.0f && x != 1.0f) ? 1 : 0;
    nonzero += x != 0.0f ? 1 : 0;
  }
  CHECK(not_binary == 0);
  CHECK(nonzero == 49216);
  CHECK((*ds)->VerifyAll().ok());
}
