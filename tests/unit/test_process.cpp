// The process facts memory budgets are checked against: the resident set, whole and by kind.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>

#include "skiff/process.h"

using namespace skiff;

TEST_CASE("process: the resident set by kind adds up to the whole, and touched heap is anonymous") {
  const RssParts before = CurrentRssParts();
  CHECK(before.file > 0);  // the test executable's own pages
  // The three kinds are the kernel's split of VmRSS (read again here, a moment later).
  const uint64_t whole = CurrentRssBytes();
  const uint64_t sum = before.anonymous + before.file + before.shared;
  CHECK(sum <= whole + (4u << 20));
  CHECK(whole <= sum + (4u << 20));

  constexpr size_t kBytes = size_t{64} << 20;
  auto block = std::make_unique<char[]>(kBytes);
  std::memset(block.get(), 1, kBytes);  // every page touched
  const RssParts after = CurrentRssParts();
  CHECK(after.anonymous >= before.anonymous + kBytes - (4u << 20));
  CHECK(PeakRssBytes() >= after.anonymous + after.file);
  CHECK(block[kBytes - 1] == 1);
}
