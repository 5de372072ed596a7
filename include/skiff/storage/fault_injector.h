// FaultInjector: makes an I/O engine see the failures a real device and kernel produce.
//
// Every engine (io_uring, pread, in-memory) passes each raw read result -- a CQE's res, a pread's
// return value -- through the injector named in IoEngineOptions before acting on it. The injector
// is therefore below the engine's retry logic: an injected -EAGAIN or short read exercises the same
// resubmission path a real one would, and an injected -EIO must come out as a Status naming the
// file and offset. (A wrapper above the engine could only fake final outcomes, not test the
// retries.)
//
// Rules are matched against the sequence number of raw reads (0, 1, 2, ... in the order the engine
// observes results; a resubmitted piece is a new raw read).
//
// Thread safety: all methods may be called from any thread (an internal mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "skiff/mutex.h"

namespace skiff::storage {

enum class FaultKind {
  kEio,          // the read fails with -EIO
  kEagain,       // the read fails with -EAGAIN (transient: the engine must resubmit)
  kShortRead,    // the read returns fewer bytes than asked (the engine must read the rest)
  kCorruptByte,  // the read succeeds but one byte of the destination is flipped
};

struct FaultRule {
  FaultKind kind = FaultKind::kEio;
  uint64_t first_read = 0;  // sequence number of the first raw read affected
  uint64_t count = 1;       // how many consecutive raw reads are affected
};

class FaultInjector {
 public:
  FaultInjector() = default;
  explicit FaultInjector(std::vector<FaultRule> rules) : rules_(std::move(rules)) {}

  void AddRule(const FaultRule& rule);
  // Called by an engine with the raw result `res` (bytes read, or -errno) of reading `length` bytes
  // into `dst`; returns the result the engine must act on, and may modify the bytes at dst.
  // `alignment`: a short read is cut to a multiple of it (O_DIRECT), never to 0.
  int64_t Apply(int64_t res, void* dst, uint64_t length, uint32_t alignment);

  uint64_t reads_seen() const;
  uint64_t faults_injected() const;

 private:
  mutable Mutex mu_;
  std::vector<FaultRule> rules_ SKIFF_GUARDED_BY(mu_);
  uint64_t reads_seen_ SKIFF_GUARDED_BY(mu_) = 0;
  uint64_t faults_injected_ SKIFF_GUARDED_BY(mu_) = 0;
};

}  // namespace skiff::storage
