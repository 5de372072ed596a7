// ConvertGraph end to end on small inputs: counts, ID mapping, OGB, and atomic output (a failure
// part-way leaves no output directory and no temporary directory).
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>

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
ConvertOptions Options(const std::string& in, const std::string& out) {
  ConvertOptions o;
  o.input = in;
  o.output = out;
  o.memory_bytes = 16ull << 20;
  return o;
}
// Names in `dir` (to check nothing half-written is left behind).
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}
}  // namespace

TEST_CASE("convert: dense integer edge list, undirected, no ID map") {
  testing::TempDir dir;
  WriteText(dir / "g.tsv", "# c\n0\t1\n1\t0\n1\t2\n2\t2\n3\t0\n");
  auto o = Options(dir / "g.tsv", dir / "ds");
  o.direction = Direction::kUndirected;
  auto s = ConvertGraph(o);
  REQUIRE(s.ok());
  CHECK_FALSE(s->id_map_used);
  CHECK(s->num_nodes == 4);
  CHECK(s->num_edges == 6);  // {0-1, 1-2, 0-3} both ways; the self-loop dropped
  CHECK(s->self_loops_dropped == 1);
  auto ds = format::Dataset::Open(dir / "ds");
  REQUIRE(ds.ok());
  const auto& m = (*ds)->manifest();
  CHECK(m.undirected);
  CHECK_FALSE(m.has_id_map);
  CHECK(m.feature_dim == 0);
  CHECK(m.num_classes == 0);
  CHECK(m.train_count + m.valid_count + m.test_count == 0);
  CHECK(*(*ds)->LoadNeighbors() == std::vector<int64_t>{1, 3, 0, 2, 1, 0});
  CHECK(*(*ds)->LoadLabels() == std::vector<int32_t>{-1, -1, -1, -1});
  CHECK((*ds)->VerifyAll().ok());
}

TEST_CASE("convert: string IDs go through the ID map; spilled and in-memory agree") {
  testing::TempDir dir;
  std::string text;
  for (int i = 0; i < 30000; ++i) {
    text += "n" + std::to_string(i * 31 % 5000) + "," + "n" + std::to_string(i * 17 % 4999) + "\n";
  }
  WriteText(dir / "s.csv", text);
  auto a = Options(dir / "s.csv", dir / "mem");
  a.direction = Direction::kUndirected;
  auto ra = ConvertGraph(a);
  REQUIRE(ra.ok());
  CHECK(ra->id_map_used);
  CHECK(ra->runs_spilled == 0);
  auto b = Options(dir / "s.csv", dir / "spill");
  b.direction = Direction::kUndirected;
  b.tmp_dir = dir.path();
  b.memory_bytes = 1ull << 20;  // runs of ~40k edges: 60k edges spill
  auto rb = ConvertGraph(b);
  REQUIRE(rb.ok());
  CHECK(rb->runs_spilled >= 1);  // the last run stays in memory, merged with the spilled ones
  CHECK(rb->num_nodes == ra->num_nodes);
  CHECK(rb->num_edges == ra->num_edges);
  auto da = format::Dataset::Open(dir / "mem");
  auto db = format::Dataset::Open(dir / "spill");
  REQUIRE(da.ok());
  REQUIRE(db.ok());
  CHECK(*(*da)->LoadOffsets() == *(*db)->LoadOffsets());
  CHECK(*(*da)->LoadNeighbors() == *(*db)->LoadNeighbors());
  auto ds = format::Dataset::Open(dir / "mem");
  REQUIRE(ds.ok());
  CHECK((*ds)->manifest().has_id_map);
  auto map = IdMap::OpenReadOnly(dir / "mem/idmap");
  REQUIRE(map.ok());
  CHECK((*map)->size() == ra->num_nodes);
  auto first = (*map)->RawId(0);
  REQUIRE(first.ok());
  CHECK(*first == "n0");  // first-seen order
  auto second = (*map)->Find("n0");
  REQUIRE(second.ok());
  CHECK(**second == 0);
  // The spill directory under --tmp-dir is gone.
  CHECK(Entries(dir.path()) == std::vector<std::string>{"mem", "s.csv", "spill"});
}

