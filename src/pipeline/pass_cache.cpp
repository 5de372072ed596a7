#include "skiff/pipeline/pass_cache.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <semaphore>
#include <thread>
#include <type_traits>

#include "skiff/format/checksummed_file.h"
#include "skiff/io/write_path.h"
#include "skiff/log.h"
#include "skiff/pipeline/bounded_queue.h"
#include "skiff/random.h"
#include "skiff/units.h"

namespace skiff::pipeline {
namespace {

constexpr uint64_t kAlignment = 4096;  // O_DIRECT: buffer address, file offset and length
constexpr uint64_t kMagic = 0x3153534150464b53ull;  // "SKFPASS1"

// The record's first block.
struct Header {
  uint64_t magic = kMagic;
  uint64_t payload_bytes = 0;  // the arrays, unpadded
  uint64_t checksum = 0;       // chunk hashes folded (Fold)
  int64_t index = 0;
  uint64_t sample_seed = 0;
  uint64_t aggregated = 0;
  uint64_t input_nodes = 0, seeds = 0, labels = 0, features = 0, blocks = 0;
};
static_assert(std::is_trivially_copyable_v<Header> && sizeof(Header) <= kAlignment);

// Per block, at the front of the payload.
struct BlockHeader {
  int64_t num_dst = 0, num_src = 0;
  uint64_t indptr = 0, indices = 0, src_degree = 0;
};

uint64_t RoundUp(uint64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

uint64_t Fold(uint64_t sum, const std::byte* chunk, uint64_t bytes) {
  return Mix64(sum ^ format::Xxh3(chunk, bytes));
}

template <typename T, typename A>
uint64_t ArrayBytes(const std::vector<T, A>& v) {
  return v.size() * sizeof(T);
}

uint64_t BatchBytesHeld(const PreparedBatch& b) {
  uint64_t bytes = ArrayBytes(b.batch.input_nodes) + ArrayBytes(b.batch.seeds) +
                   ArrayBytes(b.batch.labels) + ArrayBytes(b.features);
  for (const sampler::Block& block : b.batch.blocks) {
    bytes += ArrayBytes(block.indptr) + ArrayBytes(block.indices) + ArrayBytes(block.src_degree);
  }
  return bytes;
}

// The payload written chunk by chunk from `offset` on, through `chunk` (PassCache::kChunkBytes).
class ChunkWriter {
 public:
  ChunkWriter(int fd, const std::string& name, uint64_t offset, storage::AlignedBuffer* chunk)
      : fd_(fd), name_(name), offset_(offset), chunk_(chunk) {}
  template <typename T, typename A>
  void Put(const std::vector<T, A>& v) {
    Put(v.data(), ArrayBytes(v));
  }
  void Put(const void* data, uint64_t bytes) {
    const auto* from = static_cast<const std::byte*>(data);
    while (bytes > 0 && status_.ok()) {
      const uint64_t n = std::min(bytes, PassCache::kChunkBytes - fill_);
      std::memcpy(chunk_->data() + fill_, from, n);
      fill_ += n;
      from += n;
      bytes -= n;
      if (fill_ == PassCache::kChunkBytes) Flush();
    }
  }
  // Writes what is left (padded); returns the first write's error.
  Status Finish() {
    if (fill_ > 0) Flush();
    return status_;
  }
  uint64_t checksum() const { return checksum_; }
  uint64_t end() const { return offset_; }

 private:
  void Flush() {
    checksum_ = Fold(checksum_, chunk_->data(), fill_);
    const uint64_t padded = RoundUp(fill_);
    std::memset(chunk_->data() + fill_, 0, padded - fill_);
    if (status_.ok()) status_ = io::PwriteAll(fd_, chunk_->data(), padded, offset_, name_);
    offset_ += padded;
    fill_ = 0;
  }
  int fd_;
  const std::string& name_;
  uint64_t offset_;
  storage::AlignedBuffer* chunk_;
  uint64_t fill_ = 0, checksum_ = 0;
  Status status_;
};

// The payload read back chunk by chunk, `payload_bytes` of it from `offset` on.
class ChunkReader {
 public:
  ChunkReader(int fd, const std::string& name, uint64_t offset, uint64_t payload_bytes,
              storage::AlignedBuffer* chunk)
      : fd_(fd), name_(name), offset_(offset), left_(payload_bytes), chunk_(chunk) {}
  // False when the payload ends first or a read fails (status()).
  template <typename T, typename A>
  bool GetArray(uint64_t count, std::vector<T, A>* out) {
    if (count > (left_ + (fill_ - pos_)) / sizeof(T)) return false;
    out->resize(count);
    return Get(out->data(), count * sizeof(T));
  }
  bool Get(void* data, uint64_t bytes) {
    auto* to = static_cast<std::byte*>(data);
    while (bytes > 0) {
      if (pos_ == fill_ && !Refill()) return false;
      const uint64_t n = std::min(bytes, fill_ - pos_);
      std::memcpy(to, chunk_->data() + pos_, n);
      pos_ += n;
      to += n;
      bytes -= n;
    }
    return true;
  }
  bool at_end() const { return left_ == 0 && pos_ == fill_; }
  uint64_t checksum() const { return checksum_; }
  const Status& status() const { return status_; }

 private:
  bool Refill() {
    if (left_ == 0) return false;
    fill_ = std::min(left_, PassCache::kChunkBytes);
    const uint64_t padded = RoundUp(fill_);
    status_ = io::PreadAll(fd_, chunk_->data(), padded, offset_, name_);
    if (!status_.ok()) return false;
    checksum_ = Fold(checksum_, chunk_->data(), fill_);
    offset_ += padded;
    left_ -= fill_;
    pos_ = 0;
    return true;
  }
  int fd_;
  const std::string& name_;
  uint64_t offset_, left_;
  storage::AlignedBuffer* chunk_;
  uint64_t fill_ = 0, pos_ = 0, checksum_ = 0;
  Status status_;
};

}  // namespace

Result<std::unique_ptr<PassCache>> PassCache::Create(const std::string& dir,
                                                     uint64_t free_reserve_bytes) {
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::IOError("cannot keep evaluation batches in " + dir +
                           ": no unnamed O_DIRECT file there (" + std::strerror(errno) + ")");
  }
  return std::unique_ptr<PassCache>(new PassCache(fd, dir, free_reserve_bytes));
}

PassCache::~PassCache() {
  if (fd_ >= 0) ::close(fd_);
}

void PassCache::Begin(uint64_t key) {
  key_ = key;
  sealed_ = false;
  records_.clear();
  end_ = 0;
  chunk_ = storage::AlignedBuffer();
}

void PassCache::Seal() {
  sealed_ = true;
  chunk_ = storage::AlignedBuffer();  // only one cache's buffer is alive at a time
}

int PassCache::ReplayBatchesWithin(uint64_t allowance) const {
  uint64_t largest = 1;
  for (const Record& r : records_) largest = std::max(largest, r.batch_bytes);
  if (allowance <= kChunkBytes) return 0;
  return static_cast<int>(
      std::min<uint64_t>((allowance - kChunkBytes) / largest, kMaxReplayBatches));
}

Status PassCache::Append(const PreparedBatch& batch) {
  const sampler::MiniBatch& b = batch.batch;
  const uint64_t batch_bytes = BatchBytesHeld(batch);
  const uint64_t payload_bytes = batch_bytes + b.blocks.size() * sizeof(BlockHeader);
  // The file system keeps room for others: not below the reserve free after this record.
  const uint64_t need = kAlignment + RoundUp(payload_bytes);
  struct statvfs fs {};
  if (::fstatvfs(fd_, &fs) == 0 &&
      static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize < need + free_reserve_bytes_) {
    Begin(key_);
    return Status::ResourceExhausted("keeping evaluation batches in " + dir_ +
                                     " would leave less than " + FormatBytes(free_reserve_bytes_) +
                                     " free there");
  }
  Header h;
  h.index = batch.index;
  h.sample_seed = batch.sample_seed;
  h.aggregated = batch.aggregated ? 1 : 0;
  h.input_nodes = b.input_nodes.size();
  h.seeds = b.seeds.size();
  h.labels = b.labels.size();
  h.features = batch.features.size();
  h.blocks = b.blocks.size();
  h.payload_bytes = payload_bytes;
  if (chunk_.empty()) {
    SKIFF_ASSIGN_OR_RETURN(chunk_, storage::AlignedBuffer::Allocate(kChunkBytes));
  }
  ChunkWriter out(fd_, name_, end_ + kAlignment, &chunk_);
  for (const sampler::Block& block : b.blocks) {
    const BlockHeader bh{block.num_dst, block.num_src, block.indptr.size(), block.indices.size(),
                         block.src_degree.size()};
    out.Put(&bh, sizeof(bh));
  }
  out.Put(b.input_nodes);
  out.Put(b.seeds);
  out.Put(b.labels);
  out.Put(batch.features);
  for (const sampler::Block& block : b.blocks) {
    out.Put(block.indptr);
    out.Put(block.indices);
    out.Put(block.src_degree);
  }
  Status written = out.Finish();
  if (written.ok()) {
    // The header last, through the (now free) chunk buffer.
    h.checksum = out.checksum();
    std::memset(chunk_.data(), 0, kAlignment);
    std::memcpy(chunk_.data(), &h, sizeof(h));
    written = io::PwriteAll(fd_, chunk_.data(), kAlignment, end_, name_);
  }
  if (!written.ok()) {
    Begin(key_);  // what was written is no longer a whole pass
    return written.WithContext("keeping evaluation batch " + std::to_string(batch.index));
  }
  records_.push_back({end_, out.end() - end_, batch_bytes, batch.index});
  end_ = out.end();
  return Status::Ok();
}

Status PassCache::Read(const Record& record, storage::AlignedBuffer* chunk,
                       PreparedBatch* out) const {
  const std::string what = "kept evaluation batch " + std::to_string(record.index);
  auto corrupt = [&](const std::string& why) {
    return Status::Corruption(what + " in " + name_ + ": " + why);
  };
  SKIFF_RETURN_IF_ERROR(
      io::PreadAll(fd_, chunk->data(), kAlignment, record.offset, name_).WithContext(what));
  Header h;
  std::memcpy(&h, chunk->data(), sizeof(h));
  if (h.magic != kMagic || h.index != record.index ||
      kAlignment + RoundUp(h.payload_bytes) > record.bytes || h.blocks > h.payload_bytes) {
    return corrupt("bad record header");
  }
  ChunkReader in(fd_, name_, record.offset + kAlignment, h.payload_bytes, chunk);
  out->index = h.index;
  out->sample_seed = h.sample_seed;
  out->aggregated = h.aggregated != 0;
  sampler::MiniBatch& b = out->batch;
  std::vector<BlockHeader> blocks;
  bool ok = in.GetArray(h.blocks, &blocks) && in.GetArray(h.input_nodes, &b.input_nodes) &&
            in.GetArray(h.seeds, &b.seeds) && in.GetArray(h.labels, &b.labels) &&
            in.GetArray(h.features, &out->features);
  b.blocks.resize(blocks.size());
  for (size_t l = 0; l < blocks.size() && ok; ++l) {
    sampler::Block& block = b.blocks[l];
    block.num_dst = blocks[l].num_dst;
    block.num_src = blocks[l].num_src;
    ok = in.GetArray(blocks[l].indptr, &block.indptr) &&
         in.GetArray(blocks[l].indices, &block.indices) &&
         in.GetArray(blocks[l].src_degree, &block.src_degree);
  }
  SKIFF_RETURN_IF_ERROR(in.status().WithContext(what));
  if (!ok || !in.at_end()) return corrupt("sizes do not match the record");
  if (in.checksum() != h.checksum) return corrupt("checksum mismatch");
  out->held_bytes = BatchBytesHeld(*out);
  return Status::Ok();
}

Status PassCache::Replay(const std::function<Status(PreparedBatch&)>& consume, int batches) {
  SKIFF_CHECK(sealed_ && batches >= 1);
  SKIFF_ASSIGN_OR_RETURN(storage::AlignedBuffer chunk,
                         storage::AlignedBuffer::Allocate(kChunkBytes));
  if (batches == 1) {  // no room to read ahead
    for (const Record& record : records_) {
      PreparedBatch batch;
      SKIFF_RETURN_IF_ERROR(Read(record, &chunk, &batch));
      SKIFF_RETURN_IF_ERROR(consume(batch));
    }
    return Status::Ok();
  }
  // The reader takes a slot before it reads a batch, the consumer gives it back once the batch is
  // computed: at most `batches` alive. Cancelling the queue and giving back every slot stops it.
  BoundedQueue<PreparedBatch> queue("replayed", static_cast<size_t>(batches));
  std::counting_semaphore<> slots(batches);
  std::atomic<bool> stop{false};
  Status read_status;
  std::thread reader([&] {
    for (const Record& record : records_) {
      slots.acquire();
      if (stop.load()) break;
      PreparedBatch batch;
      read_status = Read(record, &chunk, &batch);
      if (!read_status.ok() || !queue.Push(std::move(batch))) break;
    }
    queue.Close();
  });
  Status status;
  while (auto batch = queue.Pop()) {
    status = consume(*batch);
    batch.reset();
    slots.release();
    if (!status.ok()) {
      stop.store(true);
      queue.Cancel();
      slots.release(batches);
      break;
    }
  }
  reader.join();
  SKIFF_RETURN_IF_ERROR(status);
  return read_status;
}

}  // namespace skiff::pipeline
