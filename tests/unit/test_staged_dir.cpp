// io::StagedDirectory: a directory appears or replaces the previous one whole, never mixed; a
// refused, failed or abandoned publication leaves the target as it was and nothing beside it.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "skiff/io/atomic_file.h"
#include "skiff/io/staged_dir.h"
#include "skiff/io/write_path.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using io::ScopedWriteFaults;
using io::StagedDirectory;
using io::WriteFaultKind;

namespace {

Status AnyDirectory(const std::string&) { return Status::Ok(); }

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Publishes a directory holding a.txt and b.txt with `version` in both.
Status PublishVersion(const std::string& dir, const std::string& version,
                      io::ReplaceRule rule = AnyDirectory) {
  SKIFF_ASSIGN_OR_RETURN(auto staged, StagedDirectory::Create(dir, std::move(rule)));
  SKIFF_RETURN_IF_ERROR(io::WriteFileAtomic(staged->staging() + "/a.txt", {version}));
  SKIFF_RETURN_IF_ERROR(io::WriteFileAtomic(staged->staging() + "/b.txt", {version}));
  return staged->Publish();
}

}  // namespace

TEST_CASE("staged directory: a new directory appears whole, a second replaces it whole") {
  testing::TempDir tmp;
  const std::string dir = tmp / "out";
  REQUIRE(PublishVersion(dir, "one").ok());
  CHECK(Read(dir + "/a.txt") == "one");
  REQUIRE(PublishVersion(dir, "two").ok());
  CHECK(Read(dir + "/a.txt") == "two");
  CHECK(Read(dir + "/b.txt") == "two");
  CHECK(Entries(tmp.path()) == std::vector<std::string>{"out"});
}

TEST_CASE("staged directory: a refused or abandoned publication leaves the target as it was") {
  testing::TempDir tmp;
  const std::string dir = tmp / "out";
  REQUIRE(PublishVersion(dir, "one").ok());
  auto refuse = [](const std::string& existing) {
    return Status::InvalidArgument("not replacing " + existing);
  };
  const auto refused = StagedDirectory::Create(dir, refuse);
  CHECK(refused.status().message().find("not replacing") != std::string::npos);
  {
    auto abandoned = StagedDirectory::Create(dir, AnyDirectory);
    REQUIRE(abandoned.ok());
    REQUIRE(io::WriteFileAtomic((*abandoned)->staging() + "/a.txt", {"two"}).ok());
  }  // never published
  CHECK(Read(dir + "/a.txt") == "one");
  CHECK(Entries(tmp.path()) == std::vector<std::string>{"out"});
  // A directory another process creates before Publish() is asked about too.
  const std::string raced = tmp / "raced";
  auto late = StagedDirectory::Create(raced, refuse);
  REQUIRE(late.ok());
  std::filesystem::create_directory(raced);
  const Status lost = (*late)->Publish();
  CHECK(lost.message().find("not replacing") != std::string::npos);
  CHECK(lost.message().find("was created by another run") != std::string::npos);
  late->reset();
  CHECK(Entries(raced).empty());
  CHECK(StagedDirectory::Create(tmp / "no/such/parent", AnyDirectory).status().code() ==
        StatusCode::kNotFound);
}

TEST_CASE("staged directory: a fault at any step leaves the previous version or the new one") {
  // With the one-step swap, and where the file system lacks renames with flags (EINVAL).
  for (const bool exchange : {true, false}) {
    CAPTURE(exchange);
    testing::TempDir tmp;
    const std::string dir = tmp / "out";
    REQUIRE(PublishVersion(dir, "old").ok());
    std::vector<io::WriteFaultRule> base;
    if (!exchange) base.push_back({WriteFaultKind::kEinval, 0, 1000000});
    uint64_t ops = 0;
    {
      ScopedWriteFaults count(base);
      REQUIRE(PublishVersion(dir, "old").ok());
      ops = count.ops_seen();
    }
    for (uint64_t op = 0; op < ops; ++op) {
      CAPTURE(op);
      std::vector<io::WriteFaultRule> rules{{WriteFaultKind::kEio, op}};
      rules.insert(rules.end(), base.begin(), base.end());
      Status st;
      {
        ScopedWriteFaults fault(rules);
        st = PublishVersion(dir, "new");
      }
      const std::string a = Read(dir + "/a.txt");
      CHECK(a == (st.ok() ? "new" : "old"));
      CHECK(Read(dir + "/b.txt") == a);
      CHECK(Entries(tmp.path()) == std::vector<std::string>{"out"});
      if (st.ok()) REQUIRE(PublishVersion(dir, "old").ok());
    }
  }
}

TEST_CASE("staged directory: what a run that no longer exists left is cleaned up") {
  testing::TempDir tmp;
  const std::string dir = tmp / "out";
  const pid_t dead = testing::ExitedPid();  // a PID that no longer exists
  REQUIRE(dead > 0);
  const std::string stale = dir + ".tmp-" + std::to_string(dead);
  const std::string alive = dir + ".tmp-1";  // PID 1 runs: not ours to remove
  std::filesystem::create_directories(stale + "/sub");
  std::filesystem::create_directories(alive);
  REQUIRE(PublishVersion(dir, "one").ok());
  CHECK_FALSE(std::filesystem::exists(stale));
  CHECK(std::filesystem::exists(alive));
  // A replace that died between its two renames: the previous directory is moved back first.
  const std::string old = dir + ".old-" + std::to_string(dead);
  std::filesystem::rename(dir, old);
  auto next = StagedDirectory::Create(dir, AnyDirectory);
  REQUIRE(next.ok());
  CHECK(Read(dir + "/a.txt") == "one");
  CHECK_FALSE(std::filesystem::exists(old));
  CHECK(io::LeftByDeadRun("out.tmp-" + std::to_string(dead), "out.tmp-"));
  CHECK_FALSE(io::LeftByDeadRun("out.tmp-1", "out.tmp-"));
  CHECK_FALSE(io::LeftByDeadRun("out.tmp-12x", "out.tmp-"));
}

TEST_CASE("staged directory: a second run publishing the same directory is told it is in use") {
  testing::TempDir tmp;
  const std::string dir = tmp / "out";
  auto first = StagedDirectory::Create(dir, AnyDirectory);
  REQUIRE(first.ok());
  const auto second = StagedDirectory::Create(dir + "/", AnyDirectory);
  CHECK(second.status().code() == StatusCode::kUnavailable);
  CHECK(second.status().message().find("is in use") != std::string::npos);
  REQUIRE(io::WriteFileAtomic((*first)->staging() + "/a.txt", {"one"}).ok());
  REQUIRE((*first)->Publish().ok());
  first->reset();  // releases the lock, and leaves no lock file
  CHECK(Entries(tmp.path()) == std::vector<std::string>{"out"});
  CHECK(PublishVersion(dir, "two").ok());
}
