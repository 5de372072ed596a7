// A rank's shard of a partitioned dataset (format::WriteShard): it opens and verifies as a dataset;
// its range reads -- the graph rows and feature rows the owned-partition rows load in memory, and
// the partitions and fine reads pipeline::DiskOwnedRows makes through the buffer pool with
// O_DIRECT -- are bitwise the whole dataset's; reads that need the whole dataset or another rank's
// nodes are refused, naming the shard; a corrupt block is reported; a window edited out of step
// with the rank's nodes is refused at open; a dataset that cannot be sharded writes nothing.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "skiff/format/dataset.h"
#include "skiff/format/shard.h"
#include "skiff/pipeline/disk_owned_rows.h"
#include "skiff/train/node_ranges.h"
#include "skiff/train/owned_rows.h"
#include "tests/unit/partitioned_fixture.h"
#include "tests/unit/test_util.h"

using namespace skiff;

namespace {

constexpr int kRanks = 3;

// The whole dataset is `dataset`.
using Sharded = testing::OwnedFixture;

// 3000 nodes in 8 GREM partitions, cut for 3 ranks; the shards in dir/shard-<r>.
Sharded MakeSharded(const std::string& dir) {
  Sharded s = testing::MakeOwnedFixture(dir, kRanks);
  for (int r = 0; r < kRanks; ++r) {
    const Status st = format::WriteShard(*s.dataset, s.ranges->first(), r,
                                         dir + "/shard-" + std::to_string(r), false);
    REQUIRE_MESSAGE(st.ok(), st.ToString());
  }
  return s;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The rows of `nodes` from `rows`, row-major.
std::vector<float> RowsOf(const train::OwnedRows& rows, const std::vector<int64_t>& nodes) {
  const auto dim = static_cast<size_t>(rows.feature_dim());
  std::vector<float> out(nodes.size() * dim);
  std::vector<float*> to(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) to[i] = out.data() + i * dim;
  REQUIRE(rows.RowsTo(nodes, to).ok());
  return out;
}

// Every node of the range, each row twice, in a scrambled order.
std::vector<int64_t> Scrambled(int64_t begin, int64_t end) {
  std::vector<int64_t> nodes;
  for (int64_t v = begin; v < end; ++v) nodes.push_back(begin + (v - begin) * 7919 % (end - begin));
  nodes.insert(nodes.end(), nodes.rbegin(), nodes.rend());
  return nodes;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("dataset shard: each rank's range reads bitwise as the whole dataset's") {
  testing::TempDir dir;
  Sharded s = MakeSharded(dir.path());
  const std::string whole_sum = s.dataset->manifest().Checksum();
  for (int r = 0; r < kRanks; ++r) {
    CAPTURE(r);
    auto shard = format::Dataset::Open(dir / ("shard-" + std::to_string(r)));
    REQUIRE_MESSAGE(shard.ok(), shard.status().ToString());
    const format::Dataset& ds = **shard;
    REQUIRE(ds.is_shard());
    const format::ShardInfo& info = *ds.manifest().shard;
    CHECK(info.rank == r);
    CHECK(info.ranks() == kRanks);
    CHECK(info.dataset_xxh3 == whole_sum);
    CHECK(ds.begin_node() == s.ranges->begin(r));
    CHECK(ds.end_node() == s.ranges->end(r));
    CHECK(ds.manifest().num_nodes == s.dataset->manifest().num_nodes);
    const Status verified = ds.VerifyAll();
    CHECK_MESSAGE(verified.ok(), verified.ToString());
    // The whole dataset's labels and splits.
    CHECK(ds.LoadLabels().value() == s.dataset->LoadLabels().value());
    CHECK(ds.LoadSplit(format::kTrainFile).value() == s.splits.train);
    CHECK(ds.LoadOldIds().value() == s.dataset->LoadOldIds().value());
    // The range, loaded whole, and read through the buffer pool.
    const int64_t b = ds.begin_node(), e = ds.end_node();
    auto want = train::InMemoryOwnedRows::Load(*s.dataset, b, e);
    auto got = train::InMemoryOwnedRows::Load(ds, b, e);
    REQUIRE(want.ok());
    REQUIRE_MESSAGE(got.ok(), got.status().ToString());
    const std::vector<int64_t> nodes = Scrambled(b, e);
    std::vector<int64_t> wi, wn, gi, gn;
    REQUIRE((*want)->Lists(nodes, &wi, &wn).ok());
    REQUIRE((*got)->Lists(nodes, &gi, &gn).ok());
    CHECK(gi == wi);
    CHECK(gn == wn);
    CHECK(SameBits(RowsOf(**got, nodes), RowsOf(**want, nodes)));
    train::TrainOptions t;
    t.model.hidden_dim = 16;
    t.fanouts = {5, 5};
    t.batch_size = 128;
    // The smallest budget accepted (at most some partitions resident, the rest read at fine
    // grain), and one that holds every partition.
    uint64_t smallest = 4ull << 20;
    while (smallest < (16ull << 20) && !pipeline::DiskOwnedRows::Open(&ds, *s.ranges, r, s.splits,
                                                                      t, {.memory_bytes = smallest})
                                            .ok()) {
      smallest += 64ull << 10;
    }
    for (const uint64_t budget : {smallest, uint64_t{64} << 20}) {
      CAPTURE(budget);
      auto disk =
          pipeline::DiskOwnedRows::Open(&ds, *s.ranges, r, s.splits, t, {.memory_bytes = budget});
      REQUIRE_MESSAGE(disk.ok(), disk.status().ToString());
      CHECK((*disk)->memory_plan().fully_resident == (budget != smallest));
      std::vector<int64_t> di, dn;
      REQUIRE((*disk)->Lists(nodes, &di, &dn).ok());
      CHECK(di == wi);
      CHECK(dn == wn);
      CHECK(SameBits(RowsOf(**disk, nodes), RowsOf(**want, nodes)));
    }
  }
}

TEST_CASE("dataset shard: reads beyond the rank's nodes are refused, naming the shard") {
  testing::TempDir dir;
  Sharded s = MakeSharded(dir.path());
  auto shard = format::Dataset::Open(dir / "shard-1");
  REQUIRE(shard.ok());
  const format::Dataset& ds = **shard;
  for (const Status& st :
       {ds.LoadOffsets().status(), ds.LoadNeighbors().status(), ds.LoadFeatures().status()}) {
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find("rank 1's shard of a 3-rank job") != std::string::npos);
    CHECK(st.message().find("needs the whole dataset") != std::string::npos);
  }
  CHECK(ds.RequireWhole("x").code() == StatusCode::kInvalidArgument);
  CHECK(s.dataset->RequireWhole("x").ok());
  // Rank 0's nodes and rank 2's.
  std::vector<int64_t> offsets, neighbors;
  const Status before = ds.LoadGraphRange(0, 4, &offsets, &neighbors);
  CHECK(before.code() == StatusCode::kInvalidArgument);
  CHECK(before.message().find("graph.offsets") != std::string::npos);
  CHECK(before.message().find("a shard") != std::string::npos);
  std::vector<float> row(16);
  const Status after = ds.ReadFeatureRows(ds.manifest().num_nodes - 1, 1, row.data());
  CHECK(after.code() == StatusCode::kInvalidArgument);
  CHECK(after.message().find("features.bin") != std::string::npos);
  // A whole-range read through the pool is refused as a whole load is.
  CHECK(storage::DatasetPartitionSource::Open(&ds, {}).status().code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE(
    "dataset shard: a corrupt block and offsets outside the window are reported; an edited window "
    "is refused at open") {
  testing::TempDir dir;
  Sharded s = MakeSharded(dir.path());
  const std::string path = dir / "shard-2";
  {
    // A feature byte of the shard's last row.
    auto ds = format::Dataset::Open(path);
    REQUIRE(ds.ok());
    const int64_t node = (*ds)->end_node() - 1;
    const uint64_t at =
        (*ds)->FeatureRowOffset(node) - (*ds)->File(format::kFeaturesFile).value()->window_offset();
    testing::FlipByte(path + "/features.bin", at, 0x20);
    std::vector<float> row(16);
    const Status read = (*ds)->ReadFeatureRows(node, 1, row.data());
    CHECK(read.code() == StatusCode::kCorruption);
    CHECK(read.message().find(path + "/features.bin") != std::string::npos);
    CHECK((*ds)->VerifyAll().code() == StatusCode::kCorruption);
    testing::FlipByte(path + "/features.bin", at, 0x20);
    CHECK((*ds)->VerifyAll().ok());
  }
  // Rank 2's first row made to start at neighbour 0, before its window, with the checksums and the
  // manifest rewritten as a writer writes them: refused, not read from before the file's start.
  {
    auto ds = format::Dataset::Open(path);
    REQUIRE(ds.ok());
    const format::ChecksummedFileReader* r = (*ds)->File(format::kOffsetsFile).value();
    const format::FileInfo info = r->info();
    std::vector<char> bytes(info.data_bytes);
    REQUIRE(r->ReadAt(info.window_offset, bytes.size(), bytes.data()).ok());
    const int64_t zero = 0;
    std::memcpy(bytes.data() + ((*ds)->begin_node() * 8 - info.window_offset), &zero, 8);
    auto w = format::ChecksummedFileWriter::Create(path, format::kOffsetsFile, info.block_bytes);
    REQUIRE(w.ok());
    REQUIRE((*w)->Append(bytes.data(), bytes.size()).ok());
    auto written = (*w)->Finish();
    REQUIRE(written.ok());
    format::Manifest m = (*ds)->manifest();
    m.files[format::kOffsetsFile] = *written;
    m.files[format::kOffsetsFile].window_offset = info.window_offset;
    std::ofstream(path + "/manifest.json") << m.ToJson();
    auto edited = format::Dataset::Open(path);
    REQUIRE_MESSAGE(edited.ok(), edited.status().ToString());
    train::TrainOptions t;
    t.model.hidden_dim = 16;
    t.fanouts = {5, 5};
    const Status disk = pipeline::DiskOwnedRows::Open(edited->get(), *s.ranges, 2, s.splits, t,
                                                      {.memory_bytes = 64ull << 20})
                            .status();
    CHECK(disk.code() == StatusCode::kCorruption);
    CHECK(disk.message().find("outside this shard's window") != std::string::npos);
    const Status loaded =
        train::InMemoryOwnedRows::Load(**edited, (*edited)->begin_node(), (*edited)->end_node())
            .status();
    CHECK(loaded.code() == StatusCode::kInvalidArgument);
    CHECK(loaded.message().find("graph.neighbors") != std::string::npos);
  }
  // graph.offsets' window moved past the rank's first node (the manifest's checksum rewritten).
  const std::string manifest = path + "/manifest.json";
  auto m = format::Manifest::FromJson(ReadText(manifest), manifest);
  REQUIRE(m.ok());
  format::Manifest edited = *m;
  edited.files[format::kOffsetsFile].window_offset += 4096 * 64;
  std::ofstream(manifest) << edited.ToJson();
  const Status opened = format::Dataset::Open(path).status();
  CHECK(opened.code() == StatusCode::kCorruption);
  CHECK(opened.message().find("graph.offsets holds bytes") != std::string::npos);
  // Another rank's range named in the shard object.
  edited = *m;
  edited.shard->rank = 0;
  std::ofstream(manifest) << edited.ToJson();
  CHECK(format::Dataset::Open(path).status().code() == StatusCode::kCorruption);
  // A window on a manifest that is not a shard's.
  edited = *m;
  edited.shard.reset();
  std::ofstream(manifest) << edited.ToJson();
  const Status plain = format::Dataset::Open(path).status();
  CHECK(plain.code() == StatusCode::kCorruption);
  CHECK(plain.message().find("window_offset") != std::string::npos);
}

TEST_CASE("dataset shard: what cannot be sharded is refused, and nothing is written") {
  testing::TempDir dir;
  Sharded s = MakeSharded(dir.path());
  auto plain = format::Dataset::Open(dir / "plain");
  REQUIRE(plain.ok());
  auto shard = format::Dataset::Open(dir / "shard-0");
  REQUIRE(shard.ok());
  const std::vector<int64_t>& first = s.ranges->first();
  std::vector<int64_t> off_boundary = first;
  off_boundary[1] += 1;
  std::vector<int64_t> empty_rank = {0, 0, first.back()};
  struct Case {
    const format::Dataset* ds;
    std::vector<int64_t> first;
    int rank;
    std::string says;
  };
  for (const Case& c : {Case{plain->get(), first, 0, "not partitioned"},
                        Case{shard->get(), first, 0, "itself a shard"},
                        Case{s.dataset.get(), off_boundary, 0, "starts no partition"},
                        Case{s.dataset.get(), empty_rank, 0, "holds no partition"},
                        Case{s.dataset.get(), first, kRanks, "not one of"}}) {
    CAPTURE(c.says);
    const Status st = format::WriteShard(*c.ds, c.first, c.rank, dir / "out", false);
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find(c.says) != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir / "out"));
  }
  // An existing shard is replaced only with overwrite.
  const Status again = format::WriteShard(*s.dataset, first, 0, dir / "shard-0", false);
  CHECK(again.code() == StatusCode::kInvalidArgument);
  CHECK(format::WriteShard(*s.dataset, first, 0, dir / "shard-0", true).ok());
}
