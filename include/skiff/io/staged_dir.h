// A directory published whole or not at all. Files are written into a staging directory beside
// the target, "<dir>.tmp-<pid>"; Publish() then moves it to `dir` in one rename, or swaps it with
// the `dir` already there in one RENAME_EXCHANGE and removes the previous one. Until Publish()
// succeeds, and whatever fails, `dir` is as it was: a reader sees the old directory or the complete
// new one, never a mix (LevelDB publishes its CURRENT file the same way).
//
// What may be replaced is the caller's rule (`replaceable`): it is asked about an existing `dir` at
// Create(), so that a refusal comes before any work, and again at Publish(), for a `dir` another
// process created meanwhile. Where the file system has no RENAME_EXCHANGE, the previous directory
// is moved aside to "<dir>.old-<pid>" first; a crash between the two renames leaves it there, and
// the next Create() for `dir` moves it back.
//
// Thread safety: one thread at a time per object. Two processes publishing the same `dir` are not
// serialised (the later one replaces the earlier one, if its rule allows).
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>

#include "skiff/status.h"

namespace skiff::io {

// OK when an existing directory may be replaced; InvalidArgument saying why not otherwise.
using ReplaceRule = std::function<Status(const std::string& existing_dir)>;

class StagedDirectory {
 public:
  // Creates "<dir>.tmp-<pid>" (its parent must exist) after asking `replaceable` about an
  // existing `dir`. First cleans up after processes that no longer exist: removes their
  // "<dir>.tmp-<pid>", and moves a "<dir>.old-<pid>" back to an empty `dir` (removes it otherwise).
  static Result<std::unique_ptr<StagedDirectory>> Create(const std::string& dir,
                                                         ReplaceRule replaceable);
  ~StagedDirectory();  // removes the staging directory unless published
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  const std::string& staging() const { return staging_; }  // write the files here
  // fsyncs the staging directory and makes it `dir` (see above). IOError naming the paths.
  Status Publish();

 private:
  StagedDirectory(std::string dir, std::string staging, ReplaceRule replaceable);
  Status Replace();  // swaps staging_ with the existing dir_, then removes the previous one
  const std::string dir_;
  const std::string staging_;
  const ReplaceRule replaceable_;
  bool published_ = false;
};

// Cleans up beside `dir` after processes that died while publishing it: a "<dir>.old-<pid>" (the
// previous directory of a replace made in two renames) is moved back when nothing is at `dir` (the
// process died between them) and removed otherwise; "<dir>.tmp-<pid>" and "<dir><suffix><pid>" for
// each suffix in `more` are removed. Siblings of live processes are left alone. The caller makes
// sure no other writer of `dir` runs meanwhile (StagedDirectory: one per target; datasets: a lock).
void CleanUpAfterDeadRuns(const std::string& dir, std::initializer_list<const char*> more = {});

// Whether `name` is "<prefix><pid>" for a process that no longer exists (a live process's files,
// and names not of that form, are not ours to touch).
bool LeftByDeadRun(const std::string& name, const std::string& prefix);

}  // namespace skiff::io