TEST_CASE("convert: integer IDs with gaps use the map in auto mode, identity in never mode") {
  testing::TempDir dir;
  WriteText(dir / "gap.txt", "10 20\n20 30\n");
  auto a = ConvertGraph(Options(dir / "gap.txt", dir / "auto"));
  REQUIRE(a.ok());
  CHECK(a->id_map_used);
  CHECK(a->num_nodes == 3);
  auto o = Options(dir / "gap.txt", dir / "never");
  o.id_map = IdMapMode::kNever;
  auto n = ConvertGraph(o);
  REQUIRE(n.ok());
  CHECK_FALSE(n->id_map_used);
  CHECK(n->num_nodes == 31);
  CHECK(n->num_edges == 2);
}

TEST_CASE("convert: OGB raw layout with features, labels and the given split") {
  testing::TempDir dir;
  const std::string root = dir / "ogbn-toy";
  testing::WriteOgb(root, {.edges = "0,1\n1,2\n2,3\n3,0\n",
                           .num_nodes = "5\n",
                           .features = "0,1,2\n1,2,3\n2,3,4\n3,4,5\n4,5,6\n",
                           .labels = "0\n1\n2\n1\n0\n",
                           .train = "0\n1\n",
                           .valid = "2\n",
                           .test = "4\n3\n"});
  auto o = Options(root, dir / "ds");
  o.feature_dtype = format::DType::kFloat16;
  auto s = ConvertGraph(o);
  REQUIRE(s.ok());
  CHECK(s->format == InputFormat::kOgb);
  CHECK(s->num_nodes == 5);
  CHECK(s->num_edges == 4);
  CHECK(s->feature_dim == 3);
  CHECK(s->num_classes == 3);
  auto ds = format::Dataset::Open(dir / "ds");
  REQUIRE(ds.ok());
  CHECK(*(*ds)->LoadSplit(format::kTestFile) == std::vector<int64_t>{3, 4});
  auto feats = (*ds)->LoadFeatures();
  REQUIRE(feats.ok());
  CHECK((*feats)[3 * 4 + 2] == 6.0f);
  CHECK((*ds)->manifest().feature_dtype == format::DType::kFloat16);

  // A missing file, or an edge out of range, fails with the file and line; nothing is written.
  WriteGz(root + "/raw/edge.csv.gz", "0,1\n1,7\n");
  auto bad = ConvertGraph(Options(root, dir / "bad"));
  CHECK(bad.status().code() == StatusCode::kCorruption);
  CHECK(bad.status().message().find("edge.csv.gz line 2") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "bad"));
}

TEST_CASE("convert: an error part-way leaves no output directory") {
  testing::TempDir dir;
  std::string text;
  for (int i = 0; i < 100000; ++i) text += std::to_string(i) + " " + std::to_string(i + 1) + "\n";
  text += "5 oops 7\n";  // non-integer on the last line: auto mode retries with the map...
  text += "1\n";         // ...and then this line has one field
  WriteText(dir / "bad.txt", text);
  auto s = ConvertGraph(Options(dir / "bad.txt", dir / "out"));
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("bad.txt line 100002") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "out"));
  CHECK(Entries(dir.path()) == std::vector<std::string>{"bad.txt"});  // no out.tmp-*

  // METIS with a wrong edge count: found only at the end of the file.
  WriteText(dir / "g.graph", "3 4\n2 3\n1 3\n1 2\n");
  auto m = ConvertGraph(Options(dir / "g.graph", dir / "m"));
  CHECK(m.status().code() == StatusCode::kCorruption);
  CHECK(Entries(dir.path()) == std::vector<std::string>{"bad.txt", "g.graph"});

  // An output whose parent does not exist, and an existing output without --overwrite.
  WriteText(dir / "ok.txt", "0 1\n");
  CHECK_FALSE(ConvertGraph(Options(dir / "ok.txt", dir / "no/such/dir")).ok());
  REQUIRE(ConvertGraph(Options(dir / "ok.txt", dir / "ok")).ok());
  auto again = ConvertGraph(Options(dir / "ok.txt", dir / "ok"));
  CHECK(again.status().code() == StatusCode::kInvalidArgument);
  auto o = Options(dir / "ok.txt", dir / "ok");
  o.overwrite = true;
  CHECK(ConvertGraph(o).ok());
}

