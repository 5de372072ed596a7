// Write faults at every step of writing and publishing a dataset (io::ScopedWriteFaults): an error
// leaves nothing half-written visible and the previous dataset intact; a crash at any step leaves
// either the previous dataset or the complete new one at the path, and the next run cleans up.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/io/atomic_file.h"
#include "skiff/io/write_path.h"
#include "tests/unit/test_dataset_util.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using format::Dataset;
using format::DType;
using io::ScopedWriteFaults;
using io::WriteFaultKind;
using io::WriteFaultRule;
using testing::WriteTinyDataset;

namespace {

constexpr int64_t kOldNodes = 10;
constexpr int64_t kNewNodes = 12;

Status WriteNew(const std::string& dir, bool overwrite) {
  return WriteTinyDataset(dir, kNewNodes, 3, DType::kFloat32, overwrite);
}

// Write-path operations that writing the new dataset takes.
uint64_t CountOps(const std::string& dir, bool overwrite) {
  ScopedWriteFaults count({});
  REQUIRE(WriteNew(dir, overwrite).ok());
  return count.ops_seen();
}

// Where `without`, renames with flags fail with EINVAL, as on a file system that lacks them: a
// replace then takes two renames instead of one RENAME_EXCHANGE.
std::vector<WriteFaultRule> NoRenameFlags(bool without) {
  if (!without) return {};
  return {{WriteFaultKind::kEinval, 0, 1000000}};
}

// Write-path operations that replacing an old dataset at `dir` with the new one takes under
// `rules`; leaves the old dataset at `dir`.
uint64_t CountReplaceOps(const std::string& dir, const std::vector<WriteFaultRule>& rules) {
  REQUIRE(WriteTinyDataset(dir, kOldNodes, 3).ok());
  uint64_t ops = 0;
  {
    ScopedWriteFaults count(rules);
    REQUIRE(WriteNew(dir, true).ok());
    ops = count.ops_seen();
  }
  REQUIRE(WriteTinyDataset(dir, kOldNodes, 3, DType::kFloat32, true).ok());
  return ops;
}

// Entries of `parent` besides `keep`: what a failed or killed run left behind.
std::vector<std::string> Leftovers(const std::string& parent, const std::string& keep) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(parent)) {
    const std::string name = entry.path().filename().string();
    if (name != keep) names.push_back(name);
  }
  return names;
}

// `dir` holds a complete dataset of `nodes` nodes whose every checksum holds.
void CheckComplete(const std::string& dir, int64_t nodes) {
  auto ds = Dataset::Open(dir);
  REQUIRE_MESSAGE(ds.ok(), ds.status().ToString());
  CHECK((*ds)->manifest().num_nodes == nodes);
  CHECK((*ds)->VerifyAll().ok());
}

