// Link-prediction metrics against brute-force definitions and known values (scikit-learn's
// roc_auc_score / average_precision_score, OGB's tie rule), and edge batches: their seeds, rows
// and negatives.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "skiff/sampler/graph_source.h"
#include "skiff/train/link_batches.h"
#include "skiff/train/link_metrics.h"

using namespace skiff;
using namespace skiff::train;

namespace {

// AUC by its definition: over every (positive, negative) pair, 1 when the positive is higher,
// 1/2 on a tie.
double PairwiseAuc(const std::vector<float>& pos, const std::vector<float>& neg) {
  double wins = 0;
  for (float p : pos) {
    for (float n : neg) wins += p > n ? 1.0 : (p == n ? 0.5 : 0.0);
  }
  return wins / (static_cast<double>(pos.size()) * static_cast<double>(neg.size()));
}

}  // namespace

TEST_CASE("link metrics: AUC matches the pairwise definition, ties included") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::uniform_int_distribution<int> score(0, 9);  // coarse scores: many ties
    std::vector<float> pos(1 + trial * 3), neg(2 + trial * 5);
    for (float& s : pos) s = static_cast<float>(score(rng)) + 1.0f;
    for (float& s : neg) s = static_cast<float>(score(rng));
    CAPTURE(trial);
    CHECK(RocAuc(pos, neg) == doctest::Approx(PairwiseAuc(pos, neg)).epsilon(1e-12));
  }
  CHECK(RocAuc(std::vector<float>{1, 2}, std::vector<float>{0}) == 1.0);
  CHECK(RocAuc(std::vector<float>{0}, std::vector<float>{1, 2}) == 0.0);
  CHECK(RocAuc(std::vector<float>{}, std::vector<float>{1}) == 0.5);
}

TEST_CASE("link metrics: average precision as scikit-learn computes it") {
  // y_true = [1, 0, 1, 1, 0], y_score = [0.9, 0.8, 0.7, 0.4, 0.3]:
  // precision at each positive 1, 2/3, 3/4 -> AP = (1 + 2/3 + 3/4) / 3.
  CHECK(AveragePrecision(std::vector<float>{0.9f, 0.7f, 0.4f}, std::vector<float>{0.8f, 0.3f}) ==
        doctest::Approx((1.0 + 2.0 / 3 + 0.75) / 3));
  // sklearn: average_precision_score([1, 0, 1, 0], [0.5, 0.5, 0.5, 0.1]) == 2/3 (one threshold
  // at 0.5 holding both positives and a negative, precision 2/3, recall 1).
  CHECK(AveragePrecision(std::vector<float>{0.5f, 0.5f}, std::vector<float>{0.5f, 0.1f}) ==
        doctest::Approx(2.0 / 3));
  CHECK(AveragePrecision(std::vector<float>{3, 2}, std::vector<float>{1}) == 1.0);
  CHECK(AveragePrecision(std::vector<float>{}, std::vector<float>{1}) == 0.0);
}

TEST_CASE("link metrics: ranks count ties half; MRR and Hits@K") {
  CHECK(RankAmong(1.0f, std::vector<float>{0, 0.5f}) == 1.0);
  CHECK(RankAmong(1.0f, std::vector<float>{2, 1, 1, 0}) == 3.0);  // 1 above, 2 tied
  CHECK(RankAmong(1.0f, std::vector<float>{}) == 1.0);
  RankingAccumulator acc;
  acc.AddRank(1);
  acc.AddRank(4);
  acc.AddRank(20);
  acc.AddRank(200);
  const RankingMetrics m = acc.Result();
  CHECK(m.count == 4);
  CHECK(m.mrr == doctest::Approx((1 + 0.25 + 0.05 + 0.005) / 4));
  CHECK(m.hits[0] == 0.25);  // @1
  CHECK(m.hits[1] == 0.5);   // @10
  CHECK(m.hits[2] == 0.75);  // @50
  CHECK(m.hits[3] == 0.75);  // @100
  CHECK(m.JsonMembers("valid_").find("\"valid_hits@10\": 0.500000") != std::string::npos);
  CHECK(RankingAccumulator().Result().mrr == 0);
}

TEST_CASE("link metrics: Hits@K against shared negatives, as OGB's collab/ppa/ddi evaluator") {
  // Negatives 9, 8, ..., 0: the 3rd highest is 7; positives strictly above it count.
  std::vector<float> negatives;
  for (int v = 9; v >= 0; --v) negatives.push_back(static_cast<float>(v));
  const std::vector<float> positives = {10, 7.5f, 7, 3};
  CHECK(HitsAgainstNegatives(positives, negatives, 3) == 0.5);   // 10 and 7.5; 7 ties: not above
  CHECK(HitsAgainstNegatives(positives, negatives, 1) == 0.25);  // above 9: 10 alone
  CHECK(HitsAgainstNegatives(positives, negatives, 10) == 1.0);  // above 0: all four
  CHECK(HitsAgainstNegatives(positives, negatives, 11) == 1.0);  // fewer than K negatives
  CHECK(HitsAgainstNegatives({}, negatives, 3) == 0.0);
}

