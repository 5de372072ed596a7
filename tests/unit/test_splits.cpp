// Train/valid/test splits: parsing, fractions, per-class counts, determinism, unlabelled nodes.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>

#include "skiff/convert/splits.h"

using namespace skiff;
using namespace skiff::convert;

namespace {

std::vector<int32_t> Labels(int64_t n, int32_t classes, int64_t unlabelled_every) {
  std::vector<int32_t> labels(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) {
    labels[static_cast<size_t>(v)] = (unlabelled_every > 0 && v % unlabelled_every == 0)
                                         ? -1
                                         : static_cast<int32_t>(v % classes);
  }
  return labels;
}

void CheckWellFormed(const Splits& s, const std::vector<int32_t>& labels) {
  std::set<int64_t> seen;
  for (const auto* part : {&s.train, &s.valid, &s.test}) {
    CHECK(std::is_sorted(part->begin(), part->end()));
    for (int64_t v : *part) {
      CHECK(labels[static_cast<size_t>(v)] >= 0);  // only labelled nodes
      CHECK(seen.insert(v).second);                // disjoint
    }
  }
}

}  // namespace

TEST_CASE("splits: parsing fractions and per-class counts") {
  auto f = ParseSplitSpec("0.6,0.2,0.2", 7);
  REQUIRE(f.ok());
  CHECK(f->kind == SplitSpec::Kind::kFractions);
  CHECK(f->train_fraction == 0.6);
  CHECK(f->test_fraction == 0.2);
  CHECK(f->seed == 7);
  auto two = ParseSplitSpec("0.5,0.25", 0);
  REQUIRE(two.ok());
  CHECK(two->test_fraction == doctest::Approx(0.25));
  auto pc = ParseSplitSpec("per-class:20,30", 1);
  REQUIRE(pc.ok());
  CHECK(pc->kind == SplitSpec::Kind::kPerClass);
  CHECK(pc->train_per_class == 20);
  CHECK(pc->valid_per_class == 30);
  CHECK(pc->test_per_class == -1);
  auto pc3 = ParseSplitSpec("per-class:20,30,1000", 1);
  REQUIRE(pc3.ok());
  CHECK(pc3->test_per_class == 1000);
  for (const std::string bad :
       {"", "0.6", "0.6,x,0.2", "0.7,0.2,0.2", "-0.1,0.5", "1,2,3,4", "per-class:20",
        "per-class:20,3.5", "per-class:a,b", "per-class:-1,3", "0.6,,0.2"}) {
    CAPTURE(bad);
    auto r = ParseSplitSpec(bad, 0);
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(r.status().message().find("split") != std::string::npos);
  }
}

TEST_CASE("splits: fractions cover the labelled nodes in the asked proportions") {
  const auto labels = Labels(10000, 5, 10);  // 1000 unlabelled
  auto spec = ParseSplitSpec("0.6,0.2,0.2", 3);
  REQUIRE(spec.ok());
  auto s = MakeSplits(*spec, labels, 5);
  REQUIRE(s.ok());
  CheckWellFormed(*s, labels);
  CHECK(s->train.size() == 5400);
  CHECK(s->valid.size() == 1800);
  CHECK(s->test.size() == 1800);

  auto partial = MakeSplits(*ParseSplitSpec("0.1,0.1,0.1", 3), labels, 5);
  REQUIRE(partial.ok());
  CHECK(partial->train.size() == 900);
  CHECK(partial->test.size() == 900);
}

TEST_CASE("splits: per-class counts, the rest to test, small classes give what they have") {
  auto labels = Labels(7000, 7, 0);
  // Class 6 has only 30 members: 20 train, 10 valid, 0 test.
  int64_t seen6 = 0;
  for (auto& l : labels) {
    if (l == 6 && ++seen6 > 30) l = -1;
  }
  auto s = MakeSplits(*ParseSplitSpec("per-class:20,30", 1), labels, 7);
  REQUIRE(s.ok());
  CheckWellFormed(*s, labels);
  std::map<int32_t, int64_t> train_per, valid_per;
  for (int64_t v : s->train) ++train_per[labels[static_cast<size_t>(v)]];
  for (int64_t v : s->valid) ++valid_per[labels[static_cast<size_t>(v)]];
  for (int32_t c = 0; c < 7; ++c) CHECK(train_per[c] == 20);
  for (int32_t c = 0; c < 6; ++c) CHECK(valid_per[c] == 30);
  CHECK(valid_per[6] == 10);
  CHECK(s->train.size() == 140);
  CHECK(s->valid.size() == 190);
  CHECK(s->test.size() == 6 * (1000 - 50));

  auto capped = MakeSplits(*ParseSplitSpec("per-class:20,30,100", 1), labels, 7);
  REQUIRE(capped.ok());
  CHECK(capped->test.size() == 600);
}

TEST_CASE("splits: deterministic by seed, different across seeds") {
  const auto labels = Labels(5000, 4, 0);
  for (const std::string text : {"0.5,0.2,0.3", "per-class:10,10"}) {
    CAPTURE(text);
    auto a = MakeSplits(*ParseSplitSpec(text, 11), labels, 4);
    auto b = MakeSplits(*ParseSplitSpec(text, 11), labels, 4);
    auto c = MakeSplits(*ParseSplitSpec(text, 12), labels, 4);
    REQUIRE((a.ok() && b.ok() && c.ok()));
    CHECK(a->train == b->train);
    CHECK(a->valid == b->valid);
    CHECK(a->test == b->test);
    CHECK(a->train != c->train);
  }
}

TEST_CASE("splits: labels of num_classes or more are refused") {
  auto s = MakeSplits(*ParseSplitSpec("0.5,0.5", 0), {0, 1, 5}, 3);
  CHECK(s.status().code() == StatusCode::kInvalidArgument);
  CHECK(s.status().message().find("node 2") != std::string::npos);
}
