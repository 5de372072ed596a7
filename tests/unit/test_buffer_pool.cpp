#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "skiff/format/dataset.h"
#include "skiff/storage/buffer_pool.h"
#include "skiff/storage/dataset_partition_source.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using namespace skiff::storage;

namespace {

// Partitions over one random file: partition p is two extents of varying, unaligned sizes.
class FileSource final : public PartitionSource {
 public:
  FileSource(const std::string& path, uint32_t partitions, bool direct) {
    REQUIRE(CreateRandomFile(path, kBytes, 11).ok());
    auto f = ReadFile::OpenForRead(path, direct);
    REQUIRE(f.ok());
    file_ = std::move(*f);
    std::mt19937_64 rng(partitions);
    for (uint32_t p = 0; p < partitions; ++p) {
      const uint64_t len1 = 1 + rng() % 50000, len2 = rng() % 9000;
      extents_.push_back(
          {{0, rng() % (kBytes - 60000), len1}, {0, rng() % (kBytes - 60000), len2}});
    }
  }
  uint32_t num_partitions() const override { return static_cast<uint32_t>(extents_.size()); }
  uint32_t num_files() const override { return 1; }
  const ReadFile& file(uint32_t) const override { return file_; }
  std::vector<Extent> Extents(uint32_t p) const override { return extents_[p]; }

  static constexpr uint64_t kBytes = 4 << 20;
  ReadFile file_;
  std::vector<std::vector<Extent>> extents_;
};

std::vector<std::byte> Pread(const std::string& path, uint64_t off, uint64_t len) {
  std::vector<std::byte> out(len);
  const int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::pread(fd, out.data(), len, static_cast<off_t>(off)) == static_cast<ssize_t>(len));
  ::close(fd);
  return out;
}

void CheckPinBytes(const PartitionPin& pin, const FileSource& src) {
  const auto extents = src.Extents(pin.partition());
  REQUIRE(pin.num_extents() == extents.size());
  for (size_t i = 0; i < extents.size(); ++i) {
    const auto expect = Pread(src.file_.path(), extents[i].offset, extents[i].length);
    const auto got = pin.extent(i);
    REQUIRE(got.size() == expect.size());
    CHECK(std::memcmp(got.data(), expect.data(), got.size()) == 0);
  }
}

// Belady's MIN with `slots` frames: evict the page whose next use is furthest (never first; ties by
// least recently used). Returns the evicted pages in order.
std::vector<uint32_t> ReferenceBelady(const std::vector<uint32_t>& plan, size_t slots) {
  std::vector<uint32_t> cache, evicted;
  std::map<uint32_t, size_t> last_use;
  for (size_t i = 0; i < plan.size(); ++i) {
    const uint32_t p = plan[i];
    if (std::find(cache.begin(), cache.end(), p) == cache.end()) {
      if (cache.size() == slots) {
        size_t best = 0, best_next = 0;
        for (size_t c = 0; c < cache.size(); ++c) {
          size_t next = SIZE_MAX;
          for (size_t j = i + 1; j < plan.size(); ++j) {
            if (plan[j] == cache[c]) {
              next = j;
              break;
            }
          }
          if (c == 0 || next > best_next ||
              (next == best_next && last_use[cache[c]] < last_use[cache[best]])) {
            best = c;
            best_next = next;
          }
        }
        evicted.push_back(cache[best]);
        cache.erase(cache.begin() + static_cast<long>(best));
      }
      cache.push_back(p);
    }
    last_use[p] = i;
  }
  return evicted;
}

BufferPoolOptions SmallPoolOptions(const PartitionSource& src, uint32_t slots) {
  BufferPoolOptions opt;
  opt.fine_read_scratch_bytes = 64 << 10;
  opt.engine.pread_threads = 2;
  opt.budget_bytes = BufferPool::BudgetFor(src, slots, opt);
  return opt;
}

}  // namespace

TEST_CASE("buffer pool: pinned extents hold the file's bytes (direct and buffered)") {
  skiff::testing::TempDir dir;
  for (bool direct : {true, false}) {
    FileSource src(dir / "data.bin", 10, direct);
    auto opt = SmallPoolOptions(src, 3);
    auto pool = BufferPool::Create(&src, opt);
    REQUIRE(pool.ok());
    CHECK((*pool)->num_slots() == 3);
    for (uint32_t round = 0; round < 2; ++round) {
      for (uint32_t p = 0; p < 10; ++p) {
        auto pin = (*pool)->Pin(p);
        REQUIRE(pin.ok());
        CheckPinBytes(*pin, src);
      }
    }
    const auto st = (*pool)->stats();
    CHECK(st.misses == 20);  // 10 partitions cycled through 3 slots: LRU never hits
    CHECK(st.partition_loads == 20);
    CHECK(st.bytes_read_total > 0);
    CHECK(st.reads_issued >= 40);
  }
}

