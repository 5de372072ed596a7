// An owned-partition rank's rows within --memory (pipeline::DiskOwnedRows) against the same
// range loaded whole (train::InMemoryOwnedRows): at every budget from the smallest the plan accepts
// to one that holds every partition -- none resident, some, all -- the degrees, lists and rows
// are bitwise the same, before and after --feature-norm row; a corrupt block of the range is
// reported, naming the file, when it is read; a budget too small is refused with the minimum.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "skiff/dist/communicator.h"
#include "skiff/format/dataset.h"
#include "skiff/pipeline/disk_owned_rows.h"
#include "skiff/train/exchange_features.h"
#include "tests/unit/partitioned_fixture.h"
#include "tests/unit/test_util.h"

using namespace skiff;

namespace {

using Owned = testing::OwnedFixture;

// 3000 nodes in 8 GREM partitions, owned by 2 ranks.
Owned MakeOwned(const std::string& dir) { return testing::MakeOwnedFixture(dir, 2); }

pipeline::DiskOwnedRowsOptions Within(uint64_t budget) {
  pipeline::DiskOwnedRowsOptions io;
  io.memory_bytes = budget;
  return io;
}

train::TrainOptions Options() {
  train::TrainOptions t;
  t.model.hidden_dim = 16;
  t.fanouts = {5, 5};
  t.batch_size = 128;
  t.eval_batch_size = 256;
  return t;
}

// The rows of `nodes` into dst, nodes.size() x feature_dim() row-major.
Status RowsOf(const train::OwnedRows& rows, std::span<const int64_t> nodes, float* dst) {
  std::vector<float*> to(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) to[i] = dst + i * rows.feature_dim();
  return rows.RowsTo(nodes, to);
}

// Every degree, the lists and rows of nodes in a random order (repeats included), and picks at
// random positions of the lists held in memory: bitwise those of `want`.
void CheckSame(const train::OwnedRows& got, const train::OwnedRows& want, uint64_t seed) {
  REQUIRE(got.begin() == want.begin());
  REQUIRE(got.end() == want.end());
  for (int64_t v = got.begin(); v < got.end(); ++v) REQUIRE(got.Degree(v) == want.Degree(v));
  std::mt19937_64 rng(seed);
  std::vector<int64_t> nodes;
  for (int i = 0; i < 400; ++i) {
    nodes.push_back(got.begin() + static_cast<int64_t>(rng() % (got.end() - got.begin())));
  }
  std::vector<int64_t> gi, gn, wi, wn;
  REQUIRE(got.Lists(nodes, &gi, &gn).ok());
  REQUIRE(want.Lists(nodes, &wi, &wn).ok());
  CHECK(gi == wi);
  CHECK(gn == wn);
  const auto dim = static_cast<size_t>(want.feature_dim());
  std::vector<float> gr(nodes.size() * dim), wr(nodes.size() * dim);
  REQUIRE(RowsOf(got, nodes, gr.data()).ok());
  REQUIRE(RowsOf(want, nodes, wr.data()).ok());
  CHECK(std::equal(gr.begin(), gr.end(), wr.begin(),
                   [](float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }));
  // Row i to its own place (here: the rows backwards, a gap between them).
  std::vector<float> scattered(nodes.size() * (dim + 1));
  std::vector<float*> to(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) to[i] = &scattered[(nodes.size() - 1 - i) * (dim + 1)];
  REQUIRE(got.RowsTo(nodes, to).ok());
  for (size_t i = 0; i < nodes.size(); ++i) {
    CHECK(std::memcmp(to[i], &wr[i * dim], dim * sizeof(float)) == 0);
  }
  for (int64_t v : nodes) {
    if (!got.ListInMemory(v) || got.Degree(v) < 2) continue;
    const std::vector<int64_t> positions = {0, got.Degree(v) - 1};
    int64_t a[2], b[2];
    got.NeighborsAt(v, positions, a);
    want.NeighborsAt(v, positions, b);
    CHECK((a[0] == b[0] && a[1] == b[1]));
  }
}

}  // namespace

TEST_CASE("disk owned rows: the lists and rows of the range in memory, at every budget") {
  testing::TempDir dir;
  Owned o = MakeOwned(dir.path());
  const train::TrainOptions t = Options();
  for (int rank = 0; rank < 2; ++rank) {
    CAPTURE(rank);
    const int64_t begin = o.ranges->begin(rank), end = o.ranges->end(rank);
    auto want = train::InMemoryOwnedRows::Load(*o.dataset, begin, end);
    REQUIRE(want.ok());
    // The smallest budget accepted, in steps of 1 MiB; then every 16 KiB from there until every
    // partition is resident.
    uint64_t budget = 1ull << 20;
    Result<std::unique_ptr<pipeline::DiskOwnedRows>> rows = Status::Internal("none");
    while (!(rows = pipeline::DiskOwnedRows::Open(o.dataset.get(), *o.ranges, rank, o.splits, t,
                                                  Within(budget)))
                .ok()) {
      REQUIRE(rows.status().code() == StatusCode::kResourceExhausted);
      CHECK(rows.status().message().find("rank " + std::to_string(rank)) != std::string::npos);
      budget += 1ull << 20;
      REQUIRE(budget < (64ull << 20));
    }
    for (budget -= 1ull << 20; budget < (16ull << 20); budget += 16ull << 10) {
      rows = pipeline::DiskOwnedRows::Open(o.dataset.get(), *o.ranges, rank, o.splits, t,
                                           Within(budget));
      if (rows.ok()) break;
    }
    std::set<uint32_t> slots_seen;
    uint32_t partitions = 0;
    for (; rows.ok(); budget += 16ull << 10) {
      rows = pipeline::DiskOwnedRows::Open(o.dataset.get(), *o.ranges, rank, o.splits, t,
                                           Within(budget));
      REQUIRE(rows.ok());
      const pipeline::MemoryPlan& plan = (*rows)->memory_plan();
      CHECK(plan.fixed_bytes + plan.pool_bytes <= budget);
      partitions =
          static_cast<uint32_t>(std::count_if(o.dataset->manifest().partitions->boundaries.begin(),
                                              o.dataset->manifest().partitions->boundaries.end(),
                                              [&](int64_t b) { return b >= begin && b < end; }));
      if (!slots_seen.insert(std::min(plan.pool_slots, partitions)).second) continue;
      CAPTURE(budget);
      CAPTURE(plan.pool_slots);
      CheckSame(**rows, **want, budget);
      if (plan.fully_resident) break;
    }
    // None resident, some, and all.
    CHECK(slots_seen.count(0) == 1);
    CHECK(slots_seen.size() >= 3);
    CHECK(*slots_seen.rbegin() == partitions);
    // --feature-norm row scales the rows alike.
    auto small = pipeline::DiskOwnedRows::Open(o.dataset.get(), *o.ranges, rank, o.splits, t,
                                               Within(24ull << 20));
    REQUIRE(small.ok());
    (*small)->NormalizeRows();
    (*want)->NormalizeRows();
    CheckSame(**small, **want, 7);
  }
}

