#include "skiff/storage/io_engine.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "skiff/enum_names.h"
#include "skiff/log.h"
#include "storage/engines.h"

namespace skiff::storage {

namespace {
constexpr EnumName<IoEngineKind> kIoEngineKinds[] = {{IoEngineKind::kAuto, "auto"},
                                                     {IoEngineKind::kIoUring, "io_uring"},
                                                     {IoEngineKind::kPread, "pread"},
                                                     {IoEngineKind::kMemory, "memory"},
                                                     {IoEngineKind::kIoUring, "uring"}};
}  // namespace

const char* IoEngineKindName(IoEngineKind kind) { return NameOf(kIoEngineKinds, kind); }

Result<IoEngineKind> ParseIoEngineKind(const std::string& name) {
  return ParseName(kIoEngineKinds, "I/O engine", name, /*listed=*/4);
}

Status IoEngine::ReadAll(std::span<const ReadRequest> requests) {
  SKIFF_CHECK_MSG(outstanding() == 0, "ReadAll needs an idle engine");
  SKIFF_RETURN_IF_ERROR(Submit(requests));
  std::vector<ReadCompletion> done;
  done.reserve(requests.size());
  while (done.size() < requests.size()) Reap(requests.size() - done.size(), &done);
  for (auto& c : done) {
    if (!c.status.ok()) return c.status;
  }
  return Status::Ok();
}

namespace {

// The in-memory engine: files are byte vectors; a read is a memcpy, completed inside Submit.
class MemoryEngineImpl final : public MemoryIoEngine {
 public:
  explicit MemoryEngineImpl(const IoEngineOptions& options)
      : options_(options), tracker_(options.max_piece_bytes) {}

  IoEngineKind kind() const override { return IoEngineKind::kMemory; }
  std::string Describe() const override { return "memory"; }

  Result<uint32_t> AddFile(const ReadFile& file) override {
    std::vector<std::byte> bytes(file.size_bytes());
    uint64_t done = 0;
    while (done < bytes.size()) {
      // Buffered descriptor may be O_DIRECT: read through a fresh buffered open instead.
      const ssize_t r = ::pread(buffered_fd(file), bytes.data() + done, bytes.size() - done,
                                static_cast<off_t>(done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        return Status::FromErrno(r < 0 ? errno : EIO, "reading " + file.path() + " into memory");
      done += static_cast<uint64_t>(r);
    }
    return AddMemoryFile(file.path(), std::move(bytes));
  }

  uint32_t AddMemoryFile(std::string name, std::vector<std::byte> bytes) override {
    contents_.push_back(std::move(bytes));
    return tracker_.AddFile(internal::FileEntry{-1, std::move(name), 1});
  }

  Status Submit(std::span<const ReadRequest> requests) override {
    SKIFF_RETURN_IF_ERROR(tracker_.Submit(requests));
    auto& pending = tracker_.pending();
    while (!pending.empty()) {
      internal::Piece p = pending.front();
      pending.pop_front();
      const auto& bytes = contents_[p.file];
      int64_t res = 0;
      if (p.offset < bytes.size()) {
        res = static_cast<int64_t>(std::min<uint64_t>(p.length, bytes.size() - p.offset));
        std::memcpy(p.dst, bytes.data() + p.offset, static_cast<size_t>(res));
      }
      ++reads_issued_;
      if (options_.faults) res = options_.faults->Apply(res, p.dst, p.length, 1);
      if (res > 0) bytes_read_ += static_cast<uint64_t>(res);
      Status status;
      if (internal::ConsumeResult(tracker_, &p, res, &status)) {
        tracker_.PieceDone(p.parent, status);
      } else {
        pending.push_front(p);
      }
    }
    return Status::Ok();
  }

  size_t Reap(size_t, std::vector<ReadCompletion>* out) override {
    return tracker_.TakeCompleted(out);
  }
  size_t outstanding() const override { return tracker_.outstanding(); }

 private:
  int buffered_fd(const ReadFile& file) {
    // Reading a whole file with O_DIRECT needs aligned buffers; a plain descriptor avoids that.
    if (!file.direct()) return file.fd();
    if (scratch_fd_ >= 0) ::close(scratch_fd_);
    scratch_fd_ = ::open(file.path().c_str(), O_RDONLY | O_CLOEXEC);
    return scratch_fd_;
  }

  const IoEngineOptions options_;
  internal::RequestTracker tracker_;
  std::vector<std::vector<std::byte>> contents_;
  int scratch_fd_ = -1;

 public:
  ~MemoryEngineImpl() override {
    if (scratch_fd_ >= 0) ::close(scratch_fd_);
  }
};

std::atomic<bool> g_fallback_logged{false};

}  // namespace

std::unique_ptr<MemoryIoEngine> CreateMemoryIoEngine(const IoEngineOptions& options) {
  return std::make_unique<MemoryEngineImpl>(options);
}

Result<std::unique_ptr<IoEngine>> CreateIoEngine(const IoEngineOptions& options) {
  switch (options.kind) {
    case IoEngineKind::kMemory:
      return std::unique_ptr<IoEngine>(CreateMemoryIoEngine(options));
    case IoEngineKind::kPread:
      return internal::CreatePreadEngine(options);
    case IoEngineKind::kIoUring:
    case IoEngineKind::kAuto:
      break;
  }
  IoEngineOptions uring = options;
  const char* disable = std::getenv("SKIFF_DISABLE_IO_URING");
  if (uring.inject_setup_errno == 0 && disable != nullptr && std::strcmp(disable, "0") != 0 &&
      disable[0] != '\0') {
    uring.inject_setup_errno = ENOSYS;
  }
  auto engine = internal::CreateIoUringEngine(uring);
  if (engine.ok()) return engine;
  if (options.kind == IoEngineKind::kIoUring) {
    return engine.status().WithContext("io_uring engine requested but unavailable");
  }
  if (!g_fallback_logged.exchange(true)) {
    LogInfo("io_uring is unavailable here (" + engine.status().message() +
            "); using the pread engine with " + std::to_string(options.pread_threads) + " threads");
  }
  return internal::CreatePreadEngine(options);
}

}  // namespace skiff::storage
