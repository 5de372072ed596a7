#include "skiff/train/exchange_features.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace skiff::train {

ExchangeFeatures::ExchangeFeatures(const NodeRanges& ranges, dist::Communicator* comm,
                                   const OwnedRows* own)
    : ranges_(ranges), comm_(comm), own_(own) {
  SKIFF_CHECK(comm != nullptr && own != nullptr && ranges.size() == comm->size());
  SKIFF_CHECK(own->begin() == ranges.begin(comm->rank()) && own->end() == ranges.end(comm->rank()));
}

Status ExchangeFeatures::Gather(std::span<const int64_t> nodes, float* out) const {
  const int ranks = comm_->size(), self = comm_->rank();
  const auto width = static_cast<size_t>(dim());
  const size_t row_bytes = width * sizeof(float);
  // Per owner: the nodes asked for, and where each goes in `out` (this rank's own included).
  std::vector<std::vector<int64_t>> asked(static_cast<size_t>(ranks));
  std::vector<std::vector<size_t>> slots(static_cast<size_t>(ranks));
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int64_t v = nodes[i];
    if (v < 0 || v >= num_nodes()) {
      return Status::InvalidArgument("feature row of node " + std::to_string(v) + ", not in [0, " +
                                     std::to_string(num_nodes()) + ")");
    }
    const int owner = own_->Owns(v) ? self : ranges_.OwnerOf(v);
    asked[owner].push_back(v);
    slots[owner].push_back(i);
  }
  std::vector<std::string> requests(static_cast<size_t>(ranks));
  uint64_t sent = 0, received = 0;
  for (int r = 0; r < ranks; ++r) {
    if (r == self) continue;
    requests[r].assign(reinterpret_cast<const char*>(asked[r].data()),
                       asked[r].size() * sizeof(int64_t));
    sent += requests[r].size();
    traffic_.rows_fetched += static_cast<int64_t>(asked[r].size());
  }
  SKIFF_ASSIGN_OR_RETURN(std::vector<std::string> incoming,
                         comm_->AllToAll(std::move(requests), "feature rows"));
  // One read of the own rows: this rank's, into their slots of `out`, and those the other ranks
  // asked for, into the replies.
  std::vector<int64_t> own = std::move(asked[self]);
  std::vector<float*> to;
  to.reserve(own.size());
  for (const size_t slot : slots[self]) to.push_back(out + slot * width);
  std::vector<std::string> replies(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    if (r == self) continue;
    received += incoming[r].size();
    const size_t count = incoming[r].size() / sizeof(int64_t);
    const size_t first = own.size();
    own.resize(first + count);
    std::memcpy(own.data() + first, incoming[r].data(), count * sizeof(int64_t));
    for (size_t j = first; j < own.size(); ++j) {
      if (!own_->Owns(own[j])) {
        return Status::Internal("rank " + std::to_string(r) + " asked rank " +
                                std::to_string(self) + " for the feature row of node " +
                                std::to_string(own[j]) + ", which it does not own");
      }
    }
    replies[r].resize(count * row_bytes);
    // Reply bytes are written as floats (the allocation is aligned for any scalar).
    auto* rows = reinterpret_cast<float*>(replies[r].data());
    for (size_t j = 0; j < count; ++j) to.push_back(rows + j * width);
    traffic_.rows_served += static_cast<int64_t>(count);
    sent += replies[r].size();
  }
  SKIFF_RETURN_IF_ERROR(own_->RowsTo(own, to));
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
      std::memcpy(out + slots[r][j] * width, answers[r].data() + j * row_bytes, row_bytes);
    }
  }
  traffic_.exchanges += 1;
  traffic_.Add(sent, received);
  return Status::Ok();
}

}  // namespace skiff::train