TEST_CASE("buffer pool: eviction order equals Belady's on known plans") {
  skiff::testing::TempDir dir;
  FileSource src(dir / "data.bin", 8, true);
  const std::vector<std::vector<uint32_t>> plans = {
      {0, 1, 2, 3, 0, 1, 4, 0, 1, 2, 3, 4},
      {7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2, 1, 2, 0, 1, 7, 0, 1},
      {0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 5, 3, 1},
  };
  std::mt19937 rng(5);
  std::vector<uint32_t> random_plan;
  for (int i = 0; i < 60; ++i) random_plan.push_back(rng() % 8);
  std::vector<std::vector<uint32_t>> all = plans;
  all.push_back(random_plan);
  for (size_t slots : {2, 3, 4}) {
    for (const auto& plan : all) {
      auto opt = SmallPoolOptions(src, static_cast<uint32_t>(slots));
      opt.prefetch = false;  // demand loads only, so every eviction is a Belady decision
      opt.record_evictions = true;
      auto pool = BufferPool::Create(&src, opt);
      REQUIRE(pool.ok());
      REQUIRE((*pool)->num_slots() == slots);
      (*pool)->SetPlan(plan);
      for (uint32_t p : plan) {
        auto pin = (*pool)->Pin(p);
        REQUIRE(pin.ok());
      }
      CHECK((*pool)->eviction_log() == ReferenceBelady(plan, slots));
    }
  }
}

TEST_CASE("buffer pool: without a plan the least recently used partition is evicted") {
  skiff::testing::TempDir dir;
  FileSource src(dir / "data.bin", 5, true);
  auto opt = SmallPoolOptions(src, 3);
  opt.record_evictions = true;
  auto pool = BufferPool::Create(&src, opt);
  REQUIRE(pool.ok());
  for (uint32_t p : {0, 1, 2, 0, 3, 1, 4}) REQUIRE((*pool)->Pin(p).ok());
  CHECK((*pool)->eviction_log() == std::vector<uint32_t>{1, 2, 0});
  CHECK((*pool)->stats().hits == 1);
}

TEST_CASE("buffer pool: a pinned partition is never evicted; prefetch follows the plan") {
  skiff::testing::TempDir dir;
  FileSource src(dir / "data.bin", 6, true);
  auto opt = SmallPoolOptions(src, 3);
  opt.record_evictions = true;
  auto pool = BufferPool::Create(&src, opt);
  REQUIRE(pool.ok());
  std::vector<uint32_t> plan = {0, 1, 2, 3, 4, 5, 1, 2, 3};
  (*pool)->SetPlan(plan);
  auto held = (*pool)->Pin(0);  // held through the whole plan
  REQUIRE(held.ok());
  for (size_t i = 1; i < plan.size(); ++i) {
    auto pin = (*pool)->Pin(plan[i]);
    REQUIRE(pin.ok());
    CheckPinBytes(*pin, src);
    CHECK((*pool)->IsResident(0));
  }
  const auto log = (*pool)->eviction_log();
  for (uint32_t p : log) CHECK(p != 0);
  CheckPinBytes(*held, src);
}

TEST_CASE("buffer pool: budgets too small are refused with the minimum; budget is never exceeded") {
  skiff::testing::TempDir dir;
  FileSource src(dir / "data.bin", 6, true);
  BufferPoolOptions opt = SmallPoolOptions(src, 2);
  const uint64_t minimum = opt.budget_bytes;
  opt.budget_bytes = minimum - 1;
  auto refused = BufferPool::Create(&src, opt);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kResourceExhausted);
  CHECK(refused.status().message().find("needs at least " + std::to_string(minimum)) !=
        std::string::npos);
  for (uint64_t budget = minimum; budget < minimum * 4; budget += minimum / 3 + 4097) {
    opt.budget_bytes = budget;
    auto pool = BufferPool::Create(&src, opt);
    REQUIRE(pool.ok());
    CHECK((*pool)->allocated_bytes() <= budget);
    CHECK((*pool)->num_slots() >= 2);
  }
}

