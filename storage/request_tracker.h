// Internal to storage/: splitting requests into pieces and completing a request once all of its
// pieces are done. Shared by the io_uring and pread engines so both follow one set of rules.
//
// Thread safety: none; the owning engine serialises access.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "skiff/storage/io_engine.h"

namespace skiff::storage::internal {

struct FileEntry {
  int fd = -1;
  std::string path;
  uint32_t alignment = 1;  // O_DIRECT alignment; 1 when buffered
};

struct Piece {
  uint32_t parent = 0;  // index into RequestTracker's parents
  uint32_t file = 0;
  uint64_t offset = 0;  // current offset (advances on short reads)
  uint64_t length = 0;  // bytes still to read
  std::byte* dst = nullptr;
};

class RequestTracker {
 public:
  explicit RequestTracker(uint64_t max_piece_bytes) : max_piece_bytes_(max_piece_bytes) {}

  uint32_t AddFile(FileEntry entry) {
    files_.push_back(std::move(entry));
    return static_cast<uint32_t>(files_.size() - 1);
  }
  const FileEntry& file(uint32_t id) const { return files_[id]; }
  size_t num_files() const { return files_.size(); }

  // Validates and splits; pieces are appended to pending(). Misaligned requests complete at once
  // with InvalidArgument.
  Status Submit(std::span<const ReadRequest> requests);

  // A piece finished: `status` OK means all of its bytes were read.
  void PieceDone(uint32_t parent, const Status& status);

  // Moves completed requests into `out`; returns how many.
  size_t TakeCompleted(std::vector<ReadCompletion>* out);
  size_t completed_count() const { return completed_.size(); }
  size_t outstanding() const { return outstanding_; }

  std::deque<Piece>& pending() { return pending_; }

  // "read of 4096 bytes at offset 8192 of /data/features.bin"
  std::string Where(const Piece& piece) const;

 private:
  struct Parent {
    uint64_t tag = 0;
    uint32_t pieces_left = 0;
    Status status;
  };
  const uint64_t max_piece_bytes_;
  std::vector<FileEntry> files_;
  std::vector<Parent> parents_;
  std::vector<uint32_t> free_parents_;
  std::deque<Piece> pending_;
  std::vector<ReadCompletion> completed_;
  size_t outstanding_ = 0;
};

// Turns a raw read result into the next action for `piece`: returns true when the piece is finished
// (with *status set), false when it must be resubmitted (EAGAIN, EINTR, or a short read, in which
// case the piece has been advanced past the bytes already read).
bool ConsumeResult(const RequestTracker& tracker, Piece* piece, int64_t res, Status* status);

}  // namespace skiff::storage::internal