TEST_CASE("convert: format detection") {
  testing::TempDir dir;
  WriteText(dir / "a.graph", "");
  WriteText(dir / "a.metis.gz", "");
  WriteText(dir / "a.npz", "");
  WriteText(dir / "a.tsv", "");
  fs::create_directories(dir / "ogb/raw");
  CHECK(*DetectInputFormat(dir / "a.graph") == InputFormat::kMetis);
  CHECK(*DetectInputFormat(dir / "a.metis.gz") == InputFormat::kMetis);
  CHECK(*DetectInputFormat(dir / "a.npz") == InputFormat::kNpz);
  CHECK(*DetectInputFormat(dir / "a.tsv") == InputFormat::kEdgeList);
  CHECK(*DetectInputFormat(dir / "ogb") == InputFormat::kOgb);
  CHECK(DetectInputFormat(dir / "nope").status().code() == StatusCode::kNotFound);
}

TEST_CASE("convert: edge list with .npy features and labels; row count must equal N") {
  testing::TempDir dir;
  std::string text;
  for (int v = 0; v < 100; ++v)
    text += std::to_string(v) + " " + std::to_string((v + 1) % 100) + "\n";
  WriteText(dir / "ring.txt", text);
  std::vector<float> feats(100 * 4);
  for (size_t i = 0; i < feats.size(); ++i) feats[i] = static_cast<float>(i);
  std::vector<int64_t> labels(100);
  for (int v = 0; v < 100; ++v) labels[v] = v % 5 == 4 ? -1 : v % 4;
  WriteNpy(dir / "x.npy", "<f4", {100, 4}, feats.data(), feats.size() * 4);
  WriteNpy(dir / "y.npy", "<i8", {100}, labels.data(), labels.size() * 8);
  WriteNpy(dir / "x99.npy", "<f4", {99, 4}, feats.data(), 99 * 16);
  auto o = Options(dir / "ring.txt", dir / "ds");
  o.features_npy = dir / "x.npy";
  o.labels_npy = dir / "y.npy";
  o.split.train_fraction = 0.5;
  o.split.valid_fraction = 0.25;
  o.split.test_fraction = 0.25;
  auto s = ConvertGraph(o);
  REQUIRE(s.ok());
  CHECK(s->feature_dim == 4);
  CHECK(s->num_classes == 4);
  CHECK(s->train_count + s->valid_count + s->test_count == 80);  // unlabelled nodes excluded
  auto ds = format::Dataset::Open(dir / "ds");
  REQUIRE(ds.ok());
  auto x = (*ds)->LoadFeatures();
  REQUIRE(x.ok());
  CHECK(*x == feats);
  auto y = (*ds)->LoadLabels();
  REQUIRE(y.ok());
  CHECK((*y)[4] == -1);
  CHECK((*y)[7] == 3);

  o.output = dir / "bad";
  o.features_npy = dir / "x99.npy";
  auto bad = ConvertGraph(o);
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message().find("x99.npy: 99 feature rows, expected one per node (100") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(dir / "bad"));
}

TEST_CASE("convert: non-finite features, or features beyond float16, are refused naming the node") {
  testing::TempDir dir;
  std::string text;
  for (int v = 0; v < 10; ++v)
    text += std::to_string(v) + " " + std::to_string((v + 1) % 10) + "\n";
  WriteText(dir / "ring.txt", text);
  const struct {
    float value;
    bool half;
    const char* message;
  } cases[] = {
      {std::numeric_limits<float>::quiet_NaN(), false,
       "node 6, column 2, is nan: features must be finite"},
      {-std::numeric_limits<float>::infinity(), false,
       "node 6, column 2, is -inf: features must be finite"},
      {70000.0f, true, "node 6, column 2, is 70000, outside float16's range"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.message);
    std::vector<float> feats(10 * 3, 1.0f);
    feats[6 * 3 + 2] = c.value;
    WriteNpy(dir / "x.npy", "<f4", {10, 3}, feats.data(), feats.size() * 4);
    auto o = Options(dir / "ring.txt", dir / "ds");
    o.features_npy = dir / "x.npy";
    if (c.half) o.feature_dtype = format::DType::kFloat16;
    auto s = ConvertGraph(o);
    CHECK(s.status().code() == StatusCode::kInvalidArgument);
    CHECK(s.status().message().find(c.message) != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "ds"));
  }
  // 70000 is fine as float32.
  auto o = Options(dir / "ring.txt", dir / "ds");
  o.features_npy = dir / "x.npy";
  CHECK(ConvertGraph(o).ok());
}

