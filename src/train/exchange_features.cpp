#include "skiff/train/exchange_features.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace skiff::train {

ExchangeFeatures::ExchangeFeatures(const NodeRanges& ranges, dist::Communicator* comm,
                                   std::vector<float> rows, int64_t dim)
    : ranges_(ranges),
      comm_(comm),
      begin_(ranges.begin(comm->rank())),
      end_(ranges.end(comm->rank())),
      dim_(dim),
      rows_(std::move(rows)) {}

Result<std::unique_ptr<ExchangeFeatures>> ExchangeFeatures::FromRows(const NodeRanges& ranges,
                                                                     dist::Communicator* comm,
                                                                     std::vector<float> rows,
                                                                     int64_t dim) {
  SKIFF_CHECK(comm != nullptr && ranges.size() == comm->size());
  const int rank = comm->rank();
  const int64_t count = ranges.end(rank) - ranges.begin(rank);
  if (dim < 1 || static_cast<int64_t>(rows.size()) != count * dim) {
    return Status::InvalidArgument("rank " + std::to_string(rank) + " owns " +
                                   std::to_string(count) + " nodes but was given " +
                                   std::to_string(rows.size()) + " feature values of width " +
                                   std::to_string(dim));
  }
  return std::unique_ptr<ExchangeFeatures>(
      new ExchangeFeatures(ranges, comm, std::move(rows), dim));
}

Result<std::unique_ptr<ExchangeFeatures>> ExchangeFeatures::Load(const format::Dataset& dataset,
                                                                 const NodeRanges& ranges,
                                                                 dist::Communicator* comm) {
  SKIFF_CHECK(comm != nullptr);
  const int rank = comm->rank();
  const int64_t first = ranges.begin(rank), count = ranges.end(rank) - first;
  const int64_t dim = dataset.manifest().feature_dim;
  std::vector<float> rows(static_cast<size_t>(count * dim));
  SKIFF_RETURN_IF_ERROR(dataset.ReadFeatureRows(first, count, rows.data()));
  return FromRows(ranges, comm, std::move(rows), dim);
}

Status ExchangeFeatures::Gather(std::span<const int64_t> nodes, float* out) const {
  const int ranks = comm_->size(), self = comm_->rank();
  const size_t row_bytes = static_cast<size_t>(dim_) * sizeof(float);
  // Per owner: the nodes asked for, and where each goes in `out`.
  std::vector<std::vector<int64_t>> asked(static_cast<size_t>(ranks));
  std::vector<std::vector<size_t>> slots(static_cast<size_t>(ranks));
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int64_t v = nodes[i];
    if (v < 0 || v >= num_nodes()) {
      return Status::InvalidArgument("feature row of node " + std::to_string(v) + ", not in [0, " +
                                     std::to_string(num_nodes()) + ")");
    }
    if (v >= begin_ && v < end_) {
      std::memcpy(out + i * static_cast<size_t>(dim_), Row(v), row_bytes);
      continue;
    }
    const int owner = ranges_.OwnerOf(v);
    asked[owner].push_back(v);
    slots[owner].push_back(i);
  }
  std::vector<std::string> requests(static_cast<size_t>(ranks));
  uint64_t sent = 0, received = 0;
  for (int r = 0; r < ranks; ++r) {
    requests[r].assign(reinterpret_cast<const char*>(asked[r].data()),
                       asked[r].size() * sizeof(int64_t));
    sent += requests[r].size();
    traffic_.rows_fetched += static_cast<int64_t>(asked[r].size());
  }
  SKIFF_ASSIGN_OR_RETURN(std::vector<std::string> incoming,
                         comm_->AllToAll(std::move(requests), "feature rows"));
  std::vector<std::string> replies(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    if (r == self) continue;
    received += incoming[r].size();
    const size_t count = incoming[r].size() / sizeof(int64_t);
    replies[r].resize(count * row_bytes);
    for (size_t j = 0; j < count; ++j) {
      int64_t v = 0;
      std::memcpy(&v, incoming[r].data() + j * sizeof(int64_t), sizeof(v));
      if (v < begin_ || v >= end_) {
        return Status::Internal("rank " + std::to_string(r) + " asked rank " +
                                std::to_string(self) + " for the feature row of node " +
                                std::to_string(v) + ", which it does not own");
      }
      std::memcpy(replies[r].data() + j * row_bytes, Row(v), row_bytes);
    }
    traffic_.rows_served += static_cast<int64_t>(count);
    sent += replies[r].size();
  }
  SKIFF_ASSIGN_OR_RETURN(std::vector<std::string> answers,
                         comm_->AllToAll(std::move(replies), "feature rows (replies)"));
  for (int r = 0; r < ranks; ++r) {
    if (r == self) continue;
    received += answers[r].size();
    if (answers[r].size() != slots[r].size() * row_bytes) {
      return Status::Internal("rank " + std::to_string(r) + " sent " +
                              std::to_string(answers[r].size()) + " bytes of feature rows for " +
                              std::to_string(slots[r].size()) + " rows");
    }
    for (size_t j = 0; j < slots[r].size(); ++j) {
      std::memcpy(out + slots[r][j] * static_cast<size_t>(dim_), answers[r].data() + j * row_bytes,
                  row_bytes);
    }
  }
  traffic_.exchanges += 1;
  traffic_.Add(sent, received);
  return Status::Ok();
}

}  // namespace skiff::train
