// FeatureSource: input features and labels of nodes, by global ID.
//
// The trainer's gather stage asks a FeatureSource for the feature rows of a mini-batch's
// input_nodes. The in-memory implementation holds the dataset's feature matrix; an out-of-core one
// copies rows out of resident partitions or reads them from disk.
//
// Thread safety: implementations must allow concurrent const calls from many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/status.h"

namespace skiff::sampler {

class FeatureSource {
 public:
  virtual ~FeatureSource() = default;
  virtual int64_t num_nodes() const = 0;
  virtual int64_t dim() const = 0;
  // Writes the rows of `nodes` (each in [0, num_nodes())) into out (nodes.size() x dim(),
  // row-major). IOError / Corruption from a backing store.
  virtual Status Gather(std::span<const int64_t> nodes, float* out) const = 0;
};

// Scales each of `rows` rows of `dim` floats to sum 1 (a row summing to 0 is left alone; the sum
// is taken in double): `--feature-norm row`, the usual preprocessing of bag-of-words features.
void NormalizeRowsToSumOne(float* rows, int64_t count, int64_t dim);

class InMemoryFeatures final : public FeatureSource {
 public:
  // `features` is num_nodes x dim, row-major. InvalidArgument if the size does not match.
  static Result<std::unique_ptr<InMemoryFeatures>> FromMatrix(std::vector<float> features,
                                                              int64_t dim);
  // Loads features.bin of an opened dataset (converted to float32).
  static Result<std::unique_ptr<InMemoryFeatures>> Load(const format::Dataset& dataset);

  int64_t num_nodes() const override { return num_nodes_; }
  int64_t dim() const override { return dim_; }
  Status Gather(std::span<const int64_t> nodes, float* out) const override;
  // NormalizeRowsToSumOne over every row.
  void NormalizeRows() { NormalizeRowsToSumOne(features_.data(), num_nodes_, dim_); }

 private:
  InMemoryFeatures(std::vector<float> f, int64_t dim)
      : features_(std::move(f)),
        dim_(dim),
        num_nodes_(dim > 0 ? static_cast<int64_t>(features_.size()) / dim : 0) {}
  std::vector<float> features_;
  int64_t dim_;
  int64_t num_nodes_;
};

}  // namespace skiff::sampler