TEST_CASE("disk owned rows: a corrupt block of the range is reported when read") {
  testing::TempDir dir;
  Owned o = MakeOwned(dir.path());
  const int64_t begin = o.ranges->begin(1), end = o.ranges->end(1);
  const int64_t node = end - 1;  // in the range's last partition, never resident below
  const uint64_t at = o.dataset->FeatureRowOffset(node);
  {
    std::fstream f(dir.path() + "/parts/features.bin",
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(at));
    char c = 0;
    f.read(&c, 1);
    c ^= 0x20;
    f.seekp(static_cast<std::streamoff>(at));
    f.write(&c, 1);
  }
  // The smallest budget accepted keeps no partition resident (the test above).
  uint64_t budget = 1ull << 20;
  Result<std::unique_ptr<pipeline::DiskOwnedRows>> rows = Status::Internal("none");
  while (!(rows = pipeline::DiskOwnedRows::Open(o.dataset.get(), *o.ranges, 1, o.splits, Options(),
                                                Within(budget)))
              .ok()) {
    INFO(rows.status().ToString());
    REQUIRE(rows.status().code() == StatusCode::kResourceExhausted);
    budget += 16ull << 10;
    REQUIRE(budget < (64ull << 20));
  }
  // With every partition resident, the pin at the start reads the block and fails.
  const Status pinned = pipeline::DiskOwnedRows::Open(o.dataset.get(), *o.ranges, 1, o.splits,
                                                      Options(), Within(64ull << 20))
                            .status();
  CHECK(pinned.code() == StatusCode::kCorruption);
  CHECK(pinned.message().find("features.bin") != std::string::npos);
  REQUIRE_FALSE((*rows)->ListInMemory(node));
  std::vector<float> row(16);
  const int64_t nodes[1] = {node};
  const Status read = RowsOf(**rows, nodes, row.data());
  CHECK(read.code() == StatusCode::kCorruption);
  CHECK(read.message().find("features.bin") != std::string::npos);
  // The rows before the block still read.
  const int64_t first[1] = {begin};
  CHECK(RowsOf(**rows, first, row.data()).ok());
}

TEST_CASE("disk owned rows: a gather reads the own rows and those asked for in one request") {
  testing::TempDir dir;
  Owned o = MakeOwned(dir.path());
  const train::TrainOptions t = Options();
  const int64_t n = o.dataset->manifest().num_nodes;
  auto whole = train::InMemoryOwnedRows::Load(*o.dataset, 0, n);
  REQUIRE(whole.ok());
  std::vector<int64_t> every(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) every[static_cast<size_t>(v)] = (v * 7) % n;  // 7 is coprime
  std::vector<float> want(every.size() * 16);
  REQUIRE(RowsOf(**whole, every, want.data()).ok());
  auto comms = dist::CreateThreadCommunicators(2, {.timeout_seconds = 60});
  std::vector<std::vector<float>> got(2, std::vector<float>(want.size()));
  std::vector<uint64_t> requests(2);
  std::vector<Status> status(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      const size_t r = static_cast<size_t>(rank);
      // The smallest budget: no partition resident, every row read at fine grain.
      Result<std::unique_ptr<pipeline::DiskOwnedRows>> rows = Status::Internal("none");
      for (uint64_t budget = 1ull << 20; budget < (64ull << 20) && !rows.ok();
           budget += 16ull << 10) {
        rows = pipeline::DiskOwnedRows::Open(o.dataset.get(), *o.ranges, rank, o.splits, t,
                                             Within(budget));
      }
      SKIFF_CHECK(rows.ok());
      const train::ExchangeFeatures features(*o.ranges, comms[r].get(), rows->get());
      const uint64_t before = (*rows)->graph().counters().fine_requests;
      status[r] = features.Gather(every, got[r].data());
      requests[r] = (*rows)->graph().counters().fine_requests - before;
    });
  }
  for (auto& th : threads) th.join();
  for (int r = 0; r < 2; ++r) {
    CAPTURE(r);
    REQUIRE(status[static_cast<size_t>(r)].ok());
    CHECK(got[static_cast<size_t>(r)] == want);
    // Its own half of the nodes and the other rank's request for the same half: one read.
    CHECK(requests[static_cast<size_t>(r)] == 1);
  }
}
