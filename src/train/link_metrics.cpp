#include "skiff/train/link_metrics.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <utility>
#include <vector>

namespace skiff::train {
namespace {

// (score, is_positive) of both sets, sorted by score descending.
std::vector<std::pair<float, bool>> Labelled(std::span<const float> positives,
                                             std::span<const float> negatives) {
  std::vector<std::pair<float, bool>> all;
  all.reserve(positives.size() + negatives.size());
  for (float s : positives) all.emplace_back(s, true);
  for (float s : negatives) all.emplace_back(s, false);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return all;
}

}  // namespace

double RocAuc(std::span<const float> positives, std::span<const float> negatives) {
  if (positives.empty() || negatives.empty()) return 0.5;
  const auto all = Labelled(positives, negatives);
  // Walk from the highest score: each group of ties adds, for its positives, the negatives
  // strictly below (counted as the negatives not yet seen) plus half the tied negatives.
  double wins = 0;
  int64_t negatives_seen = 0;
  const auto n = static_cast<int64_t>(negatives.size());
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    int64_t pos = 0, neg = 0;
    for (; j < all.size() && all[j].first == all[i].first; ++j) (all[j].second ? pos : neg)++;
    negatives_seen += neg;
    wins += static_cast<double>(pos) *
            (static_cast<double>(n - negatives_seen) + 0.5 * static_cast<double>(neg));
    i = j;
  }
  return wins / (static_cast<double>(positives.size()) * static_cast<double>(n));
}

double AveragePrecision(std::span<const float> positives, std::span<const float> negatives) {
  if (positives.empty()) return 0;
  const auto all = Labelled(positives, negatives);
  const auto total = static_cast<double>(positives.size());
  double ap = 0;
  int64_t tp = 0, seen = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    int64_t pos = 0;
    for (; j < all.size() && all[j].first == all[i].first; ++j) pos += all[j].second ? 1 : 0;
    seen += static_cast<int64_t>(j - i);
    tp += pos;
    ap +=
        (static_cast<double>(pos) / total) * (static_cast<double>(tp) / static_cast<double>(seen));
    i = j;
  }
  return ap;
}

double HitsAgainstNegatives(std::span<const float> positives, std::span<const float> negatives,
                            int k) {
  if (positives.empty()) return 0;
  if (k < 1 || static_cast<int64_t>(negatives.size()) < k) return 1;
  std::vector<float> top(negatives.begin(), negatives.end());
  std::nth_element(top.begin(), top.begin() + (k - 1), top.end(), std::greater<float>());
  const float kth = top[static_cast<size_t>(k - 1)];
  int64_t above = 0;
  for (float p : positives) above += p > kth ? 1 : 0;
  return static_cast<double>(above) / static_cast<double>(positives.size());
}

double RankAmong(float positive, std::span<const float> candidates) {
  int64_t above = 0, tied = 0;
  for (float c : candidates) {
    above += c > positive ? 1 : 0;
    tied += c == positive ? 1 : 0;
  }
  return 1.0 + static_cast<double>(above) + 0.5 * static_cast<double>(tied);
}

void RankingAccumulator::Add(float positive, std::span<const float> candidates) {
  AddRank(RankAmong(positive, candidates));
}

void RankingAccumulator::AddRank(double rank) {
  ++count_;
  reciprocal_sum_ += 1.0 / rank;
  for (size_t k = 0; k < kHitsAt.size(); ++k) hits_[k] += rank <= kHitsAt[k] ? 1 : 0;
}

RankingMetrics RankingAccumulator::Result() const {
  RankingMetrics m;
  m.count = count_;
  if (count_ == 0) return m;
  const auto n = static_cast<double>(count_);
  m.mrr = reciprocal_sum_ / n;
  for (size_t k = 0; k < kHitsAt.size(); ++k) m.hits[k] = static_cast<double>(hits_[k]) / n;
  return m;
}

std::string RankingMetrics::JsonMembers(const std::string& prefix) const {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6f", mrr);
  std::string out = "\"" + prefix + "mrr\": " + buf;
  for (size_t k = 0; k < kHitsAt.size(); ++k) {
    std::snprintf(buf, sizeof(buf), "%.6f", hits[k]);
    out += ", \"" + prefix + "hits@" + std::to_string(kHitsAt[k]) + "\": " + buf;
  }
  return out;
}

}  // namespace skiff::train