TEST_CASE("buffer pool: concurrent pin/unpin from many threads") {
  skiff::testing::TempDir dir;
  FileSource src(dir / "data.bin", 12, true);
  auto opt = SmallPoolOptions(src, 5);
  auto pool = BufferPool::Create(&src, opt);
  REQUIRE(pool.ok());
  // First bytes of each partition's first extent, to check pins from every thread.
  std::vector<std::vector<std::byte>> heads;
  for (uint32_t p = 0; p < 12; ++p)
    heads.push_back(Pread(src.file_.path(), src.extents_[p][0].offset, 16));
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < 150; ++i) {
        const uint32_t p = rng() % 12;
        auto pin = (*pool)->Pin(p);
        if (!pin.ok()) {
          ++failed;
          continue;
        }
        if (std::memcmp(pin->extent(0).data(), heads[p].data(), 16) != 0) ++wrong;
        PartitionPin moved = std::move(*pin);  // pins are movable between owners
        if (i % 3 == 0) moved.Release();
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(wrong == 0);
  CHECK(failed == 0);
  const auto st = (*pool)->stats();
  CHECK(st.hits + st.misses == 600);
}

TEST_CASE("buffer pool: injected I/O faults surface from Pin; the next Pin retries") {
  skiff::testing::TempDir dir;
  FileSource src(dir / "data.bin", 4, true);
  auto opt = SmallPoolOptions(src, 2);
  opt.engine.faults =
      std::make_shared<FaultInjector>(std::vector<FaultRule>{{FaultKind::kEio, 0, 1}});
  opt.engine.queue_depth = 1;
  opt.engine.pread_threads = 1;
  auto pool = BufferPool::Create(&src, opt);
  REQUIRE(pool.ok());
  auto pin = (*pool)->Pin(2);
  REQUIRE_FALSE(pin.ok());
  CHECK(pin.status().code() == StatusCode::kIOError);
  CHECK(pin.status().message().find("loading partition 2") != std::string::npos);
  CHECK(pin.status().message().find(src.file_.path()) != std::string::npos);
  auto again = (*pool)->Pin(2);
  REQUIRE(again.ok());
  CheckPinBytes(*again, src);
}

TEST_CASE("buffer pool: fine-grained reads are coalesced and return the right bytes") {
  skiff::testing::TempDir dir;
  FileSource src(dir / "data.bin", 2, true);
  auto opt = SmallPoolOptions(src, 2);
  opt.fine_read_scratch_bytes = 64 << 10;  // forces several rounds
  auto pool = BufferPool::Create(&src, opt);
  REQUIRE(pool.ok());
  std::mt19937_64 rng(3);
  std::vector<std::vector<std::byte>> dsts;
  std::vector<FineRead> reads;
  for (int i = 0; i < 300; ++i) {
    const uint64_t len = 1 + rng() % (i == 7 ? 200000 : 300);
    const uint64_t off = rng() % (FileSource::kBytes - len);
    dsts.emplace_back(len);
    reads.push_back({0, off, len, nullptr});
  }
  reads.push_back({0, reads[5].offset + 1, 10, nullptr});  // overlaps another read
  dsts.emplace_back(10);
  for (size_t i = 0; i < reads.size(); ++i) reads[i].dst = dsts[i].data();
  REQUIRE((*pool)->ReadRanges(reads).ok());
  for (size_t i = 0; i < reads.size(); ++i) {
    const auto expect = Pread(src.file_.path(), reads[i].offset, reads[i].length);
    CHECK(std::memcmp(expect.data(), dsts[i].data(), expect.size()) == 0);
  }
  const auto st = (*pool)->stats();
  CHECK(st.fine_reads == reads.size());
  CHECK(st.fine_bytes_read <= FileSource::kBytes + (256 << 10));
}

TEST_CASE("buffer pool: a pool without slots serves fine-grained reads") {
  skiff::testing::TempDir dir;
  FileSource src(dir / "data.bin", 2, true);
  auto opt = SmallPoolOptions(src, 0);
  opt.min_resident_partitions = 0;
  auto pool = BufferPool::Create(&src, opt);
  REQUIRE_MESSAGE(pool.ok(), pool.status().ToString());
  CHECK((*pool)->num_slots() == 0);
  std::vector<std::byte> dst(5000);
  const std::vector<FineRead> reads = {{0, 12345, dst.size(), dst.data()}};
  REQUIRE((*pool)->ReadRanges(reads).ok());
  const auto expect = Pread(src.file_.path(), 12345, dst.size());
  CHECK(std::memcmp(expect.data(), dst.data(), dst.size()) == 0);
  CHECK((*pool)->stats().partition_loads == 0);
}

