#include "skiff/storage/fault_injector.h"

#include <cerrno>

#include "skiff/mutex.h"

namespace skiff::storage {

void FaultInjector::AddRule(const FaultRule& rule) {
  MutexLock lock(&mu_);
  rules_.push_back(rule);
}

int64_t FaultInjector::Apply(int64_t res, void* dst, uint64_t length, uint32_t alignment) {
  MutexLock lock(&mu_);
  const uint64_t seq = reads_seen_++;
  for (const FaultRule& r : rules_) {
    if (seq < r.first_read || seq >= r.first_read + r.count) continue;
    switch (r.kind) {
      case FaultKind::kEio:
        ++faults_injected_;
        return -EIO;
      case FaultKind::kEagain:
        ++faults_injected_;
        return -EAGAIN;
      case FaultKind::kShortRead: {
        if (res <= 0) return res;
        const uint64_t a = std::max<uint32_t>(alignment, 1);
        const uint64_t cut = static_cast<uint64_t>(res) / 2 / a * a;
        if (cut == 0) return res;  // cannot be shortened without returning 0 (= end of file)
        ++faults_injected_;
        return static_cast<int64_t>(cut);
      }
      case FaultKind::kCorruptByte:
        if (res <= 0 || length == 0) return res;
        ++faults_injected_;
        static_cast<unsigned char*>(dst)[static_cast<uint64_t>(res) / 2] ^= 0x5a;
        return res;
    }
  }
  return res;
}

uint64_t FaultInjector::reads_seen() const {
  MutexLock lock(&mu_);
  return reads_seen_;
}

uint64_t FaultInjector::faults_injected() const {
  MutexLock lock(&mu_);
  return faults_injected_;
}

}  // namespace skiff::storage
