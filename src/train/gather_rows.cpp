#include "skiff/train/gather_rows.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace skiff::train {
namespace {

// A row on the wire: its position, its label, its values.
int64_t RowBytes(int64_t width) {
  return static_cast<int64_t>(sizeof(int64_t) + sizeof(int32_t) + sizeof(float) * width);
}

}  // namespace

RowsToLead::RowsToLead(dist::Communicator& comm, int64_t n, int64_t width,
                       std::vector<int32_t>* labels, std::vector<float>* values)
    : comm_(comm), n_(n), width_(width), labels_(labels), values_(values) {
  SKIFF_CHECK(n >= 0 && width >= 0);
  labels->clear();
  values->clear();
  if (comm.rank() != 0) return;
  labels->assign(static_cast<size_t>(n), -1);
  values->assign(static_cast<size_t>(n * width), 0.0f);
  written_.assign(static_cast<size_t>(n), 0);
}

Status RowsToLead::Write(int from, int64_t position, const char* label, const char* values) {
  if (position < 0 || position >= n_ || written_[position] != 0) {
    return Status::Internal("rank " + std::to_string(from) + " computed a row for position " +
                            std::to_string(position) +
                            (position >= 0 && position < n_
                                 ? ", which another row filled"
                                 : ", outside [0, " + std::to_string(n_) + ")"));
  }
  written_[position] = 1;
  ++written_count_;
  std::memcpy(labels_->data() + position, label, sizeof(int32_t));
  std::memcpy(values_->data() + position * width_, values, sizeof(float) * width_);
  return Status::Ok();
}

Status RowsToLead::Add(int64_t position, int32_t label, std::span<const float> values) {
  SKIFF_CHECK(static_cast<int64_t>(values.size()) == width_);
  if (comm_.rank() == 0) {
    return Write(0, position, reinterpret_cast<const char*>(&label),
                 reinterpret_cast<const char*>(values.data()));
  }
  positions_.push_back(position);
  pending_labels_.push_back(label);
  pending_values_.insert(pending_values_.end(), values.begin(), values.end());
  return Status::Ok();
}

Status RowsToLead::Send() { return SendSome(static_cast<int64_t>(positions_.size()) - sent_); }

Status RowsToLead::SendAll(int64_t round_bytes) {
  const int64_t per_round = std::max<int64_t>(1, round_bytes / RowBytes(width_));
  const auto pending = static_cast<int64_t>(positions_.size()) - sent_;
  SKIFF_ASSIGN_OR_RETURN(const std::vector<std::string> counts,
                         comm_.AllGather(std::to_string(pending), "the rows to send"));
  int64_t most = 0;
  for (const std::string& c : counts) most = std::max<int64_t>(most, std::stoll(c));
  for (int64_t done = 0; done < most; done += per_round) SKIFF_RETURN_IF_ERROR(SendSome(per_round));
  return Status::Ok();
}

Status RowsToLead::SendSome(int64_t rows) {
  std::vector<std::string> to_each(static_cast<size_t>(comm_.size()));
  if (comm_.rank() != 0) {
    // Every position, then every label, then every row's values.
    const int64_t count = std::min(rows, static_cast<int64_t>(positions_.size()) - sent_);
    std::string& out = to_each[0];
    out.append(reinterpret_cast<const char*>(positions_.data() + sent_),
               sizeof(int64_t) * static_cast<size_t>(count));
    out.append(reinterpret_cast<const char*>(pending_labels_.data() + sent_),
               sizeof(int32_t) * static_cast<size_t>(count));
    out.append(reinterpret_cast<const char*>(pending_values_.data() + sent_ * width_),
               sizeof(float) * static_cast<size_t>(count * width_));
    sent_ += count;
    if (sent_ == static_cast<int64_t>(positions_.size())) {
      sent_ = 0;
      positions_.clear();
      pending_labels_.clear();
      pending_values_.clear();
    }
  }
  SKIFF_ASSIGN_OR_RETURN(std::vector<std::string> got,
                         comm_.AllToAll(std::move(to_each), "the predicted rows"));
  if (comm_.rank() != 0) return Status::Ok();
  const int64_t row = RowBytes(width_);
  for (int from = 1; from < comm_.size(); ++from) {
    const std::string& bytes = got[static_cast<size_t>(from)];
    if (static_cast<int64_t>(bytes.size()) % row != 0) {
      return Status::Internal("rank " + std::to_string(from) + " sent " +
                              std::to_string(bytes.size()) + " bytes of rows of " +
                              std::to_string(row) + " bytes");
    }
    const int64_t count = static_cast<int64_t>(bytes.size()) / row;
    const char* positions = bytes.data();
    const char* labels = positions + sizeof(int64_t) * count;
    const char* values = labels + sizeof(int32_t) * count;
    for (int64_t i = 0; i < count; ++i) {
      int64_t at = 0;
      std::memcpy(&at, positions + sizeof(int64_t) * i, sizeof(at));
      SKIFF_RETURN_IF_ERROR(
          Write(from, at, labels + sizeof(int32_t) * i, values + sizeof(float) * width_ * i));
    }
  }
  return Status::Ok();
}

Status RowsToLead::Finish() const {
  if (comm_.rank() != 0 || written_count_ == n_) return Status::Ok();
  int64_t first = 0;
  while (written_[first] != 0) ++first;
  return Status::Internal("the ranks computed " + std::to_string(written_count_) + " of " +
                          std::to_string(n_) + " rows; none for position " + std::to_string(first));
}

}  // namespace skiff::train