TEST_CASE("buffer pool: streamed reads arrive whole, once each, in file order") {
  skiff::testing::TempDir dir;
  FileSource src(dir / "data.bin", 2, true);
  auto opt = SmallPoolOptions(src, 2);
  opt.fine_read_scratch_bytes = 512 << 10;  // 4 slots of 128 KiB: several chunks in flight
  opt.budget_bytes = BufferPool::BudgetFor(src, 2, opt);
  auto pool = BufferPool::Create(&src, opt);
  REQUIRE(pool.ok());
  std::mt19937_64 rng(5);
  std::vector<FineRead> reads;
  for (int i = 0; i < 2000; ++i) {  // dense enough to merge, spread over the whole file
    const uint64_t len = 1 + rng() % 700;
    reads.push_back({0, rng() % (FileSource::kBytes - len), len, nullptr});
  }
  reads.push_back({0, reads[9].offset, reads[9].length, nullptr});  // the same bytes twice
  const auto file = Pread(src.file_.path(), 0, FileSource::kBytes);
  std::vector<int> seen(reads.size(), 0);
  uint64_t last_offset = 0;
  uint64_t bytes = 0;
  REQUIRE((*pool)
              ->StreamRanges(
                  reads,
                  [&](size_t i, const std::byte* data) -> Status {
                    REQUIRE(i < reads.size());
                    ++seen[i];
                    CHECK(reads[i].offset >= last_offset);  // file order
                    last_offset = reads[i].offset;
                    CHECK(std::memcmp(data, file.data() + reads[i].offset, reads[i].length) == 0);
                    return Status::Ok();
                  },
                  &bytes)
              .ok());
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  CHECK(bytes > 0);
  CHECK(bytes <= FileSource::kBytes);
  // The consumer's error stops the stream and is returned; nothing is delivered after it.
  size_t calls = 0;
  const Status stopped = (*pool)->StreamRanges(reads, [&](size_t, const std::byte*) -> Status {
    return ++calls == 100 ? Status::Internal("enough") : Status::Ok();
  });
  CHECK(stopped.code() == StatusCode::kInternal);
  CHECK(calls == 100);
  // The pool is still usable afterwards.
  std::vector<std::byte> dst(reads[0].length);
  FineRead one = reads[0];
  one.dst = dst.data();
  REQUIRE((*pool)->ReadRanges(std::span<const FineRead>(&one, 1)).ok());
  CHECK(std::memcmp(dst.data(), file.data() + one.offset, one.length) == 0);
}

namespace {

// A dataset of n nodes in k partitions (k = 0: unpartitioned), random out-degrees 0..9.
// k partitions of n / k nodes (none: k = 0), or the given `boundaries` (0 .. n).
Status WritePartitionedDataset(const std::string& path, int64_t n, uint32_t k, int64_t dim,
                               std::vector<int64_t> boundaries = {}) {
  SKIFF_ASSIGN_OR_RETURN(auto w, format::DatasetWriter::Create(path));
  auto& m = w->manifest();
  std::mt19937_64 rng(42);
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> nbrs;
  for (int64_t v = 0; v < n; ++v) {
    const int deg = static_cast<int>(rng() % 10);
    std::vector<int32_t> row;
    for (int d = 0; d < deg; ++d) row.push_back(static_cast<int32_t>(rng() % n));
    std::sort(row.begin(), row.end());
    nbrs.insert(nbrs.end(), row.begin(), row.end());
    offsets.push_back(static_cast<int64_t>(nbrs.size()));
  }
  m.name = "pool-test";
  m.num_nodes = n;
  m.num_edges = static_cast<int64_t>(nbrs.size());
  m.feature_dim = dim;
  m.num_classes = 2;
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kOffsetsFile, offsets.data(), offsets.size() * 8));
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kNeighborsFile, nbrs.data(), nbrs.size() * 4));
  const bool partitioned = k > 0 || !boundaries.empty();
  if (!partitioned) k = 1;
  format::PartitionInfo info;
  info.num_partitions = k;
  info.algorithm = "range";
  if (!boundaries.empty()) {
    k = info.num_partitions = static_cast<uint32_t>(boundaries.size() - 1);
    info.boundaries = std::move(boundaries);
  } else {
    for (uint32_t p = 0; p <= k; ++p) info.boundaries.push_back(n * p / k);
  }
  m.feature_extent_offsets.clear();
  SKIFF_ASSIGN_OR_RETURN(auto feats, w->CreateFile(format::kFeaturesFile));
  for (uint32_t p = 0; p < k; ++p) {
    SKIFF_RETURN_IF_ERROR(feats->PadTo(4096));
    m.feature_extent_offsets.push_back(feats->bytes_written());
    for (int64_t v = info.boundaries[p]; v < info.boundaries[p + 1]; ++v) {
      std::vector<float> row(dim);
      for (int64_t d = 0; d < dim; ++d) row[d] = static_cast<float>(v * 1000 + d);
      SKIFF_RETURN_IF_ERROR(feats->Append(row.data(), row.size() * 4));
    }
  }
  SKIFF_RETURN_IF_ERROR(w->FinishFile(*feats));
  if (partitioned) m.partitions = info;
  std::vector<int32_t> labels(n, 0);
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kLabelsFile, labels.data(), labels.size() * 4));
  std::vector<int64_t> train{0}, valid{1}, test{2};
  m.train_count = m.valid_count = m.test_count = 1;
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kTrainFile, train.data(), 8));
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kValidFile, valid.data(), 8));
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kTestFile, test.data(), 8));
  return w->Commit();
}

}  // namespace

