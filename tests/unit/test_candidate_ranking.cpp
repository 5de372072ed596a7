// RankAmongCandidates: ranks equal to scoring every candidate at once, whatever the chunk size,
// with ties, filtered candidates and every node batch encoded once for the candidates; its
// refusals.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <vector>

#include "skiff/random.h"
#include "skiff/train/candidate_ranking.h"
#include "skiff/train/link_metrics.h"

using namespace skiff;
using namespace skiff::train;

namespace {

constexpr int64_t kNodes = 500, kDim = 3, kBatchNodes = 32;

// A node's representation: a function of its ID alone (as EncodeBatches' is of its batch).
std::vector<float> Representation(int64_t v) {
  return {static_cast<float>(std::sin(0.37 * static_cast<double>(v))),
          static_cast<float>(std::cos(0.11 * static_cast<double>(v))),
          static_cast<float>(v % 7) / 7.0f};
}

struct Fake {
  std::map<int64_t, int> encoded;  // per node batch: how often encoded
  BatchEncoder encode = [this](std::span<const int64_t> batches, const auto& sink) -> Status {
    for (const int64_t c : batches) {
      ++encoded[c];
      std::vector<int64_t> nodes;
      std::vector<float> rows;
      for (int64_t v = c * kBatchNodes; v < std::min(kNodes, (c + 1) * kBatchNodes); ++v) {
        nodes.push_back(v);
        const auto r = Representation(v);
        rows.insert(rows.end(), r.begin(), r.end());
      }
      SKIFF_RETURN_IF_ERROR(sink(nodes, rows.data()));
    }
    return Status::Ok();
  };
  CrossScorer score = [](const float* emb, int64_t rows, int32_t src, std::span<const int32_t> cand,
                         std::vector<float>* out) -> Status {
    out->clear();
    for (const int32_t c : cand) {
      REQUIRE((c >= 0 && c < rows));
      float dot = 0;
      for (int64_t d = 0; d < kDim; ++d) dot += emb[src * kDim + d] * emb[c * kDim + d];
      out->push_back(dot);
    }
    return Status::Ok();
  };
};

struct Case {
  std::vector<int64_t> pairs, candidates;
  int64_t count = 60, k = 25;
};

Case MakeCase() {
  Case c;
  Rng rng(7);
  for (int64_t i = 0; i < c.count; ++i) {
    c.pairs.push_back(static_cast<int64_t>(rng.Below(kNodes)));
    c.pairs.push_back(static_cast<int64_t>(rng.Below(kNodes)));
    for (int64_t j = 0; j < c.k; ++j) {
      // Every fifth candidate the pair's own destination: a tie.
      c.candidates.push_back(j % 5 == 0 ? c.pairs.back() : static_cast<int64_t>(rng.Below(kNodes)));
    }
  }
  return c;
}

bool Known(int64_t v) { return v % 3 == 0; }

// The fake scorer's score of (a, b), alone in its call.
float Score(int64_t a, int64_t b) {
  std::vector<float> emb = Representation(a);
  const auto y = Representation(b);
  emb.insert(emb.end(), y.begin(), y.end());
  std::vector<float> out;
  const int32_t cand[1] = {1};
  REQUIRE(Fake().score(emb.data(), 2, 0, cand, &out).ok());
  return out[0];
}

// Ranks with every score computed directly (RankAmong), filtered by Known when asked.
std::vector<double> Expected(const Case& c, bool filtered) {
  std::vector<double> out;
  for (int64_t i = 0; i < c.count; ++i) {
    const int64_t s = c.pairs[2 * i], d = c.pairs[2 * i + 1];
    std::vector<float> scores;
    for (int64_t j = 0; j < c.k; ++j) {
      const int64_t v = c.candidates[i * c.k + j];
      if (!filtered || !Known(v)) scores.push_back(Score(s, v));
    }
    out.push_back(RankAmong(Score(s, d), scores));
  }
  return out;
}

CandidateRankingInput Input(const Case& c, uint64_t chunk_bytes) {
  return {.pairs = c.pairs,
          .count = c.count,
          .candidates = c.candidates,
          .k = c.k,
          .num_nodes = kNodes,
          .batch_nodes = kBatchNodes,
          .dim = kDim,
          .chunk_bytes = chunk_bytes};
}

}  // namespace

TEST_CASE("candidate ranking: the ranks of scoring every candidate at once, whatever the chunk") {
  const Case c = MakeCase();
  const KnownFilter filter = [](int64_t, std::span<const int64_t> nodes, std::span<uint8_t> known) {
    for (size_t j = 0; j < nodes.size(); ++j) known[j] = Known(nodes[j]) ? 1 : 0;
    return Status::Ok();
  };
  const uint64_t row = kDim * 4 + 8;
  for (const bool filtered : {false, true}) {
    const std::vector<double> expected = Expected(c, filtered);
    double ties = 0;
    for (size_t i = 0; i < expected.size(); ++i) ties += expected[i] != std::floor(expected[i]);
    CHECK(ties > 0);  // the destinations among the candidates tie (half ranks)
    for (const uint64_t chunk : {uint64_t{0}, uint64_t{1}, 7 * row, 100 * row, 1000 * row}) {
      CAPTURE(chunk);
      Fake fake;
      auto ranks = RankAmongCandidates(Input(c, chunk), fake.encode, fake.score,
                                       filtered ? filter : KnownFilter());
      REQUIRE_MESSAGE(ranks.ok(), ranks.status().ToString());
      CHECK(*ranks == expected);
      // Each node batch: once for the pairs' ends, once more for its candidates at most.
      for (const auto& [batch, times] : fake.encoded) CHECK(times <= 2);
    }
  }
}

TEST_CASE("candidate ranking: refusals name what is wrong; the callbacks' errors pass through") {
  Case c = MakeCase();
  Fake fake;
  c.candidates[17] = kNodes;
  auto bad = RankAmongCandidates(Input(c, 0), fake.encode, fake.score);
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("candidate 17 is node 500") != std::string::npos);
  c = MakeCase();
  CandidateRankingInput short_rows = Input(c, 0);
  short_rows.candidates = short_rows.candidates.first(10);
  CHECK(RankAmongCandidates(short_rows, fake.encode, fake.score).status().code() ==
        StatusCode::kInvalidArgument);
  const BatchEncoder failing = [](std::span<const int64_t>, const auto&) -> Status {
    return Status::IOError("features.bin: read failed");
  };
  const auto failed = RankAmongCandidates(Input(c, 0), failing, fake.score);
  REQUIRE(!failed.ok());
  CHECK(failed.status().message() == "features.bin: read failed");
}
