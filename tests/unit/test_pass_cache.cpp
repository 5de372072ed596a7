// PassCache: batches written once to an unnamed scratch file come back bit for bit, in order, and
// a damaged record is an error naming its batch.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "skiff/pipeline/pass_cache.h"
#include "tests/unit/test_util.h"

using namespace skiff;

namespace {

// A batch of arbitrary content: `features` floats (several 1 MiB chunks when large), two blocks.
pipeline::PreparedBatch MakeBatch(int64_t index, size_t nodes, size_t features, uint32_t seed) {
  std::mt19937 rng(seed);
  pipeline::PreparedBatch b;
  b.index = index;
  b.sample_seed = rng();
  b.aggregated = index % 2 == 0;
  b.batch.input_nodes.resize(nodes);
  for (int64_t& v : b.batch.input_nodes) v = rng();
  b.batch.seeds.assign(b.batch.input_nodes.begin(), b.batch.input_nodes.begin() + nodes / 4);
  b.batch.labels.assign(b.batch.seeds.size(), static_cast<int32_t>(rng() % 7));
  for (int l = 0; l < 2; ++l) {
    sampler::Block block;
    block.num_dst = static_cast<int64_t>(nodes / (l + 2));
    block.num_src = static_cast<int64_t>(nodes);
    block.indptr.resize(static_cast<size_t>(block.num_dst) + 1);
    for (size_t i = 1; i < block.indptr.size(); ++i) block.indptr[i] = block.indptr[i - 1] + 3;
    block.indices.resize(static_cast<size_t>(block.indptr.back()));
    for (int32_t& v : block.indices) v = static_cast<int32_t>(rng() % nodes);
    if (l == 1) block.src_degree.assign(nodes, 9);  // one block records degrees, one not
    b.batch.blocks.push_back(std::move(block));
  }
  b.features.resize(features);
  for (float& f : b.features) f = static_cast<float>(rng()) / 7.0f;
  return b;
}

bool Same(const pipeline::PreparedBatch& a, const pipeline::PreparedBatch& b) {
  if (a.batch.blocks.size() != b.batch.blocks.size()) return false;
  for (size_t l = 0; l < a.batch.blocks.size(); ++l) {
    const sampler::Block &x = a.batch.blocks[l], &y = b.batch.blocks[l];
    if (x.num_dst != y.num_dst || x.num_src != y.num_src || x.indptr != y.indptr ||
        x.indices != y.indices || x.src_degree != y.src_degree) {
      return false;
    }
  }
  return a.index == b.index && a.sample_seed == b.sample_seed && a.aggregated == b.aggregated &&
         a.batch.input_nodes == b.batch.input_nodes && a.batch.seeds == b.batch.seeds &&
         a.batch.labels == b.batch.labels && a.features == b.features;
}

}  // namespace

TEST_CASE("pass cache: kept batches replay in order, bit for bit") {
  testing::TempDir dir;
  auto cache = pipeline::PassCache::Create(dir.path());
  REQUIRE_MESSAGE(cache.ok(), cache.status().ToString());
  // Nothing named is left in the directory.
  CHECK(std::filesystem::is_empty(dir.path()));
  std::vector<pipeline::PreparedBatch> batches;
  batches.push_back(MakeBatch(0, 1000, 300000, 1));  // 1.2 MB of features: crosses chunks
  batches.push_back(MakeBatch(1, 7, 3, 2));
  batches.push_back(MakeBatch(2, 5000, 0, 3));
  (*cache)->Begin(42);
  CHECK_FALSE((*cache)->Holds(42));  // not sealed yet
  for (const auto& b : batches) REQUIRE((*cache)->Append(b).ok());
  (*cache)->Seal();
  CHECK((*cache)->Holds(42));
  CHECK_FALSE((*cache)->Holds(43));
  CHECK((*cache)->batches() == 3);
  CHECK((*cache)->file_bytes() % 4096 == 0);
  // Room for batches of the largest kept one (1.2 MB of features and its structure).
  const uint64_t chunk = pipeline::PassCache::kChunkBytes;
  CHECK((*cache)->ReplayBatchesWithin(chunk + 1200000) == 0);
  CHECK((*cache)->ReplayBatchesWithin(chunk + 1300000) == 1);
  CHECK((*cache)->ReplayBatchesWithin(chunk + 2 * 1300000) == 2);
  CHECK((*cache)->ReplayBatchesWithin(uint64_t{1} << 40) == pipeline::PassCache::kMaxReplayBatches);
  for (const int alive : {3, 2, 1, 3}) {  // replays are repeatable, with or without reading ahead
    CAPTURE(alive);
    size_t seen = 0;
    const Status st = (*cache)->Replay(
        [&](pipeline::PreparedBatch& b) {
          REQUIRE(seen < batches.size());
          CHECK(Same(b, batches[seen]));
          ++seen;
          return Status::Ok();
        },
        alive);
    REQUIRE_MESSAGE(st.ok(), st.ToString());
    CHECK(seen == batches.size());
  }
  // A consumer's error stops the replay and comes back.
  for (const int alive : {1, 2, 3}) {
    int calls = 0;
    const Status stopped = (*cache)->Replay(
        [&](pipeline::PreparedBatch&) {
          return ++calls == 2 ? Status::Aborted("enough") : Status::Ok();
        },
        alive);
    CHECK(stopped.code() == StatusCode::kAborted);
    CHECK(calls == 2);
  }
  // Begin drops what was kept.
  (*cache)->Begin(7);
  CHECK((*cache)->batches() == 0);
  CHECK_FALSE((*cache)->Holds(42));
}

