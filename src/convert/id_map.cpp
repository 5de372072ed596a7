#include "skiff/convert/id_map.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <unordered_map>
#include <vector>

namespace skiff::convert {
namespace {

// The one seam where RocksDB's status becomes Skiff's.
Status ToStatus(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::Ok();
  const std::string msg = what + ": " + s.ToString();
  if (s.IsNotFound()) return Status::NotFound(msg);
  if (s.IsCorruption()) return Status::Corruption(msg);
  if (s.IsNoSpace()) return Status::ResourceExhausted(msg + " (disk full?)");
  if (s.IsInvalidArgument()) return Status::InvalidArgument(msg);
  if (s.IsIOError()) return Status::IOError(msg);
  return Status::Internal(msg);
}

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

std::string RawKey(std::string_view raw) {
  std::string key;
  key.reserve(raw.size() + 1);
  key += 'r';
  key.append(raw);
  return key;
}

std::string DenseKey(int64_t dense) {
  std::string key(9, '\0');
  key[0] = 'd';
  const uint64_t v = static_cast<uint64_t>(dense);
  for (int i = 0; i < 8; ++i) key[1 + i] = static_cast<char>((v >> (56 - 8 * i)) & 0xff);
  return key;
}

// The dense ID of a 'd' key (9 bytes: 'd', then the ID big-endian).
int64_t DecodeDenseKey(const rocksdb::Slice& key) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(key[1 + i]);
  return static_cast<int64_t>(v);
}

// The dense ID an 'r' key maps to (8 bytes, little-endian); Corruption naming the map otherwise.
Status DecodeDenseValue(const rocksdb::Slice& value, const std::string& dir, int64_t* dense) {
  if (value.size() != 8) {
    return Status::Corruption("ID map " + dir + ": value for a raw ID has " +
                              std::to_string(value.size()) + " bytes, expected 8");
  }
  std::memcpy(dense, value.data(), 8);
  return Status::Ok();
}

std::string EncodeValue(int64_t dense) {
  std::string value(8, '\0');
  std::memcpy(value.data(), &dense, 8);
  return value;
}

// Bytes an entry of the cache costs: the node (next pointer, std::string, value, cached hash), its
// bucket pointer and malloc overhead; raw IDs longer than the small-string buffer add a heap block.
uint64_t CacheEntryBytes(std::string_view raw) {
  constexpr uint64_t kNodeBytes = 88;
  return kNodeBytes + (raw.size() > 15 ? raw.size() + 17 : 0);
}

}  // namespace

class IdMap::Impl {
 public:
  std::string dir;
  std::unique_ptr<rocksdb::DB> db;
  // Pending new IDs: raw bytes in assignment order (dense = first_pending_id + index).
  std::vector<std::string> pending;
  int64_t first_pending_id = 0;
  std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>> cache;
  uint64_t cache_bytes = 0;
  uint64_t cache_bytes_max = 0;
  // True until the cache is first cleared: while it holds every assigned ID, a miss is a new ID
  // and RocksDB need not be asked.
  bool cache_complete = true;
  rocksdb::WriteOptions write_options;
  rocksdb::ReadOptions read_options;
  bool read_only = false;

  // Writes the pending IDs as one WriteBatch. The raw->dense keys are put in key order: inserting
  // sorted keys into the memtable's skip list reuses the search path of the previous insert,
  // which roughly halves the cost of a batch of random strings.
  Status FlushBatch() {
    if (pending.empty()) return Status::Ok();
    std::vector<uint32_t> order(pending.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](uint32_t a, uint32_t b) { return pending[a] < pending[b]; });
    rocksdb::WriteBatch batch;
    for (uint32_t i : order) {
      batch.Put(RawKey(pending[i]), EncodeValue(first_pending_id + i));
    }
    for (uint32_t i = 0; i < pending.size(); ++i) {
      batch.Put(DenseKey(first_pending_id + i), pending[i]);
    }
    SKIFF_RETURN_IF_ERROR(ToStatus(db->Write(write_options, &batch), "write ID map " + dir));
    first_pending_id += static_cast<int64_t>(pending.size());
    pending.clear();
    return Status::Ok();
  }
};