TEST_CASE("buffer pool over a dataset: features and adjacency verified, corruption reported") {
  skiff::testing::TempDir dir;
  const std::string path = dir / "ds";
  REQUIRE(WritePartitionedDataset(path, 3000, 6, 24).ok());
  auto ds = format::Dataset::Open(path);
  REQUIRE(ds.ok());
  auto offsets = (*ds)->LoadOffsets();
  auto nbrs = (*ds)->LoadNeighbors();
  REQUIRE(offsets.ok());
  REQUIRE(nbrs.ok());
  {
    auto src = DatasetPartitionSource::Open(ds->get(), {});
    REQUIRE(src.ok());
    REQUIRE((*src)->num_partitions() == 6);
    BufferPoolOptions opt;
    opt.budget_bytes = BufferPool::BudgetFor(**src, 2, opt);
    auto pool = BufferPool::Create(src->get(), opt);
    REQUIRE(pool.ok());
    std::vector<int64_t> got;
    for (uint32_t p = 0; p < 6; ++p) {
      auto pin = (*pool)->Pin(p);
      REQUIRE(pin.ok());
      const auto feats = pin->extent(DatasetPartitionSource::kFeatureExtent);
      const int64_t first = (*src)->first_node(p);
      float f;
      std::memcpy(&f, feats.data() + 24 * 4 + 4, 4);  // node first+1, dim 1
      CHECK(f == static_cast<float>((first + 1) * 1000 + 1));
      for (int64_t v = first; v < (*src)->first_node(p + 1); v += 37) {
        (*src)->NeighborsFromPin(*pin, v, &got);
        const std::vector<int64_t> expect(nbrs->begin() + (*offsets)[v],
                                          nbrs->begin() + (*offsets)[v + 1]);
        CHECK(got == expect);
      }
    }
    // Fine-grained reads of rows and adjacency lists.
    std::vector<float> row(24);
    std::vector<int32_t> adj(16);
    const int64_t node = 2222;
    std::vector<FineRead> reads = {(*src)->FeatureRowRead(node, row.data()),
                                   (*src)->AdjacencyRead(node, adj.data())};
    REQUIRE((*pool)->ReadRanges(reads).ok());
    CHECK(row[5] == static_cast<float>(node * 1000 + 5));
    for (int64_t e = 0; e < (*src)->degree(node); ++e)
      CHECK(adj[e] == (*nbrs)[(*offsets)[node] + e]);
  }
  // Corrupt a byte in partition 3's features: its load fails naming the file and block.
  auto src = DatasetPartitionSource::Open(ds->get(), {});
  REQUIRE(src.ok());
  const uint64_t off = (*ds)->manifest().feature_extent_offsets[3] + 100;
  {
    std::fstream f(path + "/features.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(off));
    char c;
    f.read(&c, 1);
    c ^= 0x10;
    f.seekp(static_cast<std::streamoff>(off));
    f.write(&c, 1);
  }
  BufferPoolOptions opt;
  opt.budget_bytes = BufferPool::BudgetFor(**src, 2, opt);
  auto pool = BufferPool::Create(src->get(), opt);
  REQUIRE(pool.ok());
  CHECK((*pool)->Pin(2).ok());
  auto bad = (*pool)->Pin(3);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kCorruption);
  CHECK(bad.status().message().find("features.bin") != std::string::npos);
  CHECK(bad.status().message().find("block " + std::to_string(off / 4096)) != std::string::npos);
  // Streamed and fine-grained reads of the corrupt block fail the same way; the rows before it are
  // handed over, in file order, and none after.
  const int64_t first3 = (*src)->first_node(3);
  std::vector<float> rows(24 * (first3 + 200));  // more than one chunk's bytes before the block
  std::vector<FineRead> row_reads;
  for (int64_t v = 0; v < first3 + 200; ++v) {
    row_reads.push_back((*src)->FeatureRowRead(v, rows.data() + v * 24));
  }
  uint64_t last_end = 0;
  const Status streamed =
      (*pool)->StreamRanges(row_reads, [&](size_t i, const std::byte*) -> Status {
        CHECK(row_reads[i].offset + row_reads[i].length <= off / 4096 * 4096);
        CHECK(row_reads[i].offset >= last_end);
        last_end = row_reads[i].offset + row_reads[i].length;
        return Status::Ok();
      });
  CHECK(streamed.code() == StatusCode::kCorruption);
  CHECK(streamed.message().find("block " + std::to_string(off / 4096)) != std::string::npos);
  CHECK(last_end > 0);
  const Status fine = (*pool)->ReadRanges(row_reads);
  CHECK(fine.code() == StatusCode::kCorruption);
  CHECK(fine.message().find("features.bin") != std::string::npos);
  // Partition 0's rows still read (the pool is usable after the errors).
  std::vector<FineRead> good(row_reads.begin(), row_reads.begin() + 100);
  CHECK((*pool)->ReadRanges(good).ok());
  CHECK(rows[99 * 24 + 5] == static_cast<float>(99 * 1000 + 5));
  // With verification off the (corrupt) bytes are handed out.
  opt.verify_checksums = false;
  auto unchecked = BufferPool::Create(src->get(), opt);
  REQUIRE(unchecked.ok());
  CHECK((*unchecked)->Pin(3).ok());
}

