// Train/valid/test splits (see include/skiff/convert/splits.h).
//
// Decision: draws use skiff::Rng and its Fisher-Yates Shuffle rather than std::shuffle,
// whose sequence differs between standard libraries; a split is a function of (spec, labels) only.
#include "skiff/convert/splits.h"

#include <iterator>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "skiff/random.h"

namespace skiff::convert {
namespace {

constexpr uint64_t kSplitStream = 0x53504c4954ULL;  // "SPLIT"

// Parses a comma-separated list of numbers; `what` names the spec for errors.
Result<std::vector<double>> ParseNumbers(const std::string& text, const std::string& spec) {
  std::vector<double> values;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string part =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(part.c_str(), &end);
    if (part.empty() || end != part.c_str() + part.size() || errno != 0 || !std::isfinite(v)) {
      return Status::InvalidArgument("split '" + spec + "': '" + part + "' is not a number");
    }
    values.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return values;
}

}  // namespace

Result<SplitSpec> ParseSplitSpec(const std::string& text, uint64_t seed) {
  SplitSpec spec;
  spec.seed = seed;
  const std::string kPerClass = "per-class:";
  const std::string usage =
      " (expected fractions like 0.6,0.2,0.2 or per-class counts like per-class:20,30)";
  if (text.rfind(kPerClass, 0) == 0) {
    spec.kind = SplitSpec::Kind::kPerClass;
    SKIFF_ASSIGN_OR_RETURN(auto v, ParseNumbers(text.substr(kPerClass.size()), text));
    if (v.size() < 2 || v.size() > 3) {
      return Status::InvalidArgument("split '" + text + "': expected 2 or 3 counts" + usage);
    }
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] != std::floor(v[i]) || v[i] < (i == 2 ? -1 : 0) || v[i] > 1e15) {
        return Status::InvalidArgument("split '" + text +
                                       "': counts must be non-negative integers" + usage);
      }
    }
    spec.train_per_class = static_cast<int64_t>(v[0]);
    spec.valid_per_class = static_cast<int64_t>(v[1]);
    spec.test_per_class = v.size() == 3 ? static_cast<int64_t>(v[2]) : -1;
    return spec;
  }
  spec.kind = SplitSpec::Kind::kFractions;
  SKIFF_ASSIGN_OR_RETURN(auto v, ParseNumbers(text, text));
  if (v.size() < 2 || v.size() > 3) {
    return Status::InvalidArgument("split '" + text + "': expected 2 or 3 fractions" + usage);
  }
  for (double f : v) {
    if (f < 0 || f > 1) {
      return Status::InvalidArgument("split '" + text + "': fractions must lie in [0, 1]" + usage);
    }
  }
  const double sum = v[0] + v[1] + (v.size() == 3 ? v[2] : 0);
  if (sum > 1 + 1e-9) {
    return Status::InvalidArgument("split '" + text + "': fractions sum to " + std::to_string(sum) +
                                   ", more than 1" + usage);
  }
  spec.train_fraction = v[0];
  spec.valid_fraction = v[1];
  spec.test_fraction = v.size() == 3 ? v[2] : std::max(0.0, 1 - v[0] - v[1]);
  return spec;
}

