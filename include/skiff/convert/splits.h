// Train/valid/test splits: taken from the input when it has them, otherwise drawn at random with a
// seed, either by fractions or by per-class counts (e.g. 20 per class train / 30 per class valid /
// the rest test, the common Cora protocol). Only labelled nodes (label >= 0) are placed in splits.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/status.h"

namespace skiff::convert {

struct SplitSpec {
  enum class Kind { kFractions, kPerClass };
  Kind kind = Kind::kFractions;
  double train_fraction = 0.6, valid_fraction = 0.2, test_fraction = 0.2;   // kFractions
  int64_t train_per_class = 20, valid_per_class = 30, test_per_class = -1;  // -1 = all the rest
  uint64_t seed = 0;
};

// Parses "0.6,0.2,0.2" (fractions, must sum to <= 1) or "per-class:20,30" / "per-class:20,30,1000"
// (counts; the test count defaults to all the rest). InvalidArgument names the malformed part.
Result<SplitSpec> ParseSplitSpec(const std::string& text, uint64_t seed);

struct Splits {
  std::vector<int64_t> train, valid, test;  // ascending node IDs, disjoint
};

// Draws splits over nodes with labels[v] >= 0. Deterministic for a given spec (including seed).
Result<Splits> MakeSplits(const SplitSpec& spec, const std::vector<int32_t>& labels,
                          int64_t num_classes);

// Splits read from an input (each ascending, without repeats): InvalidArgument when two of them
// share a node, naming both (`names`: where each came from, e.g. the input's files) and the first
// shared node; a dataset with such splits would train on nodes it evaluates on, and readers refuse
// it.
Status CheckDisjoint(const Splits& splits, const std::string& train_name,
                     const std::string& valid_name, const std::string& test_name);

// Writes train.idx / valid.idx / test.idx and the manifest's split counts.
Status WriteSplits(format::DatasetWriter& writer, const Splits& splits);

}  // namespace skiff::convert