TEST_CASE("buffer pool: packed when every partition fits at its own size") {
  // Partitions of very different sizes: slots of the largest would need far more than their sum.
  skiff::testing::TempDir dir;
  const std::vector<int64_t> boundaries{0, 100, 250, 2200, 2300, 3000};
  REQUIRE(WritePartitionedDataset(dir / "ds", 3000, 0, 24, boundaries).ok());
  auto ds = format::Dataset::Open(dir / "ds");
  REQUIRE(ds.ok());
  auto offsets = (*ds)->LoadOffsets();
  auto nbrs = (*ds)->LoadNeighbors();
  REQUIRE((offsets.ok() && nbrs.ok()));
  for (const bool adjacency_only : {false, true}) {
    CAPTURE(adjacency_only);
    auto src = DatasetPartitionSource::Open(ds->get(), {.adjacency_only = adjacency_only});
    REQUIRE(src.ok());
    BufferPoolOptions opt;
    opt.record_evictions = true;
    const uint64_t packed = BufferPool::PackedBudgetFor(**src, opt);
    REQUIRE(packed < BufferPool::BudgetFor(**src, 5, opt));
    // Pins every partition, in an order that revisits them, and checks its adjacency.
    auto pin_all = [&](BufferPool& pool) {
      std::vector<int64_t> got;
      for (const uint32_t p : {2u, 0u, 4u, 1u, 3u, 2u, 4u, 0u}) {
        auto pin = pool.Pin(p);
        REQUIRE(pin.ok());
        for (int64_t v = boundaries[p]; v < boundaries[p + 1]; v += 7) {
          (*src)->NeighborsFromPin(*pin, v, &got);
          CHECK(got == std::vector<int64_t>(nbrs->begin() + (*offsets)[v],
                                            nbrs->begin() + (*offsets)[v + 1]));
        }
      }
    };
    opt.budget_bytes = packed;
    auto pool = BufferPool::Create(src->get(), opt);
    REQUIRE(pool.ok());
    CHECK((*pool)->packed());
    CHECK((*pool)->num_slots() == 5);
    CHECK((*pool)->allocated_bytes() == packed);
    pin_all(**pool);
    CHECK((*pool)->stats().partition_loads == 5);
    CHECK((*pool)->eviction_log().empty());
    // A byte less: equal slots of the largest partition (one is all the test needs: partition 2
    // holds most of the graph), fewer than the partitions, evicting.
    opt.budget_bytes = packed - 1;
    opt.min_resident_partitions = 1;
    auto equal = BufferPool::Create(src->get(), opt);
    REQUIRE(equal.ok());
    CHECK_FALSE((*equal)->packed());
    CHECK((*equal)->num_slots() < 5);
    CHECK((*equal)->allocated_bytes() <= packed - 1);
    pin_all(**equal);
    CHECK_FALSE((*equal)->eviction_log().empty());
  }
}