TEST_CASE("pass cache: a damaged record is Corruption naming its batch") {
  testing::TempDir dir;
  auto cache = pipeline::PassCache::Create(dir.path());
  REQUIRE_MESSAGE(cache.ok(), cache.status().ToString());
  (*cache)->Begin(1);
  const auto first = MakeBatch(10, 300, 5000, 4);
  REQUIRE((*cache)->Append(first).ok());
  REQUIRE((*cache)->Append(MakeBatch(11, 300, 5000, 5)).ok());
  (*cache)->Seal();
  const std::vector<std::string> files = testing::UnnamedFilesIn(dir.path());
  REQUIRE(files.size() == 1);
  // Reopened without O_DIRECT; the cache's direct reads see the write.
  const int raw = ::open(files[0].c_str(), O_RDWR);
  REQUIRE(raw >= 0);
  const uint64_t second = (*cache)->file_bytes() / 2 + 4096 + 100;  // inside the second's arrays
  for (const uint64_t offset : {second, uint64_t{8}}) {             // arrays, then the first header
    CAPTURE(offset);
    char byte = 0;
    REQUIRE(::pread(raw, &byte, 1, static_cast<off_t>(offset)) == 1);
    byte = static_cast<char>(byte ^ 0x20);
    REQUIRE(::pwrite(raw, &byte, 1, static_cast<off_t>(offset)) == 1);
    std::vector<int64_t> seen;
    const Status st = (*cache)->Replay([&](pipeline::PreparedBatch& b) {
      seen.push_back(b.index);
      return Status::Ok();
    });
    CHECK(st.code() == StatusCode::kCorruption);
    const std::string expected = offset == 8 ? "batch 10" : "batch 11";
    CHECK_MESSAGE(st.message().find(expected) != std::string::npos, st.message());
    CHECK(seen.size() == (offset == 8 ? 0u : 1u));  // nothing after the damaged record
  }
  ::close(raw);
}

TEST_CASE("pass cache: a directory that cannot hold one is an error naming it") {
  testing::TempDir dir;
  auto missing = pipeline::PassCache::Create(dir / "missing");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find(dir / "missing") != std::string::npos);
}

TEST_CASE(
    "pass cache: a record that would leave the disk too full is refused, and nothing is kept") {
  testing::TempDir dir;
  auto cache = pipeline::PassCache::Create(dir.path(), uint64_t{1} << 62);  // more than any disk
  REQUIRE_MESSAGE(cache.ok(), cache.status().ToString());
  (*cache)->Begin(3);
  const Status st = (*cache)->Append(MakeBatch(0, 100, 100, 6));
  CHECK(st.code() == StatusCode::kResourceExhausted);
  CHECK(st.message().find(dir.path()) != std::string::npos);
  CHECK((*cache)->batches() == 0);
  CHECK((*cache)->file_bytes() == 0);
}
