// GatherRowsToLead: rows computed on W ranks (threads, dist::CreateThreadCommunicators) reach rank
// 0 at their positions, bitwise, over as many rounds as the largest rank needs; rows that do not
// cover the positions once each are reported, never written.
#include <doctest/doctest.h>

#include <cstring>
#include <thread>

#include "skiff/dist/communicator.h"
#include "skiff/train/gather_rows.h"

using namespace skiff;
using namespace skiff::train;

namespace {

struct Gathered {
  Status status;
  std::vector<int32_t> labels;
  std::vector<float> values;
};

// Runs GatherRowsToLead on `rows.size()` thread ranks, rank r handing in rows[r].
std::vector<Gathered> Gather(const std::vector<PositionedRows>& rows, int64_t n, int64_t width,
                             uint64_t round_bytes) {
  const int ranks = static_cast<int>(rows.size());
  auto comms = dist::CreateThreadCommunicators(ranks, {.timeout_seconds = 60});
  std::vector<Gathered> out(rows.size());
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      Gathered& g = out[static_cast<size_t>(r)];
      g.status = GatherRowsToLead(*comms[static_cast<size_t>(r)], rows[static_cast<size_t>(r)], n,
                                  width, round_bytes, &g.labels, &g.values);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// Row p's label and values: distinct per position, with a negative zero and a NaN-free spread.
PositionedRows RowsAt(const std::vector<int64_t>& positions, int64_t width) {
  PositionedRows rows;
  for (const int64_t p : positions) {
    rows.positions.push_back(p);
    rows.labels.push_back(static_cast<int32_t>(p % 7));
    for (int64_t k = 0; k < width; ++k) {
      rows.values.push_back(k == 0 && p % 5 == 0 ? -0.0f : static_cast<float>(p) + 0.25f * k);
    }
  }
  return rows;
}

}  // namespace

TEST_CASE("gathered rows reach rank 0 at their positions, over several rounds") {
  const int64_t width = 3;
  // Rank 0 owns 2 rows, rank 1 none, rank 2 the most (11): with 2 rows a round, 6 rounds.
  const std::vector<PositionedRows> rows = {RowsAt({4, 0}, width), RowsAt({}, width),
                                            RowsAt({1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12}, width)};
  const uint64_t row_bytes = 8 + 4 + 4 * width;
  for (const uint64_t round_bytes :
       {2 * row_bytes, 2 * row_bytes + 5, uint64_t{1}, uint64_t{1} << 20}) {
    CAPTURE(round_bytes);
    const std::vector<Gathered> got = Gather(rows, 13, width, round_bytes);
    for (const Gathered& g : got) REQUIRE(g.status.ok());
    const PositionedRows want = RowsAt({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, width);
    CHECK(got[0].labels == want.labels);
    REQUIRE(got[0].values.size() == want.values.size());
    CHECK(std::memcmp(got[0].values.data(), want.values.data(), want.values.size() * 4) == 0);
    for (size_t r = 1; r < got.size(); ++r) {
      CHECK(got[r].labels.empty());
      CHECK(got[r].values.empty());
    }
  }
}

TEST_CASE("gathered rows that miss or repeat a position are reported") {
  const int64_t width = 2;
  SUBCASE("too few rows: every rank says so before any row moves") {
    const auto got = Gather({RowsAt({0, 1}, width), RowsAt({2}, width)}, 4, width, 64);
    for (const Gathered& g : got) {
      CHECK(g.status.code() == StatusCode::kInternal);
      CHECK(g.status.message().find("3 rows for 4 positions") != std::string::npos);
    }
  }
  SUBCASE("a position two ranks both fill") {
    const auto got = Gather({RowsAt({0, 1}, width), RowsAt({1, 2}, width)}, 4, width, 64);
    CHECK(got[0].status.code() == StatusCode::kInternal);
    CHECK(got[0].status.message().find("position 1, which another row filled") !=
          std::string::npos);
  }
  SUBCASE("a position outside the output") {
    const auto got = Gather({RowsAt({0, 1}, width), RowsAt({9}, width)}, 3, width, 64);
    CHECK(got[0].status.code() == StatusCode::kInternal);
    CHECK(got[0].status.message().find("outside [0, 3)") != std::string::npos);
  }
}
