// Checksummed data files: every file of a dataset is stored with a sidecar of per-block checksums.
//
// On disk (documented in docs/FORMAT.md):
//   <name>        the data, zero-padded to a multiple of kFileAlignment (4 KiB) so that any block
//                 can be read with O_DIRECT;
//   <name>.sum    a 32-byte header {magic "SKFSUM01", u32 block_bytes, u32 reserved=0,
//                 u64 data_bytes, u64 num_blocks} followed by num_blocks little-endian u64
//                 XXH3-64 checksums, one per block_bytes-sized block of the *padded* data file.
// The manifest records each file's data_bytes and the XXH3-64 of its whole .sum file, so a flipped
// byte anywhere -- data, padding or sidecar -- is detected and reported with the file and block.
//
// A windowed file (a shard's, format/shard.h) holds only bytes [window_offset, window_offset +
// data_bytes) of the whole dataset's file of that name: its reader takes offsets in the whole
// file's coordinates and refuses a read outside the window (InvalidArgument naming the file and the
// window). window_offset is a multiple of 4 KiB and of the block size, so blocks and O_DIRECT
// alignment are the same in both coordinates.
//
// Thread safety: a writer is used by one thread. A reader's ReadAt/VerifyBlocks are const and may
// be called from many threads at once (pread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "skiff/status.h"

namespace skiff::format {

inline constexpr uint64_t kFileAlignment = 4096;
inline constexpr uint32_t kDefaultChecksumBlockBytes = 4096;

inline constexpr uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// What the manifest records about one data file.
struct FileInfo {
  std::string name;         // file name inside the dataset directory
  uint64_t data_bytes = 0;  // meaningful bytes (the file itself is padded to 4 KiB)
  uint64_t sum_xxh3 = 0;    // XXH3-64 of the .sum sidecar file
  uint32_t block_bytes = kDefaultChecksumBlockBytes;
  uint64_t window_offset = 0;  // offset in the whole file of this file's first byte (a shard's)
};

uint64_t Xxh3(const void* data, size_t bytes);

// Streams a data file and its checksum sidecar. Data is buffered and written in large chunks.
class ChecksummedFileWriter {
 public:
  // Creates (truncates) `dir/name` and `dir/name.sum`.
  static Result<std::unique_ptr<ChecksummedFileWriter>> Create(
      const std::string& dir, const std::string& name,
      uint32_t block_bytes = kDefaultChecksumBlockBytes);
  ~ChecksummedFileWriter();
  ChecksummedFileWriter(const ChecksummedFileWriter&) = delete;
  ChecksummedFileWriter& operator=(const ChecksummedFileWriter&) = delete;

  Status Append(const void* data, size_t bytes);
  // Appends zero bytes until the data size is a multiple of `alignment` (used to start extents on
  // 4 KiB boundaries).
  Status PadTo(uint64_t alignment);
  uint64_t bytes_written() const { return data_bytes_; }
  // Pads to 4 KiB, writes the sidecar, fsyncs both, closes. Returns what the manifest records.
  Result<FileInfo> Finish();

 private:
  ChecksummedFileWriter(std::string path, std::string name, int fd, uint32_t block_bytes);
  Status FlushFullBlocks();

  const std::string path_;
  const std::string name_;
  int fd_ = -1;
  const uint32_t block_bytes_;
  uint64_t data_bytes_ = 0;
  std::vector<char> buffer_;    // pending data, flushed in whole blocks
  std::vector<uint64_t> sums_;  // one per completed block
  bool finished_ = false;
};

// Reads a checksummed data file, verifying every block it touches.
class ChecksummedFileReader {
 public:
  // Opens `dir/info.name`, loads and verifies its sidecar against info.sum_xxh3 and the file size.
  static Result<std::unique_ptr<ChecksummedFileReader>> Open(const std::string& dir,
                                                             const FileInfo& info);
  ~ChecksummedFileReader();
  ChecksummedFileReader(const ChecksummedFileReader&) = delete;
  ChecksummedFileReader& operator=(const ChecksummedFileReader&) = delete;

  // Reads [offset, offset+bytes) of the data into dst; every block overlapped is read whole and
  // verified. Corruption names the file and block index; InvalidArgument for bytes past the data's
  // end or outside a window.
  Status ReadAt(uint64_t offset, uint64_t bytes, void* dst) const;
  // Verifies that `data` (a buffer holding the padded file bytes starting at block-aligned
  // `offset`) matches the stored checksums of the blocks it covers. Offsets here and in ReadAt are
  // the whole file's (window_offset() + the position in this file).
  Status VerifyBlocks(uint64_t offset, const void* data, uint64_t bytes) const;
  // Reads and verifies the whole file in large chunks.
  Status VerifyAll() const;

  const std::string& path() const { return path_; }
  const FileInfo& info() const { return info_; }
  uint64_t padded_bytes() const { return AlignUp(info_.data_bytes, kFileAlignment); }
  uint64_t window_offset() const { return info_.window_offset; }
  int fd() const { return fd_; }
  const std::vector<uint64_t>& block_sums() const { return sums_; }

 private:
  ChecksummedFileReader(std::string path, FileInfo info, int fd, std::vector<uint64_t> sums);
  // VerifyBlocks at `at`, a position in this file.
  Status VerifyLocal(uint64_t at, const void* data, uint64_t bytes) const;
  // InvalidArgument unless [offset, offset + bytes) lies within the window's data.
  Status CheckInWindow(uint64_t offset, uint64_t bytes) const;
  const std::string path_;
  const FileInfo info_;
  const int fd_;
  const std::vector<uint64_t> sums_;
};

}  // namespace skiff::format
