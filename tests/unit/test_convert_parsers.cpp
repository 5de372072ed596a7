// Parsers of `skiff convert`: edge lists, METIS, OGB; malformed inputs must name file and line.
#include <doctest/doctest.h>
#include <zlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "skiff/convert/edge_list.h"
#include "skiff/convert/line_reader.h"
#include "skiff/convert/metis.h"
#include "skiff/convert/ogb.h"
#include "tests/unit/test_text_files.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using namespace skiff::convert;
using skiff::testing::WriteGz;
using skiff::testing::WriteText;

namespace {

struct ReadEdges {
  std::vector<std::pair<std::string, std::string>> edges;
  Status status;
  bool skipped_header = false;
};
ReadEdges ReadAll(const std::string& path, EdgeListOptions options = {}) {
  ReadEdges r;
  auto reader = EdgeListReader::Open(path, options);
  if (!reader.ok()) {
    r.status = reader.status();
    return r;
  }
  std::string_view s, d;
  while ((*reader)->Next(&s, &d)) r.edges.emplace_back(std::string(s), std::string(d));
  r.status = (*reader)->status();
  r.skipped_header = (*reader)->skipped_header();
  return r;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}
}  // namespace

TEST_CASE("SplitFields handles blanks, tabs and CSV") {
  std::vector<std::string_view> f;
  SplitFields("  1\t 2   3 ", &f);
  REQUIRE(f.size() == 3);
  CHECK(f[0] == "1");
  CHECK(f[2] == "3");
  SplitFields("a,b,,c", &f);
  REQUIRE(f.size() == 4);
  CHECK(f[2] == "");
  SplitFields("1, 2", &f);
  REQUIRE(f.size() == 2);
  CHECK(f[1] == "2");
  int64_t v = 0;
  CHECK(ParseInt64("123", &v));
  CHECK(v == 123);
  CHECK_FALSE(ParseInt64("12x", &v));
  CHECK_FALSE(ParseInt64("", &v));
  CHECK_FALSE(ParseInt64("99999999999999999999", &v));
}

TEST_CASE("edge list: comments, separators, gz and a final line without newline") {
  testing::TempDir dir;
  const std::string text = "# SNAP comment\n% another\n\n0\t1\n1 2\n2,3\n  3   4 0.5\n4\t0";
  WriteText(dir / "a.tsv", text);
  WriteGz(dir / "a.tsv.gz", text);
  for (const std::string name : {"a.tsv", "a.tsv.gz"}) {
    CAPTURE(name);
    ReadEdges r = ReadAll(dir / name);
    REQUIRE(r.status.ok());
    REQUIRE(r.edges.size() == 5);
    CHECK(r.edges[2] == std::pair<std::string, std::string>{"2", "3"});
    CHECK(r.edges[3] == std::pair<std::string, std::string>{"3", "4"});  // weight ignored
    CHECK(r.edges[4] == std::pair<std::string, std::string>{"4", "0"});
    CHECK_FALSE(r.skipped_header);
  }
}

TEST_CASE("edge list: header detection") {
  testing::TempDir dir;
  WriteText(dir / "h.csv", "source,target\n1,2\n3,4\n");
  ReadEdges r = ReadAll(dir / "h.csv");
  REQUIRE(r.status.ok());
  CHECK(r.skipped_header);
  REQUIRE(r.edges.size() == 2);
  CHECK(r.edges[0].first == "1");

  // All-string IDs: the first line is data unless --header says otherwise.
  WriteText(dir / "s.tsv", "alice bob\nbob carol\n");
  r = ReadAll(dir / "s.tsv");
  REQUIRE(r.status.ok());
  CHECK_FALSE(r.skipped_header);
  REQUIRE(r.edges.size() == 2);
  CHECK(r.edges[0] == std::pair<std::string, std::string>{"alice", "bob"});
  CHECK(r.edges[1] == std::pair<std::string, std::string>{"bob", "carol"});
  EdgeListOptions yes;
  yes.header = HeaderMode::kYes;
  r = ReadAll(dir / "s.tsv", yes);
  REQUIRE(r.status.ok());
  REQUIRE(r.edges.size() == 1);
  CHECK(r.edges[0].first == "bob");
}