IdMap::IdMap(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
IdMap::~IdMap() = default;

Result<std::unique_ptr<IdMap>> IdMap::Create(const std::string& dir, uint64_t memory_bytes) {
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  // Budget: 70% cache (every hit saves a RocksDB lookup), 15% block cache, 15% memtables (two
  // write buffers).
  const uint64_t budget = std::max<uint64_t>(memory_bytes, 16ull << 20);
  impl->cache_bytes_max = budget * 7 / 10;
  rocksdb::Options options;
  options.create_if_missing = true;
  options.error_if_exists = true;
  options.max_open_files = 256;
  options.write_buffer_size = std::max<uint64_t>(budget * 75 / 1000, 4ull << 20);
  options.max_write_buffer_number = 2;
  options.max_background_jobs = 2;
  options.compression = rocksdb::kNoCompression;
  // Bulk load: the map is written once, in order of first sight, and read while it is written.
  // Compactions would compete with the conversion for the CPU and stall writes; without them
  // flushed memtables stay as L0 files and a lookup probes each file's Bloom filter (cached).
  options.disable_auto_compactions = true;
  options.level0_slowdown_writes_trigger = 1 << 20;
  options.level0_stop_writes_trigger = 1 << 20;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(std::max<uint64_t>(budget * 15 / 100, 4ull << 20));
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  // Index and filter blocks live with the table readers, not in the LRU block cache: every lookup
  // probes the Bloom filter of each L0 file, and a filter evicted by data blocks would be re-read
  // from disk per probe. They cost about 10 bits per key.
  table.cache_index_and_filter_blocks = false;
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  impl->write_options.disableWAL = true;
  rocksdb::DB* db = nullptr;
  SKIFF_RETURN_IF_ERROR(ToStatus(rocksdb::DB::Open(options, dir, &db), "create ID map " + dir));
  impl->db.reset(db);
  return std::unique_ptr<IdMap>(new IdMap(std::move(impl)));
}

Result<std::unique_ptr<IdMap>> IdMap::OpenReadOnly(const std::string& dir) {
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->read_only = true;
  rocksdb::Options options;
  rocksdb::DB* db = nullptr;
  SKIFF_RETURN_IF_ERROR(
      ToStatus(rocksdb::DB::OpenForReadOnly(options, dir, &db), "open ID map " + dir));
  impl->db.reset(db);
  std::unique_ptr<IdMap> map(new IdMap(std::move(impl)));
  // size() = 1 + the largest dense ID (the last 'd' key).
  std::unique_ptr<rocksdb::Iterator> it(map->impl_->db->NewIterator(map->impl_->read_options));
  it->SeekForPrev(DenseKey(std::numeric_limits<int64_t>::max()));
  if (it->Valid() && it->key().size() == 9 && it->key()[0] == 'd') {
    map->next_id_ = DecodeDenseKey(it->key()) + 1;
  }
  SKIFF_RETURN_IF_ERROR(ToStatus(it->status(), "read ID map " + dir));
  return map;
}

Result<std::optional<int64_t>> IdMap::Find(std::string_view raw) {
  Impl& im = *impl_;
  if (auto it = im.cache.find(raw); it != im.cache.end()) {
    ++cache_hits_;
    return std::optional<int64_t>(it->second);
  }
  ++db_lookups_;
  std::string value;
  const rocksdb::Status s = im.db->Get(im.read_options, RawKey(raw), &value);
  if (s.IsNotFound()) return std::optional<int64_t>();
  SKIFF_RETURN_IF_ERROR(ToStatus(s, "read ID map " + im.dir));
  int64_t dense = 0;
  SKIFF_RETURN_IF_ERROR(DecodeDenseValue(value, im.dir, &dense));
  return std::optional<int64_t>(dense);
}

Result<int64_t> IdMap::GetOrAssign(std::string_view raw) {
  Impl& im = *impl_;
  SKIFF_CHECK(!im.read_only);
  if (auto it = im.cache.find(raw); it != im.cache.end()) {
    ++cache_hits_;
    return it->second;
  }
  // Every pending (unwritten) assignment is in the cache, so a miss can ask the database.
  std::optional<int64_t> found;
  if (!im.cache_complete) {
    SKIFF_ASSIGN_OR_RETURN(found, Find(raw));
  }
  int64_t dense;
  if (found) {
    dense = *found;
  } else {
    dense = next_id_++;
    im.pending.emplace_back(raw);
    if (im.pending.size() >= kBatchEntries) SKIFF_RETURN_IF_ERROR(im.FlushBatch());
  }
  const uint64_t entry_bytes = CacheEntryBytes(raw);
  if (im.cache_bytes + entry_bytes > im.cache_bytes_max) {
    // Clearing drops pending assignments from the cache: write them first.
    SKIFF_RETURN_IF_ERROR(im.FlushBatch());
    im.cache.clear();
    im.cache.rehash(0);
    im.cache_bytes = 0;
    im.cache_complete = false;
  }
  im.cache.emplace(std::string(raw), dense);
  im.cache_bytes += entry_bytes;
  return dense;
}

Result<std::string> IdMap::RawId(int64_t dense) {
  Impl& im = *impl_;
  if (dense < 0 || dense >= next_id_) {
    return Status::NotFound("ID map " + im.dir + ": dense ID " + std::to_string(dense) +
                            " is out of range [0, " + std::to_string(next_id_) + ")");
  }
  if (!im.read_only) SKIFF_RETURN_IF_ERROR(im.FlushBatch());
  std::string value;
  SKIFF_RETURN_IF_ERROR(
      ToStatus(im.db->Get(im.read_options, DenseKey(dense), &value), "read ID map " + im.dir));
  return value;
}

Status IdMap::ForEachDense(const std::function<Status(int64_t dense, std::string_view raw)>& fn) {
  Impl& im = *impl_;
  SKIFF_CHECK_MSG(im.read_only, "ForEachDense needs a map opened read-only");
  std::unique_ptr<rocksdb::Iterator> it(im.db->NewIterator(im.read_options));
  for (it->Seek("d"); it->Valid() && it->key().starts_with("d"); it->Next()) {
    if (it->key().size() != 9) {
      return Status::Corruption("ID map " + im.dir + ": a dense-ID key has " +
                                std::to_string(it->key().size()) + " bytes, expected 9");
    }
    SKIFF_RETURN_IF_ERROR(
        fn(DecodeDenseKey(it->key()), std::string_view(it->value().data(), it->value().size())));
  }
  return ToStatus(it->status(), "read ID map " + im.dir);
}

Status IdMap::ForEachRaw(const std::function<Status(std::string_view raw, int64_t dense)>& fn) {
  Impl& im = *impl_;
  SKIFF_CHECK_MSG(im.read_only, "ForEachRaw needs a map opened read-only");
  std::unique_ptr<rocksdb::Iterator> it(im.db->NewIterator(im.read_options));
  for (it->Seek("r"); it->Valid() && it->key().starts_with("r"); it->Next()) {
    int64_t dense = 0;
    SKIFF_RETURN_IF_ERROR(DecodeDenseValue(it->value(), im.dir, &dense));
    SKIFF_RETURN_IF_ERROR(fn(std::string_view(it->key().data() + 1, it->key().size() - 1), dense));
  }
  return ToStatus(it->status(), "read ID map " + im.dir);
}

Status IdMap::Close() {
  Impl& im = *impl_;
  if (!im.db) return Status::Ok();
  if (!im.read_only) {
    SKIFF_RETURN_IF_ERROR(im.FlushBatch());
    rocksdb::FlushOptions flush;
    flush.wait = true;
    SKIFF_RETURN_IF_ERROR(ToStatus(im.db->Flush(flush), "flush ID map " + im.dir));
  }
  SKIFF_RETURN_IF_ERROR(ToStatus(im.db->Close(), "close ID map " + im.dir));
  im.db.reset();
  im.cache.clear();
  return Status::Ok();
}

// --- Bulk load --------------------------------------------------------------------------------

namespace {

// Options of a bulk-loaded map. No Bloom filter: the map is one sorted file per key kind, so a
// lookup is one index search whatever the filter says, and SstFileWriter would hold every key's
// filter hash in memory until the file is finished (8 bytes per ID, per file).
rocksdb::Options BulkLoadOptions() {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.error_if_exists = true;
  options.compression = rocksdb::kNoCompression;
  return options;
}

}  // namespace

class IdMapBulkLoad::Impl {
 public:
  Impl()
      : dense(rocksdb::EnvOptions(), BulkLoadOptions()),
        raw(rocksdb::EnvOptions(), BulkLoadOptions()) {}
  ~Impl() {
    std::error_code ec;
    if (!finished) {
      std::filesystem::remove(dense_path, ec);
      std::filesystem::remove(raw_path, ec);
    }
  }
  std::string dir;
  std::string dense_path, raw_path;
  rocksdb::SstFileWriter dense;
  rocksdb::SstFileWriter raw;
  std::string last_raw_key;
  bool finished = false;
};

IdMapBulkLoad::IdMapBulkLoad(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
IdMapBulkLoad::~IdMapBulkLoad() = default;

Result<std::unique_ptr<IdMapBulkLoad>> IdMapBulkLoad::Create(const std::string& dir,
                                                             const std::string& scratch_dir) {
  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->dense_path = scratch_dir + "/idmap-dense.sst";
  impl->raw_path = scratch_dir + "/idmap-raw.sst";
  SKIFF_RETURN_IF_ERROR(
      ToStatus(impl->dense.Open(impl->dense_path), "create ID map file " + impl->dense_path));
  SKIFF_RETURN_IF_ERROR(
      ToStatus(impl->raw.Open(impl->raw_path), "create ID map file " + impl->raw_path));
  return std::unique_ptr<IdMapBulkLoad>(new IdMapBulkLoad(std::move(impl)));
}

Status IdMapBulkLoad::AddDense(std::string_view raw) {
  SKIFF_RETURN_IF_ERROR(
      ToStatus(impl_->dense.Put(DenseKey(dense_count_), rocksdb::Slice(raw.data(), raw.size())),
               "write ID map file " + impl_->dense_path));
  ++dense_count_;
  return Status::Ok();
}

Status IdMapBulkLoad::AddRaw(std::string_view raw, int64_t dense) {
  std::string key = RawKey(raw);
  SKIFF_CHECK_MSG(raw_count_ == 0 || impl_->last_raw_key < key, "AddRaw: raw IDs out of order");
  SKIFF_RETURN_IF_ERROR(
      ToStatus(impl_->raw.Put(key, EncodeValue(dense)), "write ID map file " + impl_->raw_path));
  impl_->last_raw_key = std::move(key);
  ++raw_count_;
  return Status::Ok();
}

Status IdMapBulkLoad::Finish() {
  Impl& im = *impl_;
  if (dense_count_ != raw_count_) {
    return Status::InvalidArgument("ID map " + im.dir + ": " + std::to_string(dense_count_) +
                                   " dense IDs but " + std::to_string(raw_count_) + " raw IDs");
  }
  std::vector<std::string> files;
  if (dense_count_ > 0) {
    SKIFF_RETURN_IF_ERROR(ToStatus(im.dense.Finish(), "finish ID map file " + im.dense_path));
    SKIFF_RETURN_IF_ERROR(ToStatus(im.raw.Finish(), "finish ID map file " + im.raw_path));
    files = {im.dense_path, im.raw_path};
  }
  rocksdb::DB* db_raw = nullptr;
  SKIFF_RETURN_IF_ERROR(
      ToStatus(rocksdb::DB::Open(BulkLoadOptions(), im.dir, &db_raw), "create ID map " + im.dir));
  std::unique_ptr<rocksdb::DB> db(db_raw);
  if (!files.empty()) {
    rocksdb::IngestExternalFileOptions ingest;
    ingest.move_files = true;
    SKIFF_RETURN_IF_ERROR(ToStatus(db->IngestExternalFile(files, ingest), "load ID map " + im.dir));
  }
  SKIFF_RETURN_IF_ERROR(ToStatus(db->Close(), "close ID map " + im.dir));
  im.finished = true;
  return Status::Ok();
}

}  // namespace skiff::convert