// Runs the new dataset's write in a child process that crashes at operation `op`, and returns the
// child's exit status.
int WriteAndCrashAt(const std::string& dir, bool overwrite, uint64_t op) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ScopedWriteFaults crash({{WriteFaultKind::kCrash, op}});
    ::_exit(WriteNew(dir, overwrite).ok() ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("write faults: ENOSPC or EIO at any operation fails cleanly and leaves nothing") {
  for (const WriteFaultKind kind : {WriteFaultKind::kEnospc, WriteFaultKind::kEio}) {
    testing::TempDir tmp;
    const uint64_t ops = CountOps(tmp / "probe", false);
    REQUIRE(ops > 20);
    for (uint64_t op = 0; op < ops; ++op) {
      CAPTURE(op);
      const std::string dir = tmp / ("ds" + std::to_string(op));
      Status st;
      {
        ScopedWriteFaults fault({{kind, op}});
        st = WriteNew(dir, false);
        // The parent directory's fsync after publication is best effort: the dataset is whole.
        if (st.ok()) CHECK(op == ops - 1);
      }
      if (st.ok()) {
        CheckComplete(dir, kNewNodes);
        continue;
      }
      CHECK(
          st.ToString().find(kind == WriteFaultKind::kEnospc ? "No space" : "Input/output error") !=
          std::string::npos);
      CHECK_FALSE(std::filesystem::exists(dir));
    }
    CHECK(Leftovers(tmp.path(), "probe").size() == 1);  // the last case's dataset
  }
}

TEST_CASE("write faults: a failed replace keeps the previous dataset whole") {
  // With the one-step swap, and where the file system lacks renames with flags (EINVAL): there a
  // failure between the two renames moves the previous dataset back at once.
  for (const bool exchange : {true, false}) {
    CAPTURE(exchange);
    testing::TempDir tmp;
    const std::string dir = tmp / "ds";
    const std::vector<WriteFaultRule> no_flags = NoRenameFlags(!exchange);
    const uint64_t ops = CountReplaceOps(dir, no_flags);
    for (uint64_t op = 0; op < ops; ++op) {
      CAPTURE(op);
      std::vector<WriteFaultRule> rules = {{WriteFaultKind::kEnospc, op}};
      rules.insert(rules.end(), no_flags.begin(), no_flags.end());
      Status st;
      {
        ScopedWriteFaults fault(rules);
        st = WriteNew(dir, true);
      }
      CheckComplete(dir, st.ok() ? kNewNodes : kOldNodes);
      CHECK(Leftovers(tmp.path(), "ds").empty());
      if (st.ok()) REQUIRE(WriteTinyDataset(dir, kOldNodes, 3, DType::kFloat32, true).ok());
    }
  }
}

TEST_CASE("write faults: short writes are completed") {
  testing::TempDir tmp;
  const std::string dir = tmp / "ds";
  {
    ScopedWriteFaults halves({{WriteFaultKind::kShortWrite, 0, 1000000}});
    REQUIRE(WriteNew(dir, false).ok());
    CHECK(halves.faults_injected() > 0);
  }
  CheckComplete(dir, kNewNodes);
}

TEST_CASE("write faults: a crash at any step leaves the old or the new dataset, then is cleaned") {
  // Twice: with the one-step swap (RENAME_EXCHANGE), and where the file system lacks it (renames
  // with flags fail with EINVAL, so the replace takes two renames).
  for (const bool exchange : {true, false}) {
    CAPTURE(exchange);
    testing::TempDir tmp;
    const std::string dir = tmp / "ds";
    const std::vector<WriteFaultRule> no_flags = NoRenameFlags(!exchange);
    const uint64_t ops = CountReplaceOps(dir, no_flags);
    for (uint64_t op = 0; op < ops; ++op) {
      CAPTURE(op);
      const pid_t child = ::fork();
      REQUIRE(child >= 0);
      if (child == 0) {
        std::vector<WriteFaultRule> rules = {{WriteFaultKind::kCrash, op}};
        rules.insert(rules.end(), no_flags.begin(), no_flags.end());
        ScopedWriteFaults crash(rules);
        ::_exit(WriteNew(dir, true).ok() ? 0 : 1);
      }
      int status = 0;
      REQUIRE(::waitpid(child, &status, 0) == child);
      REQUIRE(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == io::kWriteFaultCrashExit);
      // Whatever the step, opening the path finds a whole dataset, old or new.
      auto ds = Dataset::Open(dir);
      REQUIRE_MESSAGE(ds.ok(), ds.status().ToString());
      const int64_t nodes = (*ds)->manifest().num_nodes;
      CHECK((nodes == kOldNodes || nodes == kNewNodes));
      CHECK((*ds)->VerifyAll().ok());
      ds->reset();
      // The next writer removes what the dead run left.
      REQUIRE(WriteTinyDataset(dir, kOldNodes, 3, DType::kFloat32, true).ok());
      CHECK(Leftovers(tmp.path(), "ds").empty());
    }
  }
}

TEST_CASE("write faults: a crash while creating a new dataset publishes it whole or not at all") {
  testing::TempDir tmp;
  const uint64_t ops = CountOps(tmp / "probe", false);
  for (uint64_t op = 0; op < ops; ++op) {
    CAPTURE(op);
    const std::string parent = tmp / ("case" + std::to_string(op));
    std::filesystem::create_directories(parent);
    const std::string dir = parent + "/ds";
    CHECK(WriteAndCrashAt(dir, false, op) == io::kWriteFaultCrashExit);
    const bool published = std::filesystem::exists(dir);
    if (published) CheckComplete(dir, kNewNodes);
    // The next run writes it (replacing it if it was published) and removes the dead run's staging.
    REQUIRE(WriteNew(dir, published).ok());
    CHECK(Leftovers(parent, "ds").empty());
  }
}

TEST_CASE("write faults: WriteFileAtomic keeps the previous file on a fault") {
  testing::TempDir tmp;
  const std::string path = tmp / "file";
  REQUIRE(io::WriteFileAtomic(path, {"old"}).ok());
  for (const WriteFaultKind kind : {WriteFaultKind::kEnospc, WriteFaultKind::kEio}) {
    for (uint64_t op = 0; op < 3; ++op) {  // write, fsync, rename
      CAPTURE(op);
      ScopedWriteFaults fault({{kind, op}});
      CHECK_FALSE(io::WriteFileAtomic(path, {"new contents"}).ok());
      std::ifstream in(path);
      std::string text;
      std::getline(in, text);
      CHECK(text == "old");
      CHECK(Leftovers(tmp.path(), "file").empty());
    }
  }
}
