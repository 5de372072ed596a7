// skiff/interrupt.h: an interrupted process removes what it registered, waits for a hold, and ends
// by the signal. Each case runs in a child process, which the signal ends.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "skiff/interrupt.h"
#include "tests/unit/test_util.h"

using namespace skiff;

namespace {

constexpr int kNotEnded = 3;  // the child's exit code when the signal did not end it

// Runs `body` in a child process with the cleanup installed (SIGINT restored to its default
// first: a test run in the background of a script inherits it ignored); returns the wait status.
int InChild(const std::function<int()>& body) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGINT, SIG_DFL);
    InstallInterruptCleanup();
    ::_exit(body());
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  return status;
}

// Waits (up to 20 s) for the cleanup to end the process; returns kNotEnded if it does not.
int AwaitEnd() {
  for (int i = 0; i < 200; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return kNotEnded;
}

void MakeTree(const std::string& dir) {
  std::filesystem::create_directories(dir + "/sub");
  std::ofstream(dir + "/sub/data.bin") << "rows";
}

}  // namespace

TEST_CASE("interrupt: a signal removes what is registered, then ends the process by it") {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    CAPTURE(sig);
    testing::TempDir tmp;
    const std::string staging = tmp / "out.tmp-1", lock = tmp / ".out.lock", kept = tmp / "kept";
    MakeTree(staging);
    MakeTree(kept);
    std::ofstream(lock) << "1";
    const int status = InChild([&] {
      RemoveOnInterrupt first(staging);
      const RemoveOnInterrupt moved = std::move(first);  // the registration moves with it
      const RemoveOnInterrupt file(lock);
      RemoveOnInterrupt released(kept);
      released.Release();
      { const RemoveOnInterrupt gone(kept); }  // unregistered when destroyed
      ::kill(::getpid(), sig);
      return AwaitEnd();
    });
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    CHECK_FALSE(std::filesystem::exists(staging));
    CHECK_FALSE(std::filesystem::exists(lock));
    CHECK(std::filesystem::exists(kept + "/sub/data.bin"));
  }
}

TEST_CASE("interrupt: the cleanup waits for a hold, and spares what was released under it") {
  testing::TempDir tmp;
  const std::string published = tmp / "out", staging = tmp / "other.tmp-1";
  MakeTree(published);
  MakeTree(staging);
  const int status = InChild([&] {
    RemoveOnInterrupt publishing(published);
    const RemoveOnInterrupt still_staging(staging);
    {
      const InterruptCleanupHold hold;
      ::kill(::getpid(), SIGTERM);
      for (int i = 0; i < 2000 && !Interrupted(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (!Interrupted()) return 4;
      if (!std::filesystem::exists(staging)) return 5;  // removed while held
      publishing.Release();                             // as a publication does
    }
    return AwaitEnd();
  });
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  CHECK(std::filesystem::exists(published + "/sub/data.bin"));
  CHECK_FALSE(std::filesystem::exists(staging));
}

TEST_CASE("interrupt: without a signal nothing is removed") {
  testing::TempDir tmp;
  const std::string dir = tmp / "d";
  MakeTree(dir);
  const int status = InChild([&] {
    { const RemoveOnInterrupt registered(dir); }
    return Interrupted() ? 1 : 0;
  });
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(std::filesystem::exists(dir + "/sub/data.bin"));
}
