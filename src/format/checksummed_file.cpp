#include "skiff/format/checksummed_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>  // XXH3_64bits_dispatch
#endif

#include <algorithm>
#include <cstring>

#include "skiff/io/write_path.h"

namespace skiff::format {
namespace {

constexpr char kSumMagic[8] = {'S', 'K', 'F', 'S', 'U', 'M', '0', '1'};
constexpr size_t kSumHeaderBytes = 32;
constexpr size_t kWriteChunkBytes = 4 << 20;

uint64_t PadUnit(uint32_t block_bytes) { return std::max<uint64_t>(kFileAlignment, block_bytes); }

}  // namespace

// On x86-64, libxxhash's dispatcher picks the widest vector unit the CPU has (AVX2, AVX-512) at
// run time; its plain XXH3_64bits is built for baseline x86-64 (SSE2). The values are the same.
// Every block read is hashed once: on the benchmark machine 4 KiB blocks hash at ~20 GB/s from
// memory instead of ~5-11 GB/s, and hashing fell from 11% to 7% of an out-of-core run's CPU time
// (the first touch of freshly read data costs its cache misses whatever the hash).
uint64_t Xxh3(const void* data, size_t bytes) {
#if defined(__x86_64__)
  return XXH3_64bits_dispatch(data, bytes);
#else
  return XXH3_64bits(data, bytes);
#endif
}

// --- Writer
// ---------------------------------------------------------------------------------------

ChecksummedFileWriter::ChecksummedFileWriter(std::string path, std::string name, int fd,
                                             uint32_t block_bytes)
    : path_(std::move(path)), name_(std::move(name)), fd_(fd), block_bytes_(block_bytes) {
  buffer_.reserve(kWriteChunkBytes + block_bytes_);
}

ChecksummedFileWriter::~ChecksummedFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<ChecksummedFileWriter>> ChecksummedFileWriter::Create(
    const std::string& dir, const std::string& name, uint32_t block_bytes) {
  if (block_bytes < 512 || (block_bytes & (block_bytes - 1)) != 0) {
    return Status::InvalidArgument("checksum block size must be a power of two >= 512, got " +
                                   std::to_string(block_bytes));
  }
  const std::string path = dir + "/" + name;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "create " + path);
  return std::unique_ptr<ChecksummedFileWriter>(
      new ChecksummedFileWriter(path, name, fd, block_bytes));
}

Status ChecksummedFileWriter::FlushFullBlocks() {
  const size_t full = buffer_.size() / block_bytes_ * block_bytes_;
  if (full == 0) return Status::Ok();
  for (size_t off = 0; off < full; off += block_bytes_) {
    sums_.push_back(Xxh3(buffer_.data() + off, block_bytes_));
  }
  SKIFF_RETURN_IF_ERROR(io::WriteAll(fd_, buffer_.data(), full, path_));
  buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(full));
  return Status::Ok();
}

Status ChecksummedFileWriter::Append(const void* data, size_t bytes) {
  SKIFF_CHECK(!finished_);
  const auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const size_t take =
        std::min(bytes, kWriteChunkBytes - std::min(kWriteChunkBytes, buffer_.size()));
    if (take == 0) {
      SKIFF_RETURN_IF_ERROR(FlushFullBlocks());
      continue;
    }
    buffer_.insert(buffer_.end(), p, p + take);
    p += take;
    bytes -= take;
    data_bytes_ += take;
    if (buffer_.size() >= kWriteChunkBytes) SKIFF_RETURN_IF_ERROR(FlushFullBlocks());
  }
  return Status::Ok();
}

Status ChecksummedFileWriter::PadTo(uint64_t alignment) {
  const uint64_t target = AlignUp(data_bytes_, alignment);
  static const std::vector<char> zeros(64 * 1024, 0);
  while (data_bytes_ < target) {
    const uint64_t n = std::min<uint64_t>(zeros.size(), target - data_bytes_);
    SKIFF_RETURN_IF_ERROR(Append(zeros.data(), n));
  }
  return Status::Ok();
}

