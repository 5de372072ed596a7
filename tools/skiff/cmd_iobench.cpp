// `skiff iobench raw FILE ...`: measure a file's or device's read performance through Skiff's I/O
// engines (sweeping patterns, block sizes, queue depths and engines).
// `skiff iobench replay DATASET --memory BYTES`: replay the reads one training epoch would issue
// through the partition buffer pool under a memory budget.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "skiff/enum_names.h"
#include "skiff/format/dataset.h"
#include "skiff/io/free_space.h"
#include "skiff/log.h"
#include "skiff/progress.h"
#include "skiff/storage/aligned_buffer.h"
#include "skiff/storage/buffer_pool.h"
#include "skiff/storage/dataset_partition_source.h"
#include "skiff/storage/io_engine.h"
#include "skiff/units.h"
#include "tools/skiff/command.h"

namespace skiff::cli {
namespace {

using Clock = std::chrono::steady_clock;
using storage::AlignedBuffer;
using storage::IoEngineKind;
using storage::ReadFile;
using storage::ReadRequest;

enum class Pattern { kRand, kSeq, kStride };
constexpr EnumName<Pattern> kPatternNames[] = {
    {Pattern::kRand, "rand"}, {Pattern::kSeq, "seq"}, {Pattern::kStride, "stride"}};
// uring: io_uring shaped as fio's default job (no registered files or buffers).
enum class RawEngine { kUring, kUringFixed, kPread, kMmap };
constexpr EnumName<RawEngine> kRawEngineNames[] = {{RawEngine::kUring, "uring"},
                                                   {RawEngine::kUringFixed, "uring-fixed"},
                                                   {RawEngine::kPread, "pread"},
                                                   {RawEngine::kMmap, "mmap"},
                                                   {RawEngine::kUring, "io_uring"}};

struct RawOptions {
  std::string file;
  std::string create_size;
  std::vector<std::string> patterns{"rand"};
  std::vector<std::string> block_sizes{"4KiB"};
  std::vector<uint32_t> queue_depths{64};
  std::vector<std::string> engines{"uring"};
  bool buffered = false;
  double duration_s = 10;
  std::string bytes_limit;
  std::string stride = "";
  uint64_t seed = 1;
  bool json = false;
};

struct ReplayOptions {
  std::string dataset;
  std::string memory;
  int64_t partition_nodes = 0;
  uint32_t fanout = 10;
  uint64_t seed = 1;
  std::string engine = "auto";
  bool buffered = false;
  bool json = false;
};

struct RawResult {
  std::string engine, pattern;
  uint64_t block_bytes = 0;
  uint32_t queue_depth = 0;
  uint64_t ios = 0, bytes = 0;
  double seconds = 0, cpu_seconds = 0;
  double p50_us = 0, p99_us = 0, p999_us = 0;
  std::string describe;
};

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

// Offsets for a pattern over `blocks` blocks of `bs` bytes.
class OffsetGen {
 public:
  OffsetGen(Pattern pattern, uint64_t blocks, uint64_t bs, uint64_t stride, uint64_t seed)
      : pattern_(pattern),
        blocks_(blocks),
        bs_(bs),
        stride_blocks_(std::max<uint64_t>(1, stride / bs)),
        rng_(seed) {}
  uint64_t Next() {
    if (pattern_ == Pattern::kRand) return (rng_() % blocks_) * bs_;
    const uint64_t b = cursor_;
    cursor_ = (cursor_ + (pattern_ == Pattern::kSeq ? 1 : stride_blocks_)) % blocks_;
    return b * bs_;
  }

