#include "skiff/interrupt.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "skiff/mutex.h"

namespace skiff {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

struct Registry {
  Mutex hold_mu;  // held by an InterruptCleanupHold, and by the cleanup from its start to the end
  Mutex mu;
  std::map<uint64_t, std::string> paths SKIFF_GUARDED_BY(mu);
  uint64_t next_id SKIFF_GUARDED_BY(mu) = 1;
};

// Never destroyed: the watcher may use it while the process exits.
Registry& TheRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");
int g_pipe[2] = {-1, -1};

void OnSignal(int sig) {
  const int saved_errno = errno;
  g_interrupted.store(true);
  const unsigned char byte = static_cast<unsigned char>(sig);
  (void)!::write(g_pipe[1], &byte, 1);
  errno = saved_errno;
}

std::vector<std::string> RegisteredPaths() {
  Registry& r = TheRegistry();
  MutexLock lock(&r.mu);
  std::vector<std::string> paths;
  for (const auto& [id, path] : r.paths) paths.push_back(path);
  return paths;
}

// Other threads may still be creating files in `path`: a few tries.
void RemovePath(const std::string& path) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (!ec) return;
  }
  std::fprintf(stderr, "skiff: could not remove %s: remove it yourself\n", path.c_str());
}

[[noreturn]] void CleanUpAndEnd(int sig) SKIFF_NO_THREAD_SAFETY_ANALYSIS {
  TheRegistry().hold_mu.Lock();  // after a publication in progress; never released
  const std::vector<std::string> paths = RegisteredPaths();
  if (!paths.empty()) {
    std::fprintf(stderr, "skiff: interrupted (%s): removing what this run was writing\n",
                 ::strsignal(sig));
  }
  for (const std::string& path : paths) RemovePath(path);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(sig, &dfl, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(sig);  // to this thread, which does not block it: the default action ends the process
  ::_exit(128 + sig);
}

void WatchSignals() {
  unsigned char sig = 0;
  for (;;) {
    const ssize_t n = ::read(g_pipe[0], &sig, 1);
    if (n == 1) CleanUpAndEnd(sig);
    if (n < 0 && errno == EINTR) continue;
    return;
  }
}

void Install() {
  if (::pipe2(g_pipe, O_CLOEXEC) != 0) return;  // signals then act as they did without this
  sigset_t set;
  sigemptyset(&set);
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (const int sig : kSignals) {
    struct sigaction old {};
    ::sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_IGN) continue;  // nohup, or a background job of a script
    ::sigaction(sig, &sa, nullptr);
    sigaddset(&set, sig);
  }
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);  // here, and in every thread started from now on
  std::thread([set] {
    ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    WatchSignals();
  }).detach();
}

}  // namespace

void InstallInterruptCleanup() {
  static std::once_flag once;
  std::call_once(once, Install);
}

bool Interrupted() { return g_interrupted.load(); }

void WaitIfInterrupted() {
  if (!Interrupted()) return;
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

RemoveOnInterrupt::RemoveOnInterrupt(const std::string& path) {
  Registry& r = TheRegistry();
  MutexLock lock(&r.mu);
  id_ = r.next_id++;
  r.paths[id_] = path;
}

RemoveOnInterrupt::RemoveOnInterrupt(RemoveOnInterrupt&& other) noexcept
    : id_(std::exchange(other.id_, 0)) {}

RemoveOnInterrupt& RemoveOnInterrupt::operator=(RemoveOnInterrupt&& other) noexcept {
  if (this != &other) {
    Release();
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

void RemoveOnInterrupt::Release() {
  if (id_ == 0) return;
  Registry& r = TheRegistry();
  MutexLock lock(&r.mu);
  r.paths.erase(id_);
  id_ = 0;
}

InterruptCleanupHold::InterruptCleanupHold() SKIFF_NO_THREAD_SAFETY_ANALYSIS {
  TheRegistry().hold_mu.Lock();
}

InterruptCleanupHold::~InterruptCleanupHold() SKIFF_NO_THREAD_SAFETY_ANALYSIS {
  TheRegistry().hold_mu.Unlock();
}

}  // namespace skiff
