// The process facts memory budgets are checked against: the resident set, whole and by kind.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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

TEST_CASE("process: the resident pages of mapped files are counted by file name") {
  const std::string name = "skiff_mapped_rss_" + std::to_string(::getpid()) + ".bin";
  const std::filesystem::path path = std::filesystem::temp_directory_path() / name;
  constexpr size_t kBytes = size_t{8} << 20;
  {
    std::ofstream out(path, std::ios::binary);
    const std::vector<char> data(kBytes, 7);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  void* map = ::mmap(nullptr, kBytes, PROT_READ, MAP_PRIVATE, fd, 0);
  REQUIRE(map != MAP_FAILED);
  const std::string_view prefix[] = {"skiff_mapped_rss_"};
  const std::string_view other[] = {"skiff_no_such_file_"};
  const uint64_t before = MappedFileRssBytes(prefix);
  CHECK(before < kBytes);  // mapped, not yet touched (read-ahead may bring in a part)
  uint64_t sum = 0;
  const auto* bytes = static_cast<const unsigned char*>(map);
  for (size_t i = 0; i < kBytes; i += 4096) sum += bytes[i];  // every page touched
  CHECK(sum == 7 * (kBytes / 4096));
  CHECK(MappedFileRssBytes(prefix) == kBytes);
  CHECK(MappedFileRssBytes(other) == 0);
  // The executable's own libraries match by their names' beginnings ("libc.so.6", "libc-2.36.so").
  const std::string_view libc[] = {"libc"};
  CHECK(MappedFileRssBytes(libc) > 0);
  ::munmap(map, kBytes);
  ::close(fd);
  CHECK(MappedFileRssBytes(prefix) == 0);
  std::filesystem::remove(path);
}
