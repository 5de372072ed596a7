// ExchangeFeatures: the feature rows as one rank of an owned-partition job sees them. The rank
// holds the rows of the nodes it owns (NodeRanges, OwnedRows: in memory, or through its buffer
// pool within --memory) and fetches the others' from their owners:
// Gather sends the remote node IDs to their owners and receives their rows in two personalised
// exchanges (Communicator::AllToAll), answering the other ranks' requests in the same exchanges.
// Between them it reads its own rows -- the batch's and those asked for -- in one OwnedRows call,
// so that within --memory one fine-grained read serves them all.
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
#include "skiff/sampler/feature_source.h"
#include "skiff/status.h"
#include "skiff/train/exchange_graph.h"
#include "skiff/train/node_ranges.h"
#include "skiff/train/owned_rows.h"

namespace skiff::train {

class ExchangeFeatures final : public sampler::FeatureSource {
 public:
  // The rank's own rows come from `own` (its range). `ranges`, `comm` and `own` must outlive the
  // source; ranges.size() == comm->size().
  ExchangeFeatures(const NodeRanges& ranges, dist::Communicator* comm, const OwnedRows* own);

  int64_t num_nodes() const override { return ranges_.num_nodes(); }
  int64_t dim() const override { return own_->feature_dim(); }
  // Collective (above). Errors of the exchange and of reading the own rows; InvalidArgument for a
  // node out of range.
  Status Gather(std::span<const int64_t> nodes, float* out) const override;

  const ExchangeTraffic& traffic() const { return traffic_; }

 private:
  const NodeRanges& ranges_;
  dist::Communicator* comm_;
  const OwnedRows* own_;
  mutable ExchangeTraffic traffic_;
};

}  // namespace skiff::train
