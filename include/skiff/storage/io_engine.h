// IoEngine: batched, asynchronous reads from files -- the one seam between Skiff and the kernel.
//
// A caller adds files (AddFile -> a small integer file id), optionally registers the memory it
// reads into (RegisterBuffers), then Submit()s ReadRequests and Reap()s ReadCompletions. A request
// may be any size: the engine splits it into pieces of at most IoEngineOptions::max_piece_bytes (1
// MiB) and completes it once, when every piece is done. Short reads and -EAGAIN are resubmitted
// internally; -EINTR while waiting is retried; any other failure completes the request with a
// Status that names the file path and byte offset. At most `queue_depth` pieces are in flight; the
// rest wait in the engine's pending list (bounded by what the caller submitted and has not reaped).
//
// O_DIRECT contract: for a file opened O_DIRECT, offset, length and destination address must be
// multiples of ReadFile::alignment(); a request that is not completes with InvalidArgument.
//
// Implementations (CreateIoEngine): io_uring (production), pread on a thread pool (where io_uring
// is unavailable: seccomp, old kernels, EPERM), in-memory (tests, fully resident data).
//
// Thread safety: an engine is used by one thread at a time (its owner); use one engine per I/O
// thread. Engines are not copyable.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "skiff/status.h"
#include "skiff/storage/fault_injector.h"
#include "skiff/storage/file.h"

namespace skiff::storage {

struct ReadRequest {
  uint32_t file = 0;    // id returned by AddFile
  uint64_t offset = 0;  // byte offset in the file
  uint64_t length = 0;  // bytes to read (> 0)
  void* dst = nullptr;  // destination, `length` bytes
  uint64_t tag = 0;     // returned in the completion
};

struct ReadCompletion {
  uint64_t tag = 0;
  Status status;  // OK: all `length` bytes were read
};

enum class IoEngineKind { kAuto, kIoUring, kPread, kMemory };
const char* IoEngineKindName(IoEngineKind kind);
// "auto", "io_uring" (or "uring"), "pread", "memory".
Result<IoEngineKind> ParseIoEngineKind(const std::string& name);

struct IoEngineOptions {
  IoEngineKind kind = IoEngineKind::kAuto;
  uint32_t queue_depth = 64;              // pieces in flight
  uint64_t max_piece_bytes = 1ull << 20;  // requests larger than this are split
  uint32_t pread_threads = 8;             // pread engine: worker threads
  bool register_files = true;             // io_uring: use registered (fixed) files
  bool use_fixed_buffers = true;          // io_uring: READ_FIXED into registered buffers
  // io_uring kernel-side submission polling is deliberately not offered: it burns a core.
  std::shared_ptr<FaultInjector> faults;  // tests: consulted on every raw read result
  // Tests: when non-zero, io_uring setup behaves as if io_uring_queue_init returned -errno (e.g.
  // EPERM from a seccomp policy). The environment variable SKIFF_DISABLE_IO_URING=1 does the same
  // with ENOSYS, so the fallback can be exercised end to end.
  int inject_setup_errno = 0;
};

class IoEngine {
 public:
  virtual ~IoEngine() = default;
  IoEngine(const IoEngine&) = delete;
  IoEngine& operator=(const IoEngine&) = delete;

  virtual IoEngineKind kind() const = 0;
  // "io_uring (QD 64, fixed files, fixed buffers)" -- for logs and benchmark output.
  virtual std::string Describe() const = 0;

  // Makes `file` readable by requests naming the returned id. The file must outlive the engine (the
  // in-memory engine instead copies its contents). IOError / ResourceExhausted on failure.
  virtual Result<uint32_t> AddFile(const ReadFile& file) = 0;
  // Registers memory regions that later requests read into (io_uring READ_FIXED). Optional:
  // requests into unregistered memory work too. May be called once; a failure to pin the memory
  // (e.g. RLIMIT_MEMLOCK) is not an error: the engine logs it and reads without fixed buffers.
  virtual Status RegisterBuffers(std::span<const std::span<std::byte>> regions) {
    return Status::Ok();
  }

  // Queues `requests`. Returns InvalidArgument (and queues nothing) for an unknown file id or a
  // zero length; alignment errors are reported in the request's completion instead.
  virtual Status Submit(std::span<const ReadRequest> requests) = 0;
  // Waits until at least min(min_completions, outstanding()) requests have completed and appends
  // every completed request (possibly more than asked) to `out`. Returns the number appended.
  virtual size_t Reap(size_t min_completions, std::vector<ReadCompletion>* out) = 0;
  // Requests submitted and not yet returned by Reap.
  virtual size_t outstanding() const = 0;

  // Submits `requests` and waits for all of them. Returns OK, or the first failed request's Status
  // (after waiting for the rest, so no read is left writing into caller memory).
  Status ReadAll(std::span<const ReadRequest> requests);

  // Raw reads handed to the kernel (pieces and resubmissions included), and bytes they returned.
  uint64_t reads_issued() const { return reads_issued_; }
  uint64_t bytes_read() const { return bytes_read_; }

 protected:
  IoEngine() = default;
  uint64_t reads_issued_ = 0;
  uint64_t bytes_read_ = 0;
};

// Creates an engine. kAuto tries io_uring and, when its setup fails (ENOSYS, EPERM, ENOMEM, ...),
// logs one line saying why and returns the pread engine. kIoUring fails with Unavailable instead.
Result<std::unique_ptr<IoEngine>> CreateIoEngine(const IoEngineOptions& options);

// The in-memory engine, for tests that want to add files from bytes: AddMemoryFile returns a file
// id.
class MemoryIoEngine;
std::unique_ptr<MemoryIoEngine> CreateMemoryIoEngine(const IoEngineOptions& options);
class MemoryIoEngine : public IoEngine {
 public:
  // Adds a file whose contents are `bytes` (name used in error messages).
  virtual uint32_t AddMemoryFile(std::string name, std::vector<std::byte> bytes) = 0;
};

}  // namespace skiff::storage