TEST_CASE("convert: a METIS file that lists an edge at one end only is stored symmetric") {
  testing::TempDir dir;
  // 3 vertices, 2 declared edges, 4 entries -- the right count, but 1->2, 1->3, 2->3, 3->1: the
  // edges 1-2 and 2-3 appear at one end only.
  WriteText(dir / "asym.graph", "3 2\n2 3\n3\n1\n");
  auto s = ConvertGraph(Options(dir / "asym.graph", dir / "a"));
  REQUIRE_MESSAGE(s.ok(), s.status().ToString());
  auto ds = format::Dataset::Open(dir / "a");
  REQUIRE(ds.ok());
  CHECK((*ds)->manifest().undirected);
  auto offsets = (*ds)->LoadOffsets();
  auto neighbors = (*ds)->LoadNeighbors();
  REQUIRE((offsets.ok() && neighbors.ok()));
  // Every vertex is adjacent to both others, in both directions.
  CHECK(*offsets == std::vector<int64_t>{0, 2, 4, 6});
  CHECK(*neighbors == std::vector<int64_t>{1, 2, 0, 2, 0, 1});

  // A well-formed (symmetric) file is unchanged by it.
  WriteText(dir / "sym.graph", "3 2\n2\n1 3\n2\n");
  auto t = ConvertGraph(Options(dir / "sym.graph", dir / "s"));
  REQUIRE(t.ok());
  auto sym = format::Dataset::Open(dir / "s");
  REQUIRE(sym.ok());
  CHECK((*sym)->manifest().num_edges == 4);
}

namespace {
// Serves `bytes` through a named pipe at `path` from a thread, as `zcat file | skiff convert
// /dev/stdin` would: the converter can read it once, and cannot seek or stat its size.
class FifoFeeder {
 public:
  FifoFeeder(const std::string& path, std::string bytes) : path_(path), bytes_(std::move(bytes)) {
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    thread_ = std::thread([this] {
      std::ofstream out(path_, std::ios::binary);
      out.write(bytes_.data(), static_cast<std::streamsize>(bytes_.size()));
    });
  }
  ~FifoFeeder() { thread_.join(); }

 private:
  const std::string path_;
  const std::string bytes_;
  std::thread thread_;
};

void CheckSameGraph(const std::string& a, const std::string& b) {
  auto da = format::Dataset::Open(a);
  auto db = format::Dataset::Open(b);
  REQUIRE(da.ok());
  REQUIRE(db.ok());
  CHECK((*da)->manifest().num_nodes == (*db)->manifest().num_nodes);
  CHECK((*da)->manifest().has_id_map == (*db)->manifest().has_id_map);
  for (const char* file : {"graph.offsets", "graph.neighbors"}) {
    CAPTURE(file);
    CHECK(ReadFileBytes(a + "/" + file) == ReadFileBytes(b + "/" + file));
  }
}
}  // namespace

TEST_CASE("convert: piped and gzip-piped input, string or dense IDs, converts as the file does") {
  testing::TempDir dir;
  std::string strings, dense;
  for (int64_t i = 0; i < 150000; ++i) {
    strings += "acct:" + std::to_string(i * 7919 % 6007) +
               "\tacct:" + std::to_string(i * 104729 % 5003) + "\n";
    if (i < 40000)
      dense += std::to_string(i * 7919 % 3000) + " " + std::to_string(i * 31 % 3000) + "\n";
  }
  for (const auto& [name, text] : {std::pair{"strings", strings}, std::pair{"dense", dense}}) {
    CAPTURE(name);
    const std::string file = dir / (std::string(name) + ".tsv");
    WriteText(file, text);
    WriteGz(file + ".gz", text);
    auto o = Options(file, dir / (std::string(name) + "-file"));
    REQUIRE(ConvertGraph(o).ok());
    for (const std::string& source : {file, file + ".gz"}) {
      for (const uint64_t memory : {uint64_t{16} << 20, uint64_t{1} << 20}) {
        CAPTURE(source);
        CAPTURE(memory);
        const std::string fifo = dir / "pipe";
        const std::string out = dir / "piped";
        Result<ConvertSummary> s = Status::Internal("not run");
        {
          FifoFeeder feeder(fifo, ReadFileBytes(source));
          auto p = Options(fifo, out);
          p.memory_bytes = memory;
          s = ConvertGraph(p);
        }
        REQUIRE_MESSAGE(s.ok(), s.status().ToString());
        CHECK(s->id_map_used == (std::string(name) == "strings"));
        if (memory < (2u << 20) && s->id_map_used) CHECK(s->id_runs_spilled >= 2);
        CheckSameGraph(dir / (std::string(name) + "-file"), out);
        fs::remove(fifo);
        fs::remove_all(out);
      }
    }
  }
}

