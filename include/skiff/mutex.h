// Mutex, MutexLock and CondVar: a std::mutex and std::condition_variable that Clang's thread-safety
// analysis understands.
//
// Members a mutex protects are declared SKIFF_GUARDED_BY(mu_), and functions that expect it held
// SKIFF_REQUIRES(mu_); built with Clang, -Wthread-safety (on in every Clang build,
// an error in CI's) then rejects any access to them without the lock. libstdc++'s std::mutex
// and std::lock_guard carry no annotations, which is why these thin wrappers exist (as in LevelDB's
// port::Mutex). With other compilers the annotations expand to nothing.
//
// CondVar waits with a Mutex the caller holds; wait in a loop over the condition
// (`while (!ready_) cv_.Wait(&mu_);`), so the analysis sees each guarded read under the lock.
//
// Thread safety: Mutex and CondVar are what they are for; MutexLock is owned by one thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define SKIFF_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SKIFF_THREAD_ANNOTATION(x)
#endif

#define SKIFF_CAPABILITY(x) SKIFF_THREAD_ANNOTATION(capability(x))
#define SKIFF_SCOPED_CAPABILITY SKIFF_THREAD_ANNOTATION(scoped_lockable)
#define SKIFF_GUARDED_BY(x) SKIFF_THREAD_ANNOTATION(guarded_by(x))
#define SKIFF_PT_GUARDED_BY(x) SKIFF_THREAD_ANNOTATION(pt_guarded_by(x))
#define SKIFF_REQUIRES(...) SKIFF_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define SKIFF_EXCLUDES(...) SKIFF_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define SKIFF_ACQUIRE(...) SKIFF_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define SKIFF_RELEASE(...) SKIFF_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define SKIFF_NO_THREAD_SAFETY_ANALYSIS SKIFF_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace skiff {

class SKIFF_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() SKIFF_ACQUIRE() { mu_.lock(); }
  void Unlock() SKIFF_RELEASE() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` from construction to destruction; Unlock/Lock let a scope drop it for a while.
class SKIFF_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) SKIFF_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() SKIFF_RELEASE() {
    if (held_) mu_->Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() SKIFF_RELEASE() {
    held_ = false;
    mu_->Unlock();
  }
  void Lock() SKIFF_ACQUIRE() {
    mu_->Lock();
    held_ = true;
  }

 private:
  Mutex* const mu_;
  bool held_ = true;
};

class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Releases `mu` (held by the caller) while waiting for a signal or a spurious wake-up, then
  // holds it again. Every waiter of one CondVar uses the same mutex.
  void Wait(Mutex* mu) SKIFF_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // The same, for at most `timeout`; false when it timed out.
  template <class Rep, class Period>
  bool WaitFor(Mutex* mu, std::chrono::duration<Rep, Period> timeout) SKIFF_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool signalled = cv_.wait_for(lock, timeout) == std::cv_status::no_timeout;
    lock.release();
    return signalled;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace skiff
