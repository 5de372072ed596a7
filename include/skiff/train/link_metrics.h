// Link-prediction metrics: how well scores separate true edges from non-edges.
//
// Two protocols (docs/training.md, "Link prediction"):
//   - the GAE protocol (Kipf & Welling 2016): every held-out edge and as many sampled non-edges,
//     scored once each; ROC AUC and average precision over the two score sets;
//   - the ranking protocol (OGB ogbl-citation2): each held-out edge (s, d) against its own set of
//     candidate destinations; the rank of d's score among them gives MRR and Hits@K. Ties count
//     half, as OGB's evaluator does: rank = 1 + #{c : score_c > score_d} + #{c : score_c ==
//     score_d} / 2.
//
// Thread safety: pure functions; a RankingAccumulator is a value used by one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace skiff::train {

// ROC AUC: the probability that a positive outscores a negative, ties counting half (the
// Mann-Whitney statistic over average ranks). 0.5 when either side is empty. O((P+N) log(P+N)).
double RocAuc(std::span<const float> positives, std::span<const float> negatives);

// Average precision as scikit-learn's average_precision_score computes it: sum over distinct
// score thresholds, highest first, of (recall gained) x (precision at that threshold), tied
// scores forming one threshold. 0 when there are no positives.
double AveragePrecision(std::span<const float> positives, std::span<const float> negatives);

// OGB's Hits@K against a shared set of negatives (ogbl-collab, -ppa, -ddi): the fraction of
// positives scoring strictly above the K-th highest negative score; 1 when there are fewer than K
// negatives (OGB's evaluator's rule). O(N log K + P).
double HitsAgainstNegatives(std::span<const float> positives, std::span<const float> negatives,
                            int k);
// The cut-offs reported for it (OGB's: 20 for ddi, 50 for collab, 100 for ppa).
inline constexpr std::array<int, 3> kSharedHitsAt = {20, 50, 100};

// The Hits@K cut-offs reported (the and OGB's: 1, 10, 50, 100).
inline constexpr std::array<int, 4> kHitsAt = {1, 10, 50, 100};

struct RankingMetrics {
  int64_t count = 0;                          // ranked positives
  double mrr = 0;                             // mean of 1 / rank
  std::array<double, kHitsAt.size()> hits{};  // fraction with rank <= kHitsAt[i]
  // "mrr": .., "hits@1": .., ... as JSON members (no braces), prefixed by `prefix` ("valid_").
  std::string JsonMembers(const std::string& prefix) const;
};

// The rank of a positive's score among its candidates' (OGB's rule above).
double RankAmong(float positive, std::span<const float> candidates);

// Sums ranks over positives.
class RankingAccumulator {
 public:
  // One positive and the scores of its candidates (`candidates` may be empty: rank 1).
  void Add(float positive, std::span<const float> candidates);
  void AddRank(double rank);
  RankingMetrics Result() const;

 private:
  int64_t count_ = 0;
  double reciprocal_sum_ = 0;
  std::array<int64_t, kHitsAt.size()> hits_{};
};

}  // namespace skiff::train