TEST_CASE("dataset partition source: partition_of over uneven and empty partitions") {
  // Empty partitions first, inside and last, one-node partitions, and one far larger than the
  // rest (partition_of indexes blocks of the mean partition size).
  const std::vector<int64_t> boundaries{0, 0, 7, 7, 8, 900, 901, 1000, 1000};
  skiff::testing::TempDir dir;
  REQUIRE(WritePartitionedDataset(dir / "ds", 1000, 0, 4, boundaries).ok());
  auto ds = format::Dataset::Open(dir / "ds");
  REQUIRE(ds.ok());
  auto src = DatasetPartitionSource::Open(ds->get(), {});
  REQUIRE(src.ok());
  REQUIRE((*src)->num_partitions() == 8);
  for (int64_t v = 0; v < 1000; ++v) {
    CAPTURE(v);
    // The partition holding v: the last whose first node is at most v.
    const auto expected = static_cast<uint32_t>(
        std::upper_bound(boundaries.begin(), boundaries.end(), v) - boundaries.begin() - 1);
    CHECK((*src)->partition_of(v) == expected);
  }
}

TEST_CASE("dataset partition source: a range of partitions, renumbered, with its offsets alone") {
  // Uneven partitions, an empty one inside the range: partitions [2, 5) are nodes [250, 2300).
  const std::vector<int64_t> boundaries{0, 100, 250, 2200, 2200, 2300, 3000};
  skiff::testing::TempDir dir;
  REQUIRE(WritePartitionedDataset(dir / "ds", 3000, 0, 8, boundaries).ok());
  auto ds = format::Dataset::Open(dir / "ds");
  REQUIRE(ds.ok());
  auto offsets = (*ds)->LoadOffsets();
  auto nbrs = (*ds)->LoadNeighbors();
  REQUIRE((offsets.ok() && nbrs.ok()));
  auto range = (*ds)->LoadOffsetsRange(250, 2050);
  REQUIRE(range.ok());
  CHECK(*range == std::vector<int64_t>(offsets->begin() + 250, offsets->begin() + 2301));
  auto src = DatasetPartitionSource::Open(ds->get(), {.first_partition = 2, .end_partition = 5});
  REQUIRE(src.ok());
  REQUIRE((*src)->num_partitions() == 3);
  CHECK((*src)->begin_node() == 250);
  CHECK((*src)->end_node() == 2300);
  CHECK((*src)->first_node(0) == 250);
  CHECK((*src)->partition_of(250) == 0);
  CHECK((*src)->partition_of(2199) == 0);
  CHECK((*src)->partition_of(2200) == 2);
  CHECK((*src)->partition_of(2299) == 2);
  for (int64_t v = 250; v < 2300; v += 13) {
    CHECK((*src)->degree(v) == (*offsets)[v + 1] - (*offsets)[v]);
  }
  // Pins and fine reads give the range's bytes; the pool sizes its slots from the range alone.
  BufferPoolOptions opt;
  opt.budget_bytes = BufferPool::BudgetFor(**src, 1, opt);
  opt.min_resident_partitions = 1;
  auto pool = BufferPool::Create(src->get(), opt);
  REQUIRE(pool.ok());
  std::vector<int64_t> got;
  for (uint32_t p : {0u, 2u}) {
    auto pin = (*pool)->Pin(p);
    REQUIRE(pin.ok());
    for (int64_t v = (*src)->first_node(p); v < (*src)->first_node(p + 1); v += 11) {
      (*src)->NeighborsFromPin(*pin, v, &got);
      CHECK(got ==
            std::vector<int64_t>(nbrs->begin() + (*offsets)[v], nbrs->begin() + (*offsets)[v + 1]));
    }
    const auto feats = pin->extent(DatasetPartitionSource::kFeatureExtent);
    float f;
    std::memcpy(&f, feats.data() + 4, 4);
    CHECK(f == static_cast<float>((*src)->first_node(p) * 1000 + 1));
  }
  std::vector<float> row(8);
  std::vector<int32_t> adj(16);
  std::vector<FineRead> reads = {(*src)->FeatureRowRead(2250, row.data()),
                                 (*src)->AdjacencyRead(2250, adj.data())};
  REQUIRE((*pool)->ReadRanges(reads).ok());
  CHECK(row[3] == static_cast<float>(2250 * 1000 + 3));
  for (int64_t e = 0; e < (*src)->degree(2250); ++e) {
    CHECK(adj[e] == (*nbrs)[(*offsets)[2250] + e]);
  }
  // A range the dataset does not have, or a range of an unpartitioned dataset.
  CHECK(DatasetPartitionSource::Open(ds->get(), {.first_partition = 4, .end_partition = 9})
            .status()
            .code() == StatusCode::kInvalidArgument);
  skiff::testing::TempDir flat;
  REQUIRE(WritePartitionedDataset(flat / "ds", 100, 0, 4).ok());
  auto unpartitioned = format::Dataset::Open(flat / "ds");
  REQUIRE(unpartitioned.ok());
  const auto refused =
      DatasetPartitionSource::Open(unpartitioned->get(), {.first_partition = 1}).status();
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK(refused.message().find("no partitions") != std::string::npos);
}