 private:
  Pattern pattern_;
  uint64_t blocks_, bs_, stride_blocks_, cursor_ = 0;
  std::mt19937_64 rng_;
};

void Percentiles(std::vector<uint32_t>& lat_ns, RawResult* r) {
  if (lat_ns.empty()) return;
  auto at = [&](double q) {
    const size_t k =
        std::min(lat_ns.size() - 1, static_cast<size_t>(q * static_cast<double>(lat_ns.size())));
    std::nth_element(lat_ns.begin(), lat_ns.begin() + static_cast<long>(k), lat_ns.end());
    return lat_ns[k] / 1000.0;
  };
  r->p50_us = at(0.5);
  r->p99_us = at(0.99);
  r->p999_us = at(0.999);
}

constexpr size_t kMaxLatencySamples = 4u << 20;

// One setting of a sweep, checked before anything is read.
struct RawSetting {
  RawEngine engine = RawEngine::kUring;
  Pattern pattern = Pattern::kRand;
  uint64_t bs = 0;
  uint32_t qd = 0;
  uint64_t limit_bytes = 0;   // 0: --duration alone ends the setting
  uint64_t stride_bytes = 0;  // Pattern::kStride
};

// A setting's engine over the file, with one registered buffer of `qd` blocks. The file is
// declared first so that it outlives the engine that reads it.
struct OpenedEngine {
  ReadFile file;
  std::unique_ptr<storage::IoEngine> engine;
  uint32_t fid = 0;
  AlignedBuffer buf;
};

Result<OpenedEngine> OpenEngine(const RawOptions& opt, const RawSetting& setting) {
  const uint64_t bs = setting.bs;
  storage::IoEngineOptions eo;
  eo.queue_depth = setting.qd;
  eo.pread_threads = setting.qd;
  eo.kind = setting.engine == RawEngine::kPread ? IoEngineKind::kPread : IoEngineKind::kIoUring;
  if (setting.engine == RawEngine::kUring) {
    eo.register_files = false;  // the same shape as fio's default io_uring job
    eo.use_fixed_buffers = false;
  }
  eo.max_piece_bytes = std::max<uint64_t>(bs, 1 << 20);  // one request = one I/O of bs bytes
  OpenedEngine o;
  SKIFF_ASSIGN_OR_RETURN(o.file, ReadFile::OpenForRead(opt.file, !opt.buffered));
  if (o.file.size_bytes() < bs) {
    return Status::InvalidArgument(opt.file + " is smaller than one block");
  }
  if (bs % o.file.alignment() != 0) {
    return Status::InvalidArgument("block size " + std::to_string(bs) +
                                   " is not a multiple of the O_DIRECT alignment " +
                                   std::to_string(o.file.alignment()) + " of " + opt.file);
  }
  SKIFF_ASSIGN_OR_RETURN(o.engine, storage::CreateIoEngine(eo));
  SKIFF_ASSIGN_OR_RETURN(o.fid, o.engine->AddFile(o.file));
  SKIFF_ASSIGN_OR_RETURN(o.buf, AlignedBuffer::Allocate(static_cast<uint64_t>(setting.qd) * bs));
  std::span<std::byte> region(o.buf.data(), o.buf.size());
  SKIFF_RETURN_IF_ERROR(
      o.engine->RegisterBuffers(std::span<const std::span<std::byte>>(&region, 1)));
  return o;
}

// A setting's result before it runs (its names, sizes and `describe`), and its progress label.
RawResult NewResult(const RawSetting& setting, std::string describe) {
  RawResult r;
  r.engine = NameOf(kRawEngineNames, setting.engine);
  r.pattern = NameOf(kPatternNames, setting.pattern);
  r.block_bytes = setting.bs;
  r.queue_depth = setting.qd;
  r.describe = std::move(describe);
  return r;
}
std::string ProgressLabel(const RawResult& r) {
  return "iobench " + r.engine + " " + r.pattern + " bs=" + FormatBytes(r.block_bytes) +
         " qd=" + std::to_string(r.queue_depth);
}

Result<RawResult> RunEngine(const RawOptions& opt, const RawSetting& setting) {
  const uint64_t bs = setting.bs;
  const uint32_t qd = setting.qd;
  const uint64_t limit_bytes = setting.limit_bytes;
  SKIFF_ASSIGN_OR_RETURN(OpenedEngine opened, OpenEngine(opt, setting));
  const ReadFile& file = opened.file;
  storage::IoEngine* engine = opened.engine.get();
  const uint32_t fid = opened.fid;
  AlignedBuffer& buf = opened.buf;

  OffsetGen gen(setting.pattern, file.size_bytes() / bs, bs, setting.stride_bytes, opt.seed);
  std::vector<Clock::time_point> started(qd);
  std::vector<uint32_t> lat_ns;
  lat_ns.reserve(1 << 20);
  std::vector<ReadRequest> batch;
  std::vector<storage::ReadCompletion> done;
  RawResult r = NewResult(setting, engine->Describe());
  Progress progress(ProgressLabel(r), 0, "B");
  const double cpu0 = CpuSeconds();
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::duration<double>(opt.duration_s);
  uint64_t issued = 0;
  auto add = [&](uint32_t slot, Clock::time_point now) {
    batch.push_back(
        ReadRequest{fid, gen.Next(), bs, buf.data() + static_cast<uint64_t>(slot) * bs, slot});
    started[slot] = now;
    issued += bs;
  };
  auto now = Clock::now();
  for (uint32_t s = 0; s < qd; ++s) add(s, now);
  SKIFF_RETURN_IF_ERROR(engine->Submit(batch));
  bool stopping = false;
  while (engine->outstanding() > 0) {
    done.clear();
    batch.clear();
    engine->Reap(1, &done);
    now = Clock::now();
    if (!stopping && (now >= deadline || (limit_bytes > 0 && issued >= limit_bytes)))
      stopping = true;
    for (const auto& c : done) {
      if (!c.status.ok()) return c.status;
      const auto slot = static_cast<uint32_t>(c.tag);
      if (lat_ns.size() < kMaxLatencySamples) {
        lat_ns.push_back(static_cast<uint32_t>(std::min<int64_t>(
            UINT32_MAX,
            std::chrono::duration_cast<std::chrono::nanoseconds>(now - started[slot]).count())));
      }
      ++r.ios;
      r.bytes += bs;
      if (!stopping) add(slot, now);
    }
    if (!batch.empty()) SKIFF_RETURN_IF_ERROR(engine->Submit(batch));
    progress.Add(done.size() * bs);
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.cpu_seconds = CpuSeconds() - cpu0;
  progress.Finish();
  Percentiles(lat_ns, &r);
  return r;
}

// mmap: `qd` threads copy blocks out of a shared read-only mapping (always through the page cache).
Result<RawResult> RunMmap(const RawOptions& opt, const RawSetting& setting) {
  const uint64_t bs = setting.bs;
  const uint32_t qd = setting.qd;
  const uint64_t limit_bytes = setting.limit_bytes;
  SKIFF_ASSIGN_OR_RETURN(auto file, ReadFile::OpenForRead(opt.file, false));
  const uint64_t size = file.size_bytes() / bs * bs;
  if (size == 0) return Status::InvalidArgument(opt.file + " is smaller than one block");
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, file.fd(), 0);
  if (map == MAP_FAILED) return Status::FromErrno(errno, "mmap " + opt.file);
  ::madvise(map, size, setting.pattern == Pattern::kRand ? MADV_RANDOM : MADV_SEQUENTIAL);
  RawResult r = NewResult(setting, "mmap (" + std::to_string(qd) + " threads, page cache)");
  std::atomic<uint64_t> issued{0}, ios{0};
  std::vector<std::vector<uint32_t>> lats(qd);
  Progress progress(ProgressLabel(r), 0, "B");
  const double cpu0 = CpuSeconds();
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::duration<double>(opt.duration_s);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < qd; ++t) {
    threads.emplace_back([&, t] {
      OffsetGen gen(setting.pattern, size / bs, bs, setting.stride_bytes, opt.seed + t);
      std::vector<char> dst(bs);
      for (;;) {
        const auto start = Clock::now();
        if (start >= deadline || (limit_bytes > 0 && issued.fetch_add(bs) >= limit_bytes)) return;
        std::memcpy(dst.data(), static_cast<const char*>(map) + gen.Next(), bs);
        const auto end = Clock::now();
        if (lats[t].size() < kMaxLatencySamples / qd) {
          lats[t].push_back(static_cast<uint32_t>(
              std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count()));
        }
        ++ios;
        progress.Add(bs);
      }
    });
  }
  for (auto& th : threads) th.join();
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.cpu_seconds = CpuSeconds() - cpu0;
  progress.Finish();
  ::munmap(map, size);
  r.ios = ios.load();
  r.bytes = r.ios * bs;
  std::vector<uint32_t> all;
  for (auto& l : lats) all.insert(all.end(), l.begin(), l.end());
  Percentiles(all, &r);
  return r;
}

// A byte size option's value; `what` names the option in the error.
Result<uint64_t> ParseSizeOption(const char* what, const std::string& text) {
  uint64_t bytes = 0;
  if (!ParseBytes(text, &bytes) || bytes == 0) {
    return Status::InvalidArgument(std::string(what) + ": expected a size such as 4KiB (got '" +
                                   text + "')");
  }
  return bytes;
}

// Every setting of the sweep (engines x patterns x block sizes x queue depths), checked first.
Result<std::vector<RawSetting>> PlanSweep(const RawOptions& opt) {
  if (!(opt.duration_s > 0 && std::isfinite(opt.duration_s))) {
    return Status::InvalidArgument("--duration: expected a positive number of seconds (got " +
                                   std::to_string(opt.duration_s) + ")");
  }
  RawSetting base;
  if (!opt.bytes_limit.empty()) {
    SKIFF_ASSIGN_OR_RETURN(base.limit_bytes, ParseSizeOption("--bytes", opt.bytes_limit));
  }
  if (!opt.stride.empty()) {
    SKIFF_ASSIGN_OR_RETURN(base.stride_bytes, ParseSizeOption("--stride", opt.stride));
  }
  std::vector<RawSetting> settings;
  for (const std::string& engine : opt.engines) {
    SKIFF_ASSIGN_OR_RETURN(base.engine, ParseName(kRawEngineNames, "engine", engine, 4));
    for (const std::string& pattern : opt.patterns) {
      SKIFF_ASSIGN_OR_RETURN(base.pattern, ParseName(kPatternNames, "pattern", pattern));
      for (const std::string& bs : opt.block_sizes) {
        SKIFF_ASSIGN_OR_RETURN(base.bs, ParseSizeOption("--bs", bs));
        for (const uint32_t qd : opt.queue_depths) {
          if (qd == 0 || qd > 4096) {
            return Status::InvalidArgument("--qd: expected 1..4096 (got " + std::to_string(qd) +
                                           ")");
          }
          RawSetting setting = base;
          setting.qd = qd;
          if (opt.stride.empty()) setting.stride_bytes = 4 * setting.bs;
          settings.push_back(setting);
        }
      }
    }
  }
  return settings;
}

// --create-file makes a new file: an existing one (a file of the user's, or a device) is refused,
// and so is a size its file system cannot hold.
Status CheckNewFile(const std::string& file, uint64_t size) {
  std::error_code ec;
  if (std::filesystem::exists(file, ec)) {
    return Status::InvalidArgument("--create-file: " + file +
                                   " exists; it creates a new file (remove it first, or measure "
                                   "it as it is without --create-file)");
  }
  const std::string dir = std::filesystem::absolute(file, ec).parent_path().string();
  return io::CheckFreeSpace(dir, size, "--create-file " + file);
}

Status MeasureRaw(const RawOptions& opt, std::vector<RawResult>* results) {
  SKIFF_ASSIGN_OR_RETURN(const std::vector<RawSetting> settings, PlanSweep(opt));
  if (!opt.create_size.empty()) {
    SKIFF_ASSIGN_OR_RETURN(const uint64_t size, ParseSizeOption("--create-file", opt.create_size));
    SKIFF_RETURN_IF_ERROR(CheckNewFile(opt.file, size));
    SKIFF_RETURN_IF_ERROR(storage::CreateRandomFile(opt.file, size, opt.seed));
  }
  for (const RawSetting& setting : settings) {
    SKIFF_ASSIGN_OR_RETURN(RawResult r, setting.engine == RawEngine::kMmap
                                            ? RunMmap(opt, setting)
                                            : RunEngine(opt, setting));
    results->push_back(std::move(r));
  }
  return Status::Ok();
}

int RunRaw(const RawOptions& opt) {
  std::vector<RawResult> results;
  if (Status st = MeasureRaw(opt, &results); !st.ok()) return ReportStatus("iobench", st);
  if (opt.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : results) {
      out.push_back({{"engine", r.engine},
                     {"describe", r.describe},
                     {"pattern", r.pattern},
                     {"block_bytes", r.block_bytes},
                     {"queue_depth", r.queue_depth},
                     {"direct", !opt.buffered},
                     {"ios", r.ios},
                     {"bytes", r.bytes},
                     {"seconds", r.seconds},
                     {"mb_per_s", r.bytes / r.seconds / 1e6},
                     {"iops", r.ios / r.seconds},
                     {"latency_us_p50", r.p50_us},
                     {"latency_us_p99", r.p99_us},
                     {"latency_us_p999", r.p999_us},
                     {"cpu_us_per_io", r.ios ? 1e6 * r.cpu_seconds / r.ios : 0.0}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("file %s (%s)\n", opt.file.c_str(), opt.buffered ? "buffered" : "O_DIRECT");
  std::printf("%-12s %-7s %9s %5s %10s %10s %9s %9s %9s %8s\n", "engine", "pattern", "bs", "qd",
              "MB/s", "IOPS", "p50 us", "p99 us", "p999 us", "cpu us/io");
  for (const auto& r : results) {
    std::printf("%-12s %-7s %9s %5u %10.1f %10.0f %9.1f %9.1f %9.1f %8.2f\n", r.engine.c_str(),
                r.pattern.c_str(), FormatBytes(r.block_bytes).c_str(), r.queue_depth,
                r.bytes / r.seconds / 1e6, r.ios / r.seconds, r.p50_us, r.p99_us, r.p999_us,
                r.ios ? 1e6 * r.cpu_seconds / r.ios : 0.0);
  }
  return 0;
}

// What one replayed epoch did, besides the pool's own counters.
struct ReplayCounts {
  double seconds = 0;
  uint64_t fine_ns = 0;  // time in ReadRanges
  uint64_t sampled = 0;  // neighbours sampled
  uint64_t remote = 0;   // distinct rows outside the buffer, read fine-grained
};

// The most neighbours a replay draws per node (with replacement): far above any training fanout.
constexpr uint32_t kMaxReplayFanout = 10000;

// Visits the partitions in `plan` order; for each, samples up to `fanout` neighbours of every
// node uniformly and reads the rows of those outside the buffer, as exact sampling would.
Result<ReplayCounts> ReplayEpoch(const ReplayOptions& opt,
                                 const storage::DatasetPartitionSource& src,
                                 storage::BufferPool& pool, const std::vector<uint32_t>& plan,
                                 std::mt19937_64& rng) {
  const uint32_t k = src.num_partitions();
  const uint64_t row_bytes = src.manifest().feature_row_bytes();
  std::vector<std::byte> rows;
  std::vector<int64_t> nbrs;
  std::vector<storage::FineRead> reads;
  std::unordered_set<int64_t> wanted;
  ReplayCounts counts;
  Progress progress("replay", k, "partitions");
  const auto t0 = Clock::now();
  for (uint32_t p : plan) {
    SKIFF_ASSIGN_OR_RETURN(storage::PartitionPin pin, pool.Pin(p));
    std::vector<bool> resident(k);
    for (uint32_t q = 0; q < k; ++q) resident[q] = (q == p) || pool.IsResident(q);
    wanted.clear();
    for (int64_t v = src.first_node(p); v < src.first_node(p + 1); ++v) {
      src.NeighborsFromPin(pin, v, &nbrs);
      for (uint32_t s = 0; s < opt.fanout && !nbrs.empty(); ++s) {
        const int64_t u = nbrs[rng() % nbrs.size()];
        ++counts.sampled;
        if (!resident[src.partition_of(u)]) wanted.insert(u);
      }
    }
    counts.remote += wanted.size();
    rows.resize(wanted.size() * row_bytes);
    reads.clear();
    size_t i = 0;
    for (int64_t u : wanted)
      reads.push_back(src.FeatureRowRead(u, rows.data() + (i++) * row_bytes));
    const auto f0 = Clock::now();
    SKIFF_RETURN_IF_ERROR(pool.ReadRanges(reads));
    counts.fine_ns += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - f0).count());
    progress.Add(1);
  }
  counts.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  progress.Finish();
  return counts;
}

void PrintReplay(const ReplayOptions& opt, uint64_t budget, const storage::BufferPool& pool,
                 uint32_t k, uint64_t needed, const ReplayCounts& c) {
  const auto st = pool.stats();
  const double wait_s = 1e-9 * static_cast<double>(st.stall_ns + c.fine_ns);
  const double amplification = needed ? static_cast<double>(st.bytes_read_total) / needed : 0;
  if (opt.json) {
    nlohmann::json j = {{"dataset", opt.dataset},
                        {"budget_bytes", budget},
                        {"partitions", k},
                        {"slots", pool.num_slots()},
                        {"slot_bytes", pool.slot_bytes()},
                        {"engine", pool.engine().Describe()},
                        {"bytes_read", st.bytes_read_total},
                        {"bytes_needed", needed},
                        {"read_amplification", amplification},
                        {"reads_issued", st.reads_issued},
                        {"partition_loads", st.partition_loads},
                        {"hits", st.hits},
                        {"misses", st.misses},
                        {"fine_reads", st.fine_reads},
                        {"fine_bytes_read", st.fine_bytes_read},
                        {"sampled_neighbors", c.sampled},
                        {"remote_rows", c.remote},
                        {"seconds", c.seconds},
                        {"mb_per_s", st.bytes_read_total / c.seconds / 1e6},
                        {"io_wait_seconds", wait_s}};
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("dataset            %s\n", opt.dataset.c_str());
  std::printf("budget             %s: %u slots of %s for %u partitions (%s)\n",
              FormatBytes(budget).c_str(), pool.num_slots(), FormatBytes(pool.slot_bytes()).c_str(),
              k, pool.engine().Describe().c_str());
  std::printf(
      "bytes read         %s (partition loads %llu, fine reads %llu = %s)\n",
      FormatBytes(st.bytes_read_total).c_str(), static_cast<unsigned long long>(st.partition_loads),
      static_cast<unsigned long long>(st.fine_reads), FormatBytes(st.fine_bytes_read).c_str());
  std::printf("read amplification %.3f (bytes read / features + neighbours %s)\n", amplification,
              FormatBytes(needed).c_str());
  std::printf("sampled            %llu neighbours (fanout %u), %llu rows outside the buffer\n",
              static_cast<unsigned long long>(c.sampled), opt.fanout,
              static_cast<unsigned long long>(c.remote));
  std::printf("epoch              %s, %.1f MB/s, waiting on I/O %s (%.0f%%)\n",
              FormatSeconds(c.seconds).c_str(), st.bytes_read_total / c.seconds / 1e6,
              FormatSeconds(wait_s).c_str(), 100 * wait_s / c.seconds);
  std::printf("pins               %llu hits, %llu misses; %llu raw reads\n",
              static_cast<unsigned long long>(st.hits), static_cast<unsigned long long>(st.misses),
              static_cast<unsigned long long>(st.reads_issued));
}

Status Replay(const ReplayOptions& opt) {
  if (opt.fanout > kMaxReplayFanout) {
    return Status::InvalidArgument("--fanout: expected at most " +
                                   std::to_string(kMaxReplayFanout) + " (got " +
                                   std::to_string(opt.fanout) + ")");
  }
  uint64_t budget = 0;
  if (!ParseBytes(opt.memory, &budget) || budget == 0) {
    return Status::InvalidArgument("--memory: bad size '" + opt.memory + "'");
  }
  SKIFF_ASSIGN_OR_RETURN(const storage::IoEngineKind kind, storage::ParseIoEngineKind(opt.engine));
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<format::Dataset> ds, format::Dataset::Open(opt.dataset));
  storage::DatasetPartitionSourceOptions so;
  so.direct = !opt.buffered;
  so.nodes_per_partition = opt.partition_nodes;
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<storage::DatasetPartitionSource> src,
                         storage::DatasetPartitionSource::Open(ds.get(), so));
  storage::BufferPoolOptions po;
  po.budget_bytes = budget;
  po.engine.kind = kind;
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<storage::BufferPool> pool,
                         storage::BufferPool::Create(src.get(), po));
  const uint32_t k = src->num_partitions();
  std::vector<uint32_t> plan(k);
  std::iota(plan.begin(), plan.end(), 0u);
  std::mt19937_64 rng(opt.seed);
  std::shuffle(plan.begin(), plan.end(), rng);
  pool->SetPlan(plan);
  SKIFF_ASSIGN_OR_RETURN(const ReplayCounts counts, ReplayEpoch(opt, *src, *pool, plan, rng));
  uint64_t needed = 0;
  for (const char* f : {format::kFeaturesFile, format::kNeighborsFile}) {
    needed += src->manifest().files.at(f).data_bytes;
  }
  PrintReplay(opt, budget, *pool, k, needed, counts);
  return Status::Ok();
}