TEST_CASE("edge list: malformed lines name the file and line") {
  testing::TempDir dir;
  WriteText(dir / "one.tsv", "0 1\n1 2\n# c\n7\n");
  ReadEdges r = ReadAll(dir / "one.tsv");
  CHECK(r.status.code() == StatusCode::kCorruption);
  CHECK(Contains(r.status.message(), dir / "one.tsv"));
  CHECK(Contains(r.status.message(), "line 4"));
  CHECK(Contains(r.status.message(), "expected two node IDs"));

  WriteText(dir / "extra.tsv", "0 1\n1 2 3\n");
  EdgeListOptions strict;
  strict.extra_columns_are_errors = true;
  r = ReadAll(dir / "extra.tsv", strict);
  CHECK(r.status.code() == StatusCode::kCorruption);
  CHECK(Contains(r.status.message(), "line 2"));
  CHECK(Contains(r.status.message(), "exactly two columns"));
  CHECK(ReadAll(dir / "extra.tsv").status.ok());

  r = ReadAll(dir / "missing.tsv");
  CHECK(r.status.code() == StatusCode::kNotFound);
  CHECK(Contains(r.status.message(), "missing.tsv"));
}

TEST_CASE("line reader: a truncated .gz is an error, not a short file") {
  testing::TempDir dir;
  std::string text;
  for (int i = 0; i < 200000; ++i) text += std::to_string(i) + " " + std::to_string(i + 1) + "\n";
  WriteGz(dir / "full.gz", text);
  std::ifstream in(dir / "full.gz", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  WriteText(dir / "cut.gz", bytes.substr(0, bytes.size() / 2));
  ReadEdges full = ReadAll(dir / "full.gz");
  REQUIRE(full.status.ok());
  CHECK(full.edges.size() == 200000);
  ReadEdges cut = ReadAll(dir / "cut.gz");
  CHECK_FALSE(cut.status.ok());
  CHECK(cut.status.code() == StatusCode::kCorruption);
  CHECK(Contains(cut.status.message(), "cut.gz"));
  CHECK(Contains(cut.status.message(), "truncated"));
}

TEST_CASE("line reader: a BOM is skipped; binary and non-gzip compressed data are refused") {
  testing::TempDir dir;
  WriteText(dir / "bom.tsv",
            "\xEF\xBB\xBF"
            "0 1\n1 2\n");
  ReadEdges bom = ReadAll(dir / "bom.tsv");
  REQUIRE(bom.status.ok());
  REQUIRE(bom.edges.size() == 2);  // the first line is an edge, not a header
  CHECK(bom.edges[0] == std::make_pair(std::string("0"), std::string("1")));
  CHECK_FALSE(bom.skipped_header);

  WriteText(dir / "bin.tsv", std::string("0 1\n2 3\x00\x01 4\n", 13));
  ReadEdges bin = ReadAll(dir / "bin.tsv");
  CHECK(bin.status.code() == StatusCode::kCorruption);
  CHECK(Contains(bin.status.message(), "bin.tsv line 2: byte 0x00 at column 4 (NUL)"));
  // Binary data without NUL bytes: control characters give it away.
  WriteText(dir / "ctl.tsv", "0 1\n\x8f\x03 \xd2\x1b\x9a 7\n");
  ReadEdges ctl = ReadAll(dir / "ctl.tsv");
  CHECK(ctl.status.code() == StatusCode::kCorruption);
  CHECK(Contains(ctl.status.message(),
                 "ctl.tsv line 2: byte 0x03 at column 2 (a control character): this is binary"));
  WriteText(dir / "crlf.tsv", "0\t1\r\n1\t2\f\r\n");  // tabs, CR and form feed are text
  CHECK(ReadAll(dir / "crlf.tsv").status.ok());

  const std::pair<std::string, std::string> compressed[] = {
      {std::string("BZh91AY&SY\x00\x01", 12), "bzip2"},
      {std::string("\xFD"
                   "7zXZ\x00\x00",
                   8),
       "xz"},
      {std::string("\x28\xB5\x2F\xFD\x00", 5), "zstd"}};
  for (const auto& [bytes, name] : compressed) {
    CAPTURE(name);
    WriteText(dir / "edges.gz", bytes + "\n");
    ReadEdges r = ReadAll(dir / "edges.gz");
    CHECK(r.status.code() == StatusCode::kInvalidArgument);
    CHECK(Contains(r.status.message(), "edges.gz is " + name + "-compressed"));
  }
}

namespace {
struct MetisRead {
  std::vector<std::vector<int64_t>> adj;
  Status status;
};
MetisRead ReadMetis(const std::string& path) {
  MetisRead r;
  auto reader = MetisReader::Open(path);
  if (!reader.ok()) {
    r.status = reader.status();
    return r;
  }
  int64_t v;
  std::vector<int64_t> nbrs;
  while ((*reader)->NextVertex(&v, &nbrs)) {
    CHECK(v == static_cast<int64_t>(r.adj.size()));
    r.adj.push_back(nbrs);
  }
  r.status = (*reader)->status();
  return r;
}
}  // namespace

TEST_CASE("METIS: plain, weighted and isolated vertices") {
  testing::TempDir dir;
  // Triangle 1-2-3 plus isolated vertex 4 (an empty line).
  WriteText(dir / "t.graph", "% comment\n4 3\n2 3\n1 3\n% mid comment\n1 2\n\n");
  MetisRead r = ReadMetis(dir / "t.graph");
  REQUIRE(r.status.ok());
  REQUIRE(r.adj.size() == 4);
  CHECK(r.adj[0] == std::vector<int64_t>{1, 2});
  CHECK(r.adj[2] == std::vector<int64_t>{0, 1});
  CHECK(r.adj[3].empty());

  // fmt 011: one vertex weight, then (neighbour, edge weight) pairs.
  WriteText(dir / "w.graph", "3 2 011\n5 2 7\n1 1 7 3 9\n2 2 9\n");
  r = ReadMetis(dir / "w.graph");
  REQUIRE(r.status.ok());
  CHECK(r.adj[1] == std::vector<int64_t>{0, 2});
}

TEST_CASE("METIS: malformed files name the file and line") {
  testing::TempDir dir;
  struct Case {
    const char* text;
    const char* expect_line;
    const char* expect_what;
  } cases[] = {
      {"3 2\n2\n1 3\n", "line 3", "file ends after 2 vertex lines"},
      {"2 1\n2\n1\n1\n", "line 4", "more vertex lines"},
      {"3 2\n2\n1 4\n2\n", "line 3", "neighbour 4 is out of range"},
      {"3 2\n2\n1 x\n2\n", "line 3", "\"x\" is not an integer"},
      {"3 5\n2\n1 3\n2\n", "header declares 5 edges", "adjacency entries"},
      {"three 2\n", "line 1", "number of vertices"},
      {"3 2 011\n1 2\n", "line 2", "odd number"},
  };
  int index = 0;
  for (const auto& c : cases) {
    CAPTURE(c.text);
    const std::string path = dir / ("bad" + std::to_string(index++) + ".graph");
    WriteText(path, c.text);
    MetisRead r = ReadMetis(path);
    CHECK(r.status.code() == StatusCode::kCorruption);
    CHECK(Contains(r.status.message(), path));
    CHECK(Contains(r.status.message(), c.expect_line));
    CHECK(Contains(r.status.message(), c.expect_what));
  }
}

TEST_CASE("OGB: layout discovery, labels, index files and feature rows") {
  testing::TempDir dir;
  const std::string root = dir / "ogbn-toy";
  testing::WriteOgb(root, {.split = "random",
                           .edges = "0,1\n1,2\n2,3\n",
                           .num_nodes = "4\n",
                           .features = "0.5,1\n1.5,2\n2.5,3\n3.5,4\n",
                           .labels = "0\n1\nnan\n2\n",
                           .train = "3\n0\n",
                           .valid = "1\n",
                           .test = "2\n"});
  CHECK(IsOgbDirectory(root));
  auto layout = FindOgbLayout(root, "");
  REQUIRE(layout.ok());
  CHECK(layout->split_name == "random");
  auto n = ReadOgbNumNodes(layout->num_nodes_file);
  REQUIRE(n.ok());
  CHECK(*n == 4);
  auto labels = ReadOgbLabels(layout->node_label_file, 4);
  REQUIRE(labels.ok());
  CHECK(*labels == std::vector<int32_t>{0, 1, -1, 2});
  auto train = ReadOgbIndexFile(layout->train_file, 4);
  REQUIRE(train.ok());
  CHECK(*train == std::vector<int64_t>{0, 3});
  auto feats = CsvFloatRowReader::Open(layout->node_feat_file);
  REQUIRE(feats.ok());
  CHECK((*feats)->dim() == 2);
  float row[2];
  REQUIRE((*feats)->NextRow(row));
  CHECK(row[0] == 0.5f);

  CHECK(ReadOgbLabels(layout->node_label_file, 5).status().code() == StatusCode::kCorruption);
  auto out_of_range = ReadOgbIndexFile(layout->train_file, 3);
  CHECK(Contains(out_of_range.status().message(), "train.csv.gz line 1"));
  CHECK(Contains(out_of_range.status().message(), "out of range"));

  WriteGz(root + "/raw/node-feat.csv.gz", "0.5,1\n1.5\n");
  feats = CsvFloatRowReader::Open(root + "/raw/node-feat.csv.gz");
  REQUIRE(feats.ok());
  REQUIRE((*feats)->NextRow(row));
  CHECK_FALSE((*feats)->NextRow(row));
  CHECK(Contains((*feats)->status().message(), "node-feat.csv.gz line 2"));

  std::filesystem::create_directories(root + "/split/other");
  CHECK(FindOgbLayout(root, "").status().code() == StatusCode::kInvalidArgument);
  CHECK(FindOgbLayout(root, "random").ok());
  std::filesystem::remove(root + "/raw/edge.csv.gz");
  auto missing = FindOgbLayout(root, "random");
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(Contains(missing.status().message(), "raw/edge.csv.gz is missing"));
}