TEST_CASE("dataset partition source: unpartitioned datasets are split into fixed node ranges") {
  skiff::testing::TempDir dir;
  REQUIRE(WritePartitionedDataset(dir / "ds", 1000, 0, 8).ok());
  auto ds = format::Dataset::Open(dir / "ds");
  REQUIRE(ds.ok());
  REQUIRE_FALSE((*ds)->manifest().partitions.has_value());
  DatasetPartitionSourceOptions so;
  so.nodes_per_partition = 300;
  auto src = DatasetPartitionSource::Open(ds->get(), so);
  REQUIRE(src.ok());
  REQUIRE((*src)->num_partitions() == 4);  // 300, 300, 300, 100 nodes
  CHECK((*src)->partition_of(899) == 2);
  CHECK((*src)->partition_of(900) == 3);
  auto feats = (*ds)->LoadFeatures();
  REQUIRE(feats.ok());
  BufferPoolOptions opt;
  opt.budget_bytes = BufferPool::BudgetFor(**src, 2, opt);
  auto pool = BufferPool::Create(src->get(), opt);
  REQUIRE(pool.ok());
  for (uint32_t p = 0; p < 4; ++p) {
    auto pin = (*pool)->Pin(p);
    REQUIRE(pin.ok());
    const auto bytes = pin->extent(DatasetPartitionSource::kFeatureExtent);
    const int64_t first = (*src)->first_node(p), rows = (*src)->first_node(p + 1) - first;
    REQUIRE(bytes.size() == static_cast<size_t>(rows * 8 * 4));
    CHECK(std::memcmp(bytes.data(), feats->data() + first * 8, bytes.size()) == 0);
  }
}

TEST_CASE("buffer pool: prefetch and out-of-plan-order pins do not thrash") {
  // The pattern of a training epoch: buffer states of two partitions, one swap between states; the
  // next state's new partition is pinned ahead (which moves the plan cursor past the current
  // state), while the current state's partitions keep being pinned and unpinned out of plan order.
  // Prefetch must not keep evicting the current state's partitions to make room for the plan.
  skiff::testing::TempDir dir;
  FileSource src(dir / "data.bin", 6, true);
  auto opt = SmallPoolOptions(src, 3);
  auto pool = BufferPool::Create(&src, opt);
  REQUIRE(pool.ok());
  const std::vector<std::vector<uint32_t>> states = {{0, 1}, {0, 2}, {3, 2}, {3, 4}, {5, 4}};
  std::vector<uint32_t> plan = {0, 1};
  for (size_t s = 1; s < states.size(); ++s) plan.push_back(states[s][s % 2 == 1 ? 1 : 0]);
  (*pool)->SetPlan(plan);
  for (size_t s = 0; s < states.size(); ++s) {
    std::optional<PartitionPin> ahead;
    if (s + 1 < states.size()) {
      auto pin = (*pool)->Pin(plan[s + 2]);
      REQUIRE(pin.ok());
      ahead.emplace(std::move(*pin));
    }
    for (int batch = 0; batch < 50; ++batch) {
      for (uint32_t p : states[s]) {
        auto pin = (*pool)->Pin(p);
        REQUIRE(pin.ok());
        CheckPinBytes(*pin, src);
      }
    }
  }
  // Each partition is needed in one contiguous run of states: a bounded number of loads, not one
  // per batch.
  CHECK((*pool)->stats().partition_loads <= 3 * plan.size());  // 500 pins; thrash loads ~200
}