int RunReplay(const ReplayOptions& opt) { return ReportStatus("iobench", Replay(opt)); }

RunFn Setup(CLI::App& app) {
  app.description("Measure read performance: raw (a file or device) or replay (a dataset's epoch)");
  app.require_subcommand(1);
  auto raw = std::make_shared<RawOptions>();
  CLI::App* r = app.add_subcommand("raw", "Read a file or device with Skiff's I/O engines");
  r->add_option("file", raw->file, "File or block device to read (created with --create-file)")
      ->required();
  r->add_option("--create-file", raw->create_size,
                "Create FILE with this many random bytes first (e.g. 4GiB)");
  r->add_option("--pattern", raw->patterns, "rand, seq, stride (a list sweeps)")->delimiter(',');
  r->add_option("--bs", raw->block_sizes, "Block sizes, e.g. 4KiB,1MiB")->delimiter(',');
  r->add_option("--qd", raw->queue_depths, "Queue depths (pread/mmap: threads), e.g. 1,16,64")
      ->delimiter(',');
  r->add_option("--engine", raw->engines, "uring, uring-fixed (fixed files+buffers), pread, mmap")
      ->delimiter(',');
  r->add_flag("--buffered", raw->buffered, "Read through the page cache (default: O_DIRECT)");
  r->add_option("--duration", raw->duration_s, "Seconds per setting (default 10)");
  r->add_option("--bytes", raw->bytes_limit, "Stop a setting after this many bytes");
  r->add_option("--stride", raw->stride, "Stride for --pattern stride (default 4 blocks)");
  r->add_option("--seed", raw->seed, "Random seed")->check(NonNegative());
  r->add_flag("--json", raw->json, "Print results as JSON");
  auto rep = std::make_shared<ReplayOptions>();
  CLI::App* p =
      app.add_subcommand("replay", "Replay one epoch's reads of a dataset under a memory budget");
  p->add_option("dataset", rep->dataset, "Dataset directory")->required();
  p->add_option("--memory", rep->memory, "Buffer pool budget, e.g. 4GiB")->required();
  p->add_option("--partition-nodes", rep->partition_nodes,
                "Unpartitioned datasets: nodes per partition")
      ->check(NonNegative());
  p->add_option("--fanout", rep->fanout, "Neighbours sampled per node (default 10)")
      ->check(NonNegative());
  p->add_option("--seed", rep->seed, "Seed of the visiting order and sampling")
      ->check(NonNegative());
  p->add_option("--engine", rep->engine, "auto, io_uring, pread or memory");
  p->add_flag("--buffered", rep->buffered, "Read through the page cache (default: O_DIRECT)");
  p->add_flag("--json", rep->json, "Print results as JSON");
  return [raw, rep, r, p] { return r->parsed() ? RunRaw(*raw) : RunReplay(*rep); };
}

}  // namespace
SKIFF_REGISTER_COMMAND(iobench, 80, Setup);
}  // namespace skiff::cli
