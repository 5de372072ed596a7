// Cleaning up after an interrupted run. Ctrl-C (SIGINT), SIGTERM or SIGHUP would otherwise end the
// process where it stands, leaving a dataset's staging directory ("<dir>.tmp-<pid>", as large as
// the dataset), spill files under --tmp-dir and lock files behind until a later run of the same
// output removes them.
//
// InstallInterruptCleanup() (once, from main, before any thread starts) blocks the three signals in
// the calling thread, so in every thread started after it, and starts one watcher thread with them
// unblocked. Their handler only writes the signal's number to a pipe; the watcher reads it and, in
// ordinary code, removes every path registered with a live RemoveOnInterrupt, then ends the process
// by the same signal (its default action: the shell sees 130 for Ctrl-C). A second signal during
// the cleanup is ignored. The work of the other threads goes on meanwhile and may fail on the
// vanishing files; Interrupted() tells the code that reports errors to say nothing, and main
// calls WaitIfInterrupted() so that returning from it cannot cut the cleanup short.
//
// An InterruptCleanupHold delays the cleanup while it lives: a publication holds one across its
// renames, so that the cleanup sees either the staging directory (and removes it) or the published
// output (and leaves it), never half a swap.
//
// Without InstallInterruptCleanup() (tests, other programs) registrations cost a map insert and
// nothing else happens. Thread safety: everything here may be used from any thread.
#pragma once

#include <cstdint>
#include <string>

namespace skiff {

void InstallInterruptCleanup();

// True once a signal was taken: the process ends as soon as the cleanup is done.
bool Interrupted();

// Returns at once when no signal was taken; otherwise waits for the cleanup, which ends the
// process.
void WaitIfInterrupted();

// Registers `path` (a file, or a directory removed with everything in it) for removal if the
// process is interrupted while this object lives. Movable; Release() unregisters it.
class RemoveOnInterrupt {
 public:
  RemoveOnInterrupt() = default;
  explicit RemoveOnInterrupt(const std::string& path);
  ~RemoveOnInterrupt() { Release(); }
  RemoveOnInterrupt(RemoveOnInterrupt&& other) noexcept;
  RemoveOnInterrupt& operator=(RemoveOnInterrupt&& other) noexcept;
  RemoveOnInterrupt(const RemoveOnInterrupt&) = delete;
  RemoveOnInterrupt& operator=(const RemoveOnInterrupt&) = delete;

  void Release();

 private:
  uint64_t id_ = 0;  // 0: nothing registered
};

// Delays the cleanup until destroyed (see above). Not reentrant: one per thread at a time.
class InterruptCleanupHold {
 public:
  InterruptCleanupHold();
  ~InterruptCleanupHold();
  InterruptCleanupHold(const InterruptCleanupHold&) = delete;
  InterruptCleanupHold& operator=(const InterruptCleanupHold&) = delete;
};

}  // namespace skiff
