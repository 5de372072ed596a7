#include "storage/request_tracker.h"

#include <cerrno>

namespace skiff::storage::internal {

Status RequestTracker::Submit(std::span<const ReadRequest> requests) {
  for (const ReadRequest& r : requests) {
    if (r.file >= files_.size()) {
      return Status::InvalidArgument("read request names file id " + std::to_string(r.file) +
                                     " but only " + std::to_string(files_.size()) +
                                     " files were added");
    }
    if (r.length == 0 || r.dst == nullptr) {
      return Status::InvalidArgument("read request of " + std::to_string(r.length) + " bytes at " +
                                     std::to_string(r.offset) + " of " + files_[r.file].path +
                                     " has no length or destination");
    }
  }
  for (const ReadRequest& r : requests) {
    uint32_t idx;
    if (!free_parents_.empty()) {
      idx = free_parents_.back();
      free_parents_.pop_back();
    } else {
      idx = static_cast<uint32_t>(parents_.size());
      parents_.emplace_back();
    }
    Parent& p = parents_[idx];
    p.tag = r.tag;
    p.status = Status::Ok();
    ++outstanding_;
    const FileEntry& f = files_[r.file];
    const uint64_t a = f.alignment;
    if (r.offset % a != 0 || r.length % a != 0 || reinterpret_cast<uintptr_t>(r.dst) % a != 0) {
      p.pieces_left = 1;
      PieceDone(idx, Status::InvalidArgument(
                         "read of " + std::to_string(r.length) + " bytes at offset " +
                         std::to_string(r.offset) + " of " + f.path +
                         " is not aligned to the file's O_DIRECT alignment of " +
                         std::to_string(a) + " bytes (offset, length and buffer address)"));
      continue;
    }
    const uint64_t n = (r.length + max_piece_bytes_ - 1) / max_piece_bytes_;
    p.pieces_left = static_cast<uint32_t>(n);
    auto* dst = static_cast<std::byte*>(r.dst);
    for (uint64_t off = 0; off < r.length; off += max_piece_bytes_) {
      const uint64_t len = std::min(max_piece_bytes_, r.length - off);
      pending_.push_back(Piece{idx, r.file, r.offset + off, len, dst + off});
    }
  }
  return Status::Ok();
}

void RequestTracker::PieceDone(uint32_t parent, const Status& status) {
  Parent& p = parents_[parent];
  if (!status.ok() && p.status.ok()) p.status = status;
  SKIFF_CHECK(p.pieces_left > 0);
  if (--p.pieces_left == 0) {
    completed_.push_back(ReadCompletion{p.tag, std::move(p.status)});
    free_parents_.push_back(parent);
  }
}

size_t RequestTracker::TakeCompleted(std::vector<ReadCompletion>* out) {
  const size_t n = completed_.size();
  for (auto& c : completed_) out->push_back(std::move(c));
  completed_.clear();
  SKIFF_CHECK(outstanding_ >= n);
  outstanding_ -= n;
  return n;
}

std::string RequestTracker::Where(const Piece& piece) const {
  return "read of " + std::to_string(piece.length) + " bytes at offset " +
         std::to_string(piece.offset) + " of " + files_[piece.file].path;
}

bool ConsumeResult(const RequestTracker& tracker, Piece* piece, int64_t res, Status* status) {
  if (res == -EAGAIN || res == -EINTR) return false;
  if (res < 0) {
    *status = Status::FromErrno(static_cast<int>(-res), tracker.Where(*piece));
    return true;
  }
  if (res == 0) {
    *status = Status::IOError(tracker.Where(*piece) + ": unexpected end of file");
    return true;
  }
  const auto got = static_cast<uint64_t>(res);
  if (got >= piece->length) {
    *status = Status::Ok();
    return true;
  }
  piece->offset += got;
  piece->length -= got;
  piece->dst += got;
  return false;
}

}  // namespace skiff::storage::internal
