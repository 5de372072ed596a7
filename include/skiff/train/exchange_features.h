// ExchangeFeatures: the feature rows as one rank of an owned-partition job sees them. The rank
// holds the rows of the nodes it owns (NodeRanges) and fetches the others' from their owners:
// Gather sends the remote node IDs to their owners and receives their rows in two personalised
// exchanges (Communicator::AllToAll), answering the other ranks' requests in the same exchanges.
// Rows arrive bitwise as the owner holds them (float32, after any --feature-norm, which each owner
// applies to its own rows).
//
// Gather is a collective: every rank calls it once per batch, in the same sequence (a rank with
// no rows to gather calls it with none). Not thread-safe: the thread that drives the communicator.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "skiff/dist/communicator.h"
#include "skiff/format/dataset.h"
#include "skiff/sampler/feature_source.h"
#include "skiff/status.h"
#include "skiff/train/exchange_graph.h"
#include "skiff/train/node_ranges.h"

namespace skiff::train {

class ExchangeFeatures final : public sampler::FeatureSource {
 public:
  // The rows of `comm`'s rank's range, read from `dataset` (Dataset::ReadFeatureRows: only that
  // range). `ranges` and `comm` must outlive the source.
  static Result<std::unique_ptr<ExchangeFeatures>> Load(const format::Dataset& dataset,
                                                        const NodeRanges& ranges,
                                                        dist::Communicator* comm);
  // The rank's rows given: (end - begin) x dim floats. InvalidArgument when the size is wrong.
  static Result<std::unique_ptr<ExchangeFeatures>> FromRows(const NodeRanges& ranges,
                                                            dist::Communicator* comm,
                                                            std::vector<float> rows, int64_t dim);

  int64_t num_nodes() const override { return ranges_.num_nodes(); }
  int64_t dim() const override { return dim_; }
  // Collective (above). Errors of the exchange; InvalidArgument for a node out of range.
  Status Gather(std::span<const int64_t> nodes, float* out) const override;
  // --feature-norm row over the rank's rows.
  void NormalizeRows() { sampler::NormalizeRowsToSumOne(rows_.data(), end_ - begin_, dim_); }

  const ExchangeTraffic& traffic() const { return traffic_; }
  uint64_t MemoryBytes() const { return rows_.size() * sizeof(float); }

 private:
  ExchangeFeatures(const NodeRanges& ranges, dist::Communicator* comm, std::vector<float> rows,
                   int64_t dim);
  const float* Row(int64_t v) const { return rows_.data() + (v - begin_) * dim_; }

  const NodeRanges& ranges_;
  dist::Communicator* comm_;
  const int64_t begin_, end_, dim_;
  std::vector<float> rows_;
  mutable ExchangeTraffic traffic_;
};

}  // namespace skiff::train