Result<FileInfo> ChecksummedFileWriter::Finish() {
  SKIFF_CHECK(!finished_);
  const uint64_t logical = data_bytes_;
  // Pad the file so O_DIRECT can read its last block, and so every block is whole.
  const uint64_t padded = AlignUp(logical, PadUnit(block_bytes_));
  if (padded > logical) buffer_.resize(buffer_.size() + (padded - logical), 0);
  SKIFF_RETURN_IF_ERROR(FlushFullBlocks());
  SKIFF_CHECK(buffer_.empty());
  SKIFF_RETURN_IF_ERROR(io::Fsync(fd_, path_));
  if (::close(fd_) != 0) {
    fd_ = -1;
    return Status::FromErrno(errno, "close " + path_);
  }
  fd_ = -1;
  finished_ = true;

  std::vector<char> sidecar(kSumHeaderBytes + sums_.size() * sizeof(uint64_t), 0);
  std::memcpy(sidecar.data(), kSumMagic, 8);
  const uint32_t bb = block_bytes_;
  const uint64_t nblocks = sums_.size();
  std::memcpy(sidecar.data() + 8, &bb, 4);
  std::memcpy(sidecar.data() + 16, &logical, 8);
  std::memcpy(sidecar.data() + 24, &nblocks, 8);
  if (!sums_.empty()) {
    std::memcpy(sidecar.data() + kSumHeaderBytes, sums_.data(), sums_.size() * sizeof(uint64_t));
  }
  const std::string sum_path = path_ + ".sum";
  const int sfd = ::open(sum_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (sfd < 0) return Status::FromErrno(errno, "create " + sum_path);
  Status st = io::WriteAll(sfd, sidecar.data(), sidecar.size(), sum_path);
  if (st.ok()) st = io::Fsync(sfd, sum_path);
  ::close(sfd);
  SKIFF_RETURN_IF_ERROR(st);

  FileInfo info;
  info.name = name_;
  info.data_bytes = logical;
  info.sum_xxh3 = Xxh3(sidecar.data(), sidecar.size());
  info.block_bytes = block_bytes_;
  return info;
}

// --- Reader
// ---------------------------------------------------------------------------------------

ChecksummedFileReader::ChecksummedFileReader(std::string path, FileInfo info, int fd,
                                             std::vector<uint64_t> sums)
    : path_(std::move(path)), info_(std::move(info)), fd_(fd), sums_(std::move(sums)) {}

ChecksummedFileReader::~ChecksummedFileReader() { ::close(fd_); }

Result<std::unique_ptr<ChecksummedFileReader>> ChecksummedFileReader::Open(const std::string& dir,
                                                                           const FileInfo& info) {
  const std::string path = dir + "/" + info.name;
  const std::string sum_path = path + ".sum";
  const int sfd = ::open(sum_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (sfd < 0) return Status::FromErrno(errno, "open checksum file " + sum_path);
  struct stat st {};
  if (::fstat(sfd, &st) != 0) {
    ::close(sfd);
    return Status::FromErrno(errno, "stat " + sum_path);
  }
  std::vector<char> sidecar(static_cast<size_t>(st.st_size));
  Status rs = io::PreadAll(sfd, sidecar.data(), sidecar.size(), 0, sum_path);
  ::close(sfd);
  SKIFF_RETURN_IF_ERROR(rs);
  if (sidecar.size() < kSumHeaderBytes || std::memcmp(sidecar.data(), kSumMagic, 8) != 0) {
    return Status::Corruption(sum_path + ": not a Skiff checksum file (bad magic)");
  }
  if (Xxh3(sidecar.data(), sidecar.size()) != info.sum_xxh3) {
    return Status::Corruption(sum_path + ": checksum file does not match the manifest");
  }
  uint32_t bb = 0;
  uint64_t logical = 0, nblocks = 0;
  std::memcpy(&bb, sidecar.data() + 8, 4);
  std::memcpy(&logical, sidecar.data() + 16, 8);
  std::memcpy(&nblocks, sidecar.data() + 24, 8);
  if (bb != info.block_bytes || logical != info.data_bytes ||
      sidecar.size() != kSumHeaderBytes + nblocks * 8 ||
      nblocks * bb != AlignUp(logical, PadUnit(bb))) {
    return Status::Corruption(sum_path + ": header disagrees with the manifest (block size " +
                              std::to_string(bb) + ", data bytes " + std::to_string(logical) + ")");
  }
  std::vector<uint64_t> sums(nblocks);
  if (nblocks) std::memcpy(sums.data(), sidecar.data() + kSumHeaderBytes, nblocks * 8);

  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  struct stat dst {};
  if (::fstat(fd, &dst) != 0) {
    ::close(fd);
    return Status::FromErrno(errno, "stat " + path);
  }
  if (static_cast<uint64_t>(dst.st_size) != nblocks * bb) {
    ::close(fd);
    return Status::Corruption(path + ": file is " + std::to_string(dst.st_size) +
                              " bytes, expected " + std::to_string(nblocks * bb) +
                              " (truncated or overwritten)");
  }
  FileInfo copy = info;
  return std::unique_ptr<ChecksummedFileReader>(
      new ChecksummedFileReader(path, std::move(copy), fd, std::move(sums)));
}

Status ChecksummedFileReader::VerifyBlocks(uint64_t offset, const void* data,
                                           uint64_t bytes) const {
  if (offset < info_.window_offset) {
    return Status::Corruption(path_ + ": read before the window's start (bytes from " +
                              std::to_string(offset) + ", window from " +
                              std::to_string(info_.window_offset) + ")");
  }
  return VerifyLocal(offset - info_.window_offset, data, bytes);
}

Status ChecksummedFileReader::VerifyLocal(uint64_t at, const void* data, uint64_t bytes) const {
  const uint32_t bb = info_.block_bytes;
  SKIFF_CHECK(at % bb == 0 && bytes % bb == 0);
  const auto* p = static_cast<const char*>(data);
  for (uint64_t off = 0; off < bytes; off += bb) {
    const uint64_t block = (at + off) / bb;
    if (block >= sums_.size()) {
      return Status::Corruption(path_ + ": read past the end (block " + std::to_string(block) +
                                ")");
    }
    if (Xxh3(p + off, bb) != sums_[block]) {
      return Status::Corruption(path_ + ": checksum mismatch in block " + std::to_string(block) +
                                " (bytes " + std::to_string(block * bb) + ".." +
                                std::to_string((block + 1) * bb) + ")");
    }
  }
  return Status::Ok();
}

Status ChecksummedFileReader::CheckInWindow(uint64_t offset, uint64_t bytes) const {
  const uint64_t first = info_.window_offset, end = first + info_.data_bytes;
  if (offset >= first && offset + bytes <= end) return Status::Ok();
  if (first == 0) {
    return Status::InvalidArgument(path_ + ": read of " + std::to_string(bytes) + " bytes at " +
                                   std::to_string(offset) + " is past the data end " +
                                   std::to_string(end));
  }
  return Status::InvalidArgument(path_ + ": read of bytes [" + std::to_string(offset) + ", " +
                                 std::to_string(offset + bytes) +
                                 ") of a file that holds only bytes [" + std::to_string(first) +
                                 ", " + std::to_string(end) + ") of the dataset's (a shard)");
}

Status ChecksummedFileReader::ReadAt(uint64_t offset, uint64_t bytes, void* dst) const {
  if (bytes == 0) return Status::Ok();
  SKIFF_RETURN_IF_ERROR(CheckInWindow(offset, bytes));
  offset -= info_.window_offset;
  const uint32_t bb = info_.block_bytes;
  constexpr uint64_t kChunk = 8 << 20;
  std::vector<char> buf;
  uint64_t done = 0;
  while (done < bytes) {
    const uint64_t pos = offset + done;
    const uint64_t start = pos / bb * bb;
    const uint64_t end = std::min(AlignUp(offset + bytes, bb), start + kChunk);
    buf.resize(end - start);
    SKIFF_RETURN_IF_ERROR(io::PreadAll(fd_, buf.data(), buf.size(), start, path_));
    SKIFF_RETURN_IF_ERROR(VerifyLocal(start, buf.data(), buf.size()));
    const uint64_t take = std::min(end, offset + bytes) - pos;
    std::memcpy(static_cast<char*>(dst) + done, buf.data() + (pos - start), take);
    done += take;
  }
  return Status::Ok();
}

Status ChecksummedFileReader::VerifyAll() const {
  const uint64_t total = sums_.size() * static_cast<uint64_t>(info_.block_bytes);
  constexpr uint64_t kChunk = 8 << 20;
  std::vector<char> buf;
  for (uint64_t off = 0; off < total; off += kChunk) {
    const uint64_t n = std::min(kChunk, total - off);
    buf.resize(n);
    SKIFF_RETURN_IF_ERROR(io::PreadAll(fd_, buf.data(), n, off, path_));
    SKIFF_RETURN_IF_ERROR(VerifyLocal(off, buf.data(), n));
  }
  return Status::Ok();
}

}  // namespace skiff::format