TEST_CASE("convert: OGB splits that share a node are refused, as readers would refuse them") {
  testing::TempDir dir;
  const std::string root = dir / "ogbn-toy";
  testing::WriteOgb(root, {.edges = "0,1\n1,2\n2,3\n3,0\n",
                           .num_nodes = "5\n",
                           .features = "0\n1\n2\n3\n4\n",
                           .labels = "0\n1\n2\n1\n0\n",
                           .train = "0\n1\n",
                           .valid = "2\n1\n",
                           .test = "4\n"});
  auto s = ConvertGraph(Options(root, dir / "ds"));
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == StatusCode::kInvalidArgument);
  CHECK_MESSAGE(s.status().message().find("train.csv.gz and ") != std::string::npos,
                s.status().message());
  CHECK(s.status().message().find("valid.csv.gz share 1 nodes (first: 1)") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "ds"));
}

TEST_CASE("convert: raw IDs are compared byte for byte in every ID-mapping mode") {
  testing::TempDir dir;
  // "2" and "02" are two IDs: four nodes whichever mode maps them.
  WriteText(dir / "ids.txt", "0 1\n1 2\n2 02\n");
  for (const IdMapMode mode : {IdMapMode::kAuto, IdMapMode::kAlways}) {
    auto o = Options(dir / "ids.txt", dir / ("ds" + std::to_string(static_cast<int>(mode))));
    o.id_map = mode;
    auto s = ConvertGraph(o);
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
    CHECK(s->num_nodes == 4);
    CHECK(s->id_map_used);
  }
  // Without a map "02" cannot be a node of its own: refused, naming the line.
  auto o = Options(dir / "ids.txt", dir / "never");
  o.id_map = IdMapMode::kNever;
  auto never = ConvertGraph(o);
  REQUIRE_FALSE(never.ok());
  CHECK_MESSAGE(never.status().message().find("line 3") != std::string::npos,
                never.status().message());
  CHECK(never.status().message().find("\"02\"") != std::string::npos);
  // Canonical integers stay the identity in every mode.
  WriteText(dir / "dense.txt", "0 1\n1 2\n2 0\n");
  for (const IdMapMode mode : {IdMapMode::kAuto, IdMapMode::kAlways, IdMapMode::kNever}) {
    auto d = Options(dir / "dense.txt", dir / ("dense" + std::to_string(static_cast<int>(mode))));
    d.id_map = mode;
    auto s = ConvertGraph(d);
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
    CHECK(s->num_nodes == 3);
    if (mode != IdMapMode::kAlways) CHECK_FALSE(s->id_map_used);
  }
}

TEST_CASE("convert: a label too large for a class is refused naming the file, node and value") {
  testing::TempDir dir;
  WriteText(dir / "g.txt", "0 1\n1 2\n");
  const std::vector<int64_t> labels{0, 2147483647, 1};
  WriteNpy(dir / "labels.npy", "<i8", {3}, labels.data(), labels.size() * 8);
  auto o = Options(dir / "g.txt", dir / "ds");
  o.labels_npy = dir / "labels.npy";
  auto s = ConvertGraph(o);
  REQUIRE_FALSE(s.ok());
  CHECK_MESSAGE(
      s.status().message().find("labels.npy: label of node 1 is 2147483647") != std::string::npos,
      s.status().message());
  CHECK(s.status().message().find("-2147483648") == std::string::npos);
}
