#include "skiff/train/gather_rows.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <string>

namespace skiff::train {
namespace {

// A row on the wire: its position, its label, its values.
int64_t RowBytes(int64_t width) {
  return static_cast<int64_t>(sizeof(int64_t) + sizeof(int32_t) + sizeof(float) * width);
}

// Rows [first, first + count) of `mine`: every position, then every label, then every row's values.
std::string Pack(const PositionedRows& mine, int64_t width, int64_t first, int64_t count) {
  if (count == 0) return {};
  std::string out(static_cast<size_t>(count * RowBytes(width)), '\0');
  char* p = out.data();
  std::memcpy(p, mine.positions.data() + first, sizeof(int64_t) * count);
  p += sizeof(int64_t) * count;
  std::memcpy(p, mine.labels.data() + first, sizeof(int32_t) * count);
  p += sizeof(int32_t) * count;
  std::memcpy(p, mine.values.data() + first * width, sizeof(float) * count * width);
  return out;
}

// Writes the rows Pack made of rank `from`'s rows at their positions, marking them in `filled`.
Status Unpack(const std::string& bytes, int64_t width, int from, std::vector<uint8_t>* filled,
              std::vector<int32_t>* labels, std::vector<float>* values) {
  const int64_t row = RowBytes(width);
  const auto n = static_cast<int64_t>(filled->size());
  if (static_cast<int64_t>(bytes.size()) % row != 0) {
    return Status::Internal("rank " + std::to_string(from) + " sent " +
                            std::to_string(bytes.size()) + " bytes of rows of " +
                            std::to_string(row) + " bytes");
  }
  const int64_t count = static_cast<int64_t>(bytes.size()) / row;
  const char* positions = bytes.data();
  const char* row_labels = positions + sizeof(int64_t) * count;
  const char* row_values = row_labels + sizeof(int32_t) * count;
  for (int64_t i = 0; i < count; ++i) {
    int64_t at = 0;
    std::memcpy(&at, positions + sizeof(int64_t) * i, sizeof(at));
    if (at < 0 || at >= n || (*filled)[at] != 0) {
      return Status::Internal("rank " + std::to_string(from) + " sent a row for position " +
                              std::to_string(at) +
                              (at >= 0 && at < n ? ", which another row filled"
                                                 : ", outside [0, " + std::to_string(n) + ")"));
    }
    (*filled)[at] = 1;
    std::memcpy(labels->data() + at, row_labels + sizeof(int32_t) * i, sizeof(int32_t));
    std::memcpy(values->data() + at * width, row_values + sizeof(float) * width * i,
                sizeof(float) * width);
  }
  return Status::Ok();
}

}  // namespace

Status GatherRowsToLead(dist::Communicator& comm, const PositionedRows& mine, int64_t n,
                        int64_t width, uint64_t round_bytes, std::vector<int32_t>* labels,
                        std::vector<float>* values) {
  const auto own = static_cast<int64_t>(mine.positions.size());
  SKIFF_CHECK(n >= 0 && width >= 0 && round_bytes > 0);
  SKIFF_CHECK(static_cast<int64_t>(mine.labels.size()) == own);
  SKIFF_CHECK(static_cast<int64_t>(mine.values.size()) == own * width);
  const bool lead = comm.rank() == 0;
  labels->clear();
  values->clear();
  // Every rank's count, so that every rank knows the rounds, and the total, before any row moves.
  std::vector<int64_t> counts(static_cast<size_t>(comm.size()), 0);
  counts[static_cast<size_t>(comm.rank())] = own;
  SKIFF_RETURN_IF_ERROR(comm.AllReduceSum(std::span<int64_t>(counts), "the gathered rows' counts"));
  const int64_t per_round =
      std::max<int64_t>(1, static_cast<int64_t>(round_bytes) / RowBytes(width));
  int64_t rounds = 0, total = 0;
  for (const int64_t c : counts) {
    rounds = std::max(rounds, (c + per_round - 1) / per_round);
    total += c;
  }
  if (total != n) {
    return Status::Internal("the ranks computed " + std::to_string(total) + " rows for " +
                            std::to_string(n) + " positions");
  }
  std::vector<uint8_t> filled;
  if (lead) {
    labels->assign(static_cast<size_t>(n), -1);
    values->assign(static_cast<size_t>(n * width), 0.0f);
    filled.assign(static_cast<size_t>(n), 0);
  }
  for (int64_t k = 0; k < rounds; ++k) {
    const int64_t first = std::min(own, k * per_round);
    std::vector<std::string> to_each(static_cast<size_t>(comm.size()));
    to_each[0] = Pack(mine, width, first, std::min(own - first, per_round));
    SKIFF_ASSIGN_OR_RETURN(std::vector<std::string> got,
                           comm.AllToAll(std::move(to_each), "the gathered rows"));
    if (!lead) continue;
    for (int from = 0; from < comm.size(); ++from) {
      SKIFF_RETURN_IF_ERROR(
          Unpack(got[static_cast<size_t>(from)], width, from, &filled, labels, values));
    }
  }
  return Status::Ok();
}

}  // namespace skiff::train