namespace {

// Takes `count` nodes from `*it` on into `out`, and moves `*it` past them.
void Take(std::vector<int64_t>::const_iterator* it, int64_t count, std::vector<int64_t>* out) {
  out->insert(out->end(), *it, *it + count);
  *it += count;
}

// The labelled nodes, shuffled, cut by the spec's fractions.
Splits SplitByFractions(const SplitSpec& spec, const std::vector<int32_t>& labels, Rng& rng) {
  std::vector<int64_t> labelled;
  for (size_t v = 0; v < labels.size(); ++v) {
    if (labels[v] >= 0) labelled.push_back(static_cast<int64_t>(v));
  }
  Shuffle(labelled, rng);
  const auto n = static_cast<double>(labelled.size());
  const auto total = static_cast<int64_t>(labelled.size());
  const int64_t n_train = std::min<int64_t>(total, std::llround(spec.train_fraction * n));
  const int64_t n_valid = std::min<int64_t>(total - n_train, std::llround(spec.valid_fraction * n));
  const bool rest = spec.train_fraction + spec.valid_fraction + spec.test_fraction >= 1 - 1e-9;
  const int64_t n_test =
      rest ? total - n_train - n_valid
           : std::min<int64_t>(total - n_train - n_valid, std::llround(spec.test_fraction * n));
  Splits out;
  std::vector<int64_t>::const_iterator it = labelled.begin();
  Take(&it, n_train, &out.train);
  Take(&it, n_valid, &out.valid);
  Take(&it, n_test, &out.test);
  return out;
}

// Each class's labelled nodes, shuffled, cut by the spec's counts per class. Classes smaller than
// train + valid give what they have, train first.
Splits SplitPerClass(const SplitSpec& spec, const std::vector<int32_t>& labels, int64_t num_classes,
                     Rng& rng) {
  std::vector<std::vector<int64_t>> by_class(
      static_cast<size_t>(std::max<int64_t>(num_classes, 0)));
  for (size_t v = 0; v < labels.size(); ++v) {
    if (labels[v] >= 0) by_class[static_cast<size_t>(labels[v])].push_back(static_cast<int64_t>(v));
  }
  Splits out;
  for (auto& members : by_class) {
    Shuffle(members, rng);
    const auto size = static_cast<int64_t>(members.size());
    const int64_t n_train = std::min(size, spec.train_per_class);
    const int64_t n_valid = std::min(size - n_train, spec.valid_per_class);
    const int64_t left = size - n_train - n_valid;
    const int64_t n_test = spec.test_per_class < 0 ? left : std::min(left, spec.test_per_class);
    std::vector<int64_t>::const_iterator it = members.begin();
    Take(&it, n_train, &out.train);
    Take(&it, n_valid, &out.valid);
    Take(&it, n_test, &out.test);
  }
  return out;
}

}  // namespace

Result<Splits> MakeSplits(const SplitSpec& spec, const std::vector<int32_t>& labels,
                          int64_t num_classes) {
  for (size_t v = 0; v < labels.size(); ++v) {
    if (labels[v] >= num_classes) {
      return Status::InvalidArgument("node " + std::to_string(v) + " has label " +
                                     std::to_string(labels[v]) + " but there are only " +
                                     std::to_string(num_classes) + " classes");
    }
  }
  Rng rng(HashKey(spec.seed, kSplitStream, 0));
  Splits out = spec.kind == SplitSpec::Kind::kFractions
                   ? SplitByFractions(spec, labels, rng)
                   : SplitPerClass(spec, labels, num_classes, rng);
  std::sort(out.train.begin(), out.train.end());
  std::sort(out.valid.begin(), out.valid.end());
  std::sort(out.test.begin(), out.test.end());
  return out;
}

Status CheckDisjoint(const Splits& s, const std::string& train_name, const std::string& valid_name,
                     const std::string& test_name) {
  const std::pair<const std::vector<int64_t>*, const std::string*> named[] = {
      {&s.train, &train_name}, {&s.valid, &valid_name}, {&s.test, &test_name}};
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = i + 1; j < 3; ++j) {
      std::vector<int64_t> both;
      std::set_intersection(named[i].first->begin(), named[i].first->end(), named[j].first->begin(),
                            named[j].first->end(), std::back_inserter(both));
      if (!both.empty()) {
        return Status::InvalidArgument(*named[i].second + " and " + *named[j].second + " share " +
                                       std::to_string(both.size()) + " nodes (first: " +
                                       std::to_string(both.front()) + "); splits must be disjoint");
      }
    }
  }
  return Status::Ok();
}

Status WriteSplits(format::DatasetWriter& writer, const Splits& splits) {
  SKIFF_RETURN_IF_ERROR(
      writer.WriteFile(format::kTrainFile, splits.train.data(), splits.train.size() * 8));
  SKIFF_RETURN_IF_ERROR(
      writer.WriteFile(format::kValidFile, splits.valid.data(), splits.valid.size() * 8));
  SKIFF_RETURN_IF_ERROR(
      writer.WriteFile(format::kTestFile, splits.test.data(), splits.test.size() * 8));
  auto& m = writer.manifest();
  m.train_count = static_cast<int64_t>(splits.train.size());
  m.valid_count = static_cast<int64_t>(splits.valid.size());
  m.test_count = static_cast<int64_t>(splits.test.size());
  return Status::Ok();
}

}  // namespace skiff::convert
