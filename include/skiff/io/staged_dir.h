// A directory published whole or not at all. Files are written into a staging directory beside
// the target, "<dir>.tmp-<pid>"; Publish() then moves it to `dir` in one rename, or swaps it with
// the `dir` already there in one RENAME_EXCHANGE and removes the previous one. Until Publish()
// succeeds, and whatever fails, `dir` is as it was: a reader sees the old directory or the complete
// new one, never a mix (LevelDB publishes its CURRENT file the same way).
//
// What may be replaced is the caller's rule (`replaceable`): it is asked about an existing `dir` at
// Create(), so that a refusal comes before any work, and again at Publish(), for a `dir` another
// process created or changed meanwhile. Where the file system has no RENAME_EXCHANGE, the previous
// directory is moved aside to "<dir>.old-<pid>" first; a failure between the two renames moves it
// back, and a crash between them leaves it there for the next Create() (or a reader that calls
// CleanUpAfterDeadRuns) to move back.
//
// The object holds a PathLock on `dir` from Create() until it is destroyed: a second run that
// publishes the same `dir` is told at once that it is in use, instead of one replacing the other.
// An interrupted run removes the staging directory unless Publish() has begun, in which case the
// cleanup waits for it to end (skiff/interrupt.h).
//
// Thread safety: one thread at a time per object.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "skiff/interrupt.h"
#include "skiff/path_lock.h"
#include "skiff/status.h"

namespace skiff::io {

// OK when an existing directory may be replaced; InvalidArgument saying why not otherwise.
using ReplaceRule = std::function<Status(const std::string& existing_dir)>;

class StagedDirectory {
 public:
  // Locks `dir` (Unavailable when another run holds it), cleans up after processes that no
  // longer exist (CleanUpAfterDeadRuns, with `more_siblings`), asks `replaceable` about an existing
  // `dir`, and creates "<dir>.tmp-<pid>". NotFound when the parent of `dir` does not exist.
  static Result<std::unique_ptr<StagedDirectory>> Create(
      const std::string& dir, ReplaceRule replaceable, std::vector<std::string> more_siblings = {});
  ~StagedDirectory();  // removes the staging directory unless published
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  const std::string& dir() const { return dir_; }          // without a trailing slash
  const std::string& staging() const { return staging_; }  // write the files here
  // fsyncs the staging directory and makes it `dir` (see above). The rule's refusal of a `dir`
  // another run created or changed meanwhile, with a context saying so; IOError naming the paths.
  Status Publish();

 private:
  StagedDirectory(std::string dir, std::string staging, ReplaceRule replaceable, bool existed,
                  PathLock lock);
  Status PublishStaging();  // Publish() without the interrupt hold
  Status CheckRaced();      // asks the rule about the dir_ found at Publish()
  Status Replace();         // swaps staging_ with the existing dir_, then removes the previous one
  const std::string dir_;
  const std::string staging_;
  const ReplaceRule replaceable_;
  const bool existed_;  // dir_ existed at Create()
  PathLock lock_;
  RemoveOnInterrupt remove_on_interrupt_;  // staging_, until published
  bool published_ = false;
};

// Cleans up beside `dir` after processes that died while publishing it: a "<dir>.old-<pid>" (the
// previous directory of a replace made in two renames) is moved back when nothing is at `dir` (the
// process died between them) and removed otherwise; "<dir>.tmp-<pid>" and "<dir><suffix><pid>" for
// each suffix in `more` are removed. Siblings of live processes are left alone. The caller holds
// dir's PathLock, so that no other writer of `dir` runs meanwhile.
void CleanUpAfterDeadRuns(const std::string& dir, const std::vector<std::string>& more = {});

// Whether `name` is "<prefix><pid>" for a process that no longer exists (a live process's files,
// and names not of that form, are not ours to touch).
bool LeftByDeadRun(const std::string& name, const std::string& prefix);

}  // namespace skiff::io
