// RowsToLead: rows computed on W ranks (threads, dist::CreateThreadCommunicators) reach rank 0 at
// their positions, bitwise, in as many sends as the caller makes; rows that do not cover the
// positions once each are reported, never written twice.
#include <doctest/doctest.h>

#include <cstring>
#include <thread>

#include "skiff/dist/communicator.h"
#include "skiff/train/gather_rows.h"

using namespace skiff;
using namespace skiff::train;

namespace {

constexpr int64_t kWidth = 3;

struct Gathered {
  Status status;
  std::vector<int32_t> labels;
  std::vector<float> values;
};

// Row p's label and values: distinct per position, with a negative zero.
int32_t LabelOf(int64_t p) { return static_cast<int32_t>(p % 7); }
std::vector<float> ValuesOf(int64_t p) {
  std::vector<float> v;
  for (int64_t k = 0; k < kWidth; ++k) {
    v.push_back(k == 0 && p % 5 == 0 ? -0.0f : static_cast<float>(p) + 0.25f * k);
  }
  return v;
}

// Rank r adds sends[r][s] before its s-th Send (every rank sends sends[0].size() times), then
// finishes; returns each rank's outcome (the first error). With `send_all_bytes` > 0 the ranks
// add all their rows apart and send them with one SendAll(send_all_bytes) instead.
std::vector<Gathered> Gather(const std::vector<std::vector<std::vector<int64_t>>>& sends, int64_t n,
                             int64_t send_all_bytes = 0) {
  const int ranks = static_cast<int>(sends.size());
  auto comms = dist::CreateThreadCommunicators(ranks, {.timeout_seconds = 60});
  std::vector<Gathered> out(sends.size());
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      Gathered& g = out[static_cast<size_t>(r)];
      RowsToLead rows(*comms[static_cast<size_t>(r)], n, kWidth, &g.labels, &g.values);
      for (const std::vector<int64_t>& batch : sends[static_cast<size_t>(r)]) {
        for (const int64_t p : batch) {
          const Status st = rows.Add(p, LabelOf(p), ValuesOf(p));
          if (!st.ok() && g.status.ok()) g.status = st;
        }
        if (send_all_bytes > 0) continue;
        const Status st = rows.Send();
        if (!st.ok() && g.status.ok()) g.status = st;
      }
      if (send_all_bytes > 0) {
        const Status st = rows.SendAll(send_all_bytes);
        if (!st.ok() && g.status.ok()) g.status = st;
      }
      if (g.status.ok()) g.status = rows.Finish();
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

// Every rank's outcome is OK, rank 0 holds rows 0..12 bitwise, the others nothing.
void CheckAllThirteen(const std::vector<Gathered>& got) {
  for (const Gathered& g : got) REQUIRE(g.status.ok());
  std::vector<int32_t> want_labels;
  std::vector<float> want_values;
  for (int64_t p = 0; p < 13; ++p) {
    want_labels.push_back(LabelOf(p));
    for (const float v : ValuesOf(p)) want_values.push_back(v);
  }
  CHECK(got[0].labels == want_labels);
  REQUIRE(got[0].values.size() == want_values.size());
  CHECK(std::memcmp(got[0].values.data(), want_values.data(), want_values.size() * 4) == 0);
  for (size_t r = 1; r < got.size(); ++r) {
    CHECK(got[r].labels.empty());
    CHECK(got[r].values.empty());
  }
}

// Three sends; rank 1 computes nothing, rank 2 the most, rank 0 some of its own.
const std::vector<std::vector<std::vector<int64_t>>> kThreeSends = {
    {{4}, {}, {0}}, {{}, {}, {}}, {{1, 2, 3}, {5, 6, 7, 8, 9, 10}, {11, 12}}};

}  // namespace

TEST_CASE("rows reach rank 0 at their positions, whichever rank computed them") {
  CheckAllThirteen(Gather(kThreeSends, 13));
}

TEST_CASE("ranks that computed apart send all their rows at the end, in rounds") {
  const int64_t row = 8 + 4 + 4 * kWidth;  // position, label, values
  // Rank 2's 11 rows in rounds of 2 (6 rounds, ranks 0 and 1 sending nothing in most); of 1 (a
  // round smaller than a row still sends one); and in one round.
  for (const int64_t bytes : {2 * row + 5, int64_t{3}, int64_t{64} << 20}) {
    CAPTURE(bytes);
    CheckAllThirteen(Gather(kThreeSends, 13, bytes));
  }
  // Rows added after a SendAll go with the next one.
  auto comms = dist::CreateThreadCommunicators(2, {.timeout_seconds = 60});
  std::vector<Gathered> got(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      Gathered& g = got[static_cast<size_t>(r)];
      RowsToLead rows(*comms[static_cast<size_t>(r)], 3, kWidth, &g.labels, &g.values);
      const std::vector<int64_t> first = r == 0 ? std::vector<int64_t>{0} : std::vector<int64_t>{1};
      for (const int64_t p : first) SKIFF_CHECK(rows.Add(p, LabelOf(p), ValuesOf(p)).ok());
      SKIFF_CHECK(rows.SendAll(row).ok());
      if (r == 1) SKIFF_CHECK(rows.Add(2, LabelOf(2), ValuesOf(2)).ok());
      SKIFF_CHECK(rows.SendAll(row).ok());
      g.status = rows.Finish();
    });
  }
  for (auto& t : threads) t.join();
  CHECK(got[0].status.ok());
  CHECK(got[0].labels == std::vector<int32_t>{LabelOf(0), LabelOf(1), LabelOf(2)});
}

TEST_CASE("rows that miss, repeat or leave the positions are reported on rank 0") {
  SUBCASE("a position no rank computed") {
    const auto got = Gather({{{0, 1}}, {{3}}}, 4);
    CHECK(got[0].status.code() == StatusCode::kInternal);
    CHECK(got[0].status.message().find("3 of 4 rows; none for position 2") != std::string::npos);
    CHECK(got[1].status.ok());
  }
  SUBCASE("a position two ranks both computed") {
    const auto got = Gather({{{0, 1}}, {{1, 2}}}, 3);
    CHECK(got[0].status.code() == StatusCode::kInternal);
    CHECK(got[0].status.message().find("rank 1 computed a row for position 1, which another row "
                                       "filled") != std::string::npos);
  }
  SUBCASE("a position outside the output, on rank 0 itself") {
    const auto got = Gather({{{0, 9}}, {{1}}}, 2);
    CHECK(got[0].status.code() == StatusCode::kInternal);
    CHECK(got[0].status.message().find("rank 0 computed a row for position 9, outside [0, 2)") !=
          std::string::npos);
  }
}