TEST_CASE("edge batches: distinct seeds, rows that map back, every pair once per epoch") {
  const std::vector<int64_t> pairs = {0, 1, 1, 2, 2, 0, 3, 4, 4, 5, 5, 3, 0, 5};
  const auto plan = PlanEdgeBatches(7, 3, /*shuffle=*/true, 11, 2);
  std::multiset<int64_t> seen;
  for (const auto& ids : plan) seen.insert(ids.begin(), ids.end());
  CHECK(seen == std::multiset<int64_t>{0, 1, 2, 3, 4, 5, 6});
  CHECK(PlanEdgeBatches(7, 3, true, 11, 2) == plan);  // deterministic
  CHECK(PlanEdgeBatches(7, 3, true, 11, 3) != plan);  // another epoch, another order

  const std::vector<int64_t> negatives = {9, 1, 9};
  const EdgeBatch b = MakeEdgeBatch(pairs, plan[0], negatives);
  CHECK(std::set<int64_t>(b.seeds.begin(), b.seeds.end()).size() == b.seeds.size());
  REQUIRE(b.pos_src.size() == plan[0].size());
  for (size_t i = 0; i < plan[0].size(); ++i) {
    CHECK(b.seeds[static_cast<size_t>(b.pos_src[i])] == pairs[2 * plan[0][i]]);
    CHECK(b.seeds[static_cast<size_t>(b.pos_dst[i])] == pairs[2 * plan[0][i] + 1]);
  }
  REQUIRE(b.neg_dst.size() == 3);
  for (size_t j = 0; j < 3; ++j) CHECK(b.seeds[static_cast<size_t>(b.neg_dst[j])] == negatives[j]);
  CHECK(b.neg_dst[0] == b.neg_dst[2]);  // a repeated negative is one row

  // Undirected pairs are taken either way round, drawn per epoch.
  auto reversed = [](int64_t p) { return ReversedInEpoch(11, 2, p); };
  const EdgeBatch r = MakeEdgeBatch(pairs, plan[0], negatives, reversed);
  for (size_t i = 0; i < plan[0].size(); ++i) {
    const int64_t p = plan[0][i];
    const bool rev = ReversedInEpoch(11, 2, p);
    CHECK(r.seeds[static_cast<size_t>(r.pos_src[i])] == pairs[2 * p + (rev ? 1 : 0)]);
    CHECK(r.seeds[static_cast<size_t>(r.pos_dst[i])] == pairs[2 * p + (rev ? 0 : 1)]);
  }
  int over_epochs = 0;
  for (uint64_t e = 0; e < 1000; ++e) over_epochs += ReversedInEpoch(11, e, 3) ? 1 : 0;
  CHECK(over_epochs > 400);
  CHECK(over_epochs < 600);
}

TEST_CASE("edge batches: negatives are seeded, in range, and by degree follow the edges") {
  // A star: every edge ends at node 0 but one, so degree-based draws are mostly 0.
  std::vector<int64_t> offsets = {0, 1, 2, 3, 4, 5, 6};
  std::vector<int64_t> neighbors = {1, 0, 0, 0, 0, 0};
  auto graph = sampler::InMemoryGraph::FromCsr(offsets, neighbors);
  REQUIRE(graph.ok());
  NegativeOptions uniform{1000, NegativeSampler::kUniform, 6, nullptr};
  auto a = DrawNegatives(uniform, 5, 0, 3);
  REQUIRE(a.ok());
  CHECK(*a == *DrawNegatives(uniform, 5, 0, 3));
  CHECK(*a != *DrawNegatives(uniform, 5, 0, 4));
  for (int64_t v : *a) CHECK((v >= 0 && v < 6));
  CHECK(std::set<int64_t>(a->begin(), a->end()).size() == 6);

  NegativeOptions degree{1000, NegativeSampler::kDegree, 6, graph->get()};
  auto d = DrawNegatives(degree, 5, 0, 3);
  REQUIRE(d.ok());
  const auto zeros = std::count(d->begin(), d->end(), 0);
  const auto ones = std::count(d->begin(), d->end(), 1);
  CHECK(zeros + ones == 1000);
  CHECK(zeros > 700);  // expected 5/6 of the draws
  CHECK(ones > 80);    // expected 1/6

  NegativeOptions no_graph{10, NegativeSampler::kDegree, 6, nullptr};
  CHECK(DrawNegatives(no_graph, 5, 0, 0).status().code() == StatusCode::kInvalidArgument);
}
