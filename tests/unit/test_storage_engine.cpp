#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "skiff/storage/aligned_buffer.h"
#include "skiff/storage/io_engine.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using namespace skiff::storage;

namespace {

constexpr uint64_t kFileBytes = 6ull << 20;  // 6 MiB: requests > 1 MiB get split

std::vector<std::byte> ReadWithPread(const std::string& path, uint64_t off, uint64_t len) {
  std::vector<std::byte> out(len);
  const int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::pread(fd, out.data(), len, static_cast<off_t>(off)) == static_cast<ssize_t>(len));
  ::close(fd);
  return out;
}

// Returns null (and says why) when the engine kind cannot run here (io_uring refused).
std::unique_ptr<IoEngine> MakeEngine(IoEngineKind kind, IoEngineOptions options = {}) {
  options.kind = kind;
  if (options.pread_threads == IoEngineOptions{}.pread_threads) options.pread_threads = 3;
  auto engine = CreateIoEngine(options);
  if (!engine.ok()) {
    MESSAGE("skipping: " << engine.status().ToString());
    return nullptr;
  }
  return std::move(engine).value();
}

void CheckRandomReads(IoEngine& engine, const ReadFile& file, uint64_t seed) {
  auto id = engine.AddFile(file);
  REQUIRE(id.ok());
  const uint64_t a = file.alignment();
  std::mt19937_64 rng(seed);
  constexpr int kRequests = 40;
  auto buf = AlignedBuffer::Allocate(kRequests * (3ull << 20));
  REQUIRE(buf.ok());
  std::vector<ReadRequest> reqs;
  uint64_t cursor = 0;
  for (int i = 0; i < kRequests; ++i) {
    // Mostly small reads, some larger than 1 MiB (split into pieces).
    uint64_t len = (i % 7 == 0) ? 1 + rng() % (3ull << 20) : 1 + rng() % 20000;
    len = std::max<uint64_t>(a, len / a * a);
    uint64_t off = rng() % (kFileBytes - len);
    off = off / a * a;
    reqs.push_back(ReadRequest{*id, off, len, buf->data() + cursor, static_cast<uint64_t>(i)});
    cursor += (len + 4095) / 4096 * 4096;
  }
  REQUIRE(engine.Submit(reqs).ok());
  std::vector<ReadCompletion> done;
  while (done.size() < reqs.size()) engine.Reap(1, &done);
  CHECK(engine.outstanding() == 0);
  std::vector<bool> seen(reqs.size());
  for (const auto& c : done) {
    REQUIRE(c.tag < reqs.size());
    CHECK_FALSE(seen[c.tag]);
    seen[c.tag] = true;
    CHECK_MESSAGE(c.status.ok(), c.status.ToString());
    const auto& r = reqs[c.tag];
    const auto expect = ReadWithPread(file.path(), r.offset, r.length);
    CHECK(std::memcmp(expect.data(), r.dst, r.length) == 0);
  }
}

struct TestFile {
  skiff::testing::TempDir dir;
  std::string path = dir / "data.bin";
  TestFile() { REQUIRE(CreateRandomFile(path, kFileBytes, 7).ok()); }
};

}  // namespace

TEST_CASE("storage engines return the bytes pread returns, direct and buffered") {
  TestFile tf;
  for (bool direct : {true, false}) {
    auto file = ReadFile::OpenForRead(tf.path, direct);
    REQUIRE(file.ok());
    for (IoEngineKind kind :
         {IoEngineKind::kIoUring, IoEngineKind::kPread, IoEngineKind::kMemory}) {
      const std::string engine_name = IoEngineKindName(kind);
      CAPTURE(engine_name);
      CAPTURE(direct);
      auto engine = MakeEngine(kind);
      if (!engine) continue;
      CheckRandomReads(*engine, *file, direct ? 1 : 2);
    }
  }
}

TEST_CASE("io_uring engine with fixed buffers and a queue depth smaller than the batch") {
  TestFile tf;
  auto file = ReadFile::OpenForRead(tf.path, true);
  REQUIRE(file.ok());
  IoEngineOptions opt;
  opt.queue_depth = 4;
  opt.max_piece_bytes = 64 << 10;
  auto engine = MakeEngine(IoEngineKind::kIoUring, opt);
  if (!engine) return;
  auto buf = AlignedBuffer::Allocate(kFileBytes);
  REQUIRE(buf.ok());
  std::span<std::byte> region(buf->data(), buf->size());
  REQUIRE(engine->RegisterBuffers(std::span<const std::span<std::byte>>(&region, 1)).ok());
  auto id = engine->AddFile(*file);
  REQUIRE(id.ok());
  ReadRequest whole{*id, 0, kFileBytes, buf->data(), 9};
  CHECK(engine->ReadAll(std::span<const ReadRequest>(&whole, 1)).ok());
  const auto expect = ReadWithPread(tf.path, 0, kFileBytes);
  CHECK(std::memcmp(expect.data(), buf->data(), kFileBytes) == 0);
  CHECK(engine->reads_issued() == kFileBytes / (64 << 10));
}

TEST_CASE("storage: injected faults are retried or reported with file and offset") {
  TestFile tf;
  for (IoEngineKind kind : {IoEngineKind::kIoUring, IoEngineKind::kPread, IoEngineKind::kMemory}) {
    const std::string engine_name = IoEngineKindName(kind);
    CAPTURE(engine_name);
    auto file = ReadFile::OpenForRead(tf.path, true);
    REQUIRE(file.ok());
    const auto expect = ReadWithPread(tf.path, 0, 3 << 20);
    auto buf = AlignedBuffer::Allocate(3 << 20);
    REQUIRE(buf.ok());
    // Three 1 MiB requests -> three raw reads (0, 1, 2) before any retry.
    auto run = [&](FaultKind fault_kind, uint64_t first, uint64_t count, uint64_t* faults_seen) {
      IoEngineOptions opt;
      opt.faults =
          std::make_shared<FaultInjector>(std::vector<FaultRule>{{fault_kind, first, count}});
      opt.queue_depth = 1;  // raw read order = request order
      opt.pread_threads = 1;
      auto engine = MakeEngine(kind, opt);
      if (!engine) return std::vector<ReadCompletion>{};
      auto id = engine->AddFile(*file);
      REQUIRE(id.ok());
      std::memset(buf->data(), 0, 3 << 20);
      std::vector<ReadRequest> reqs;
      for (uint64_t i = 0; i < 3; ++i)
        reqs.push_back({*id, i << 20, 1 << 20, buf->data() + (i << 20), i});
      REQUIRE(engine->Submit(reqs).ok());
      std::vector<ReadCompletion> done;
      while (done.size() < 3) engine->Reap(3, &done);
      *faults_seen = opt.faults->faults_injected();
      return done;
    };
    uint64_t injected = 0;
    {  // EIO on the second read
      auto done = run(FaultKind::kEio, 1, 1, &injected);
      if (done.empty()) continue;
      CHECK(injected == 1);
      for (const auto& c : done) {
        if (c.tag == 1) {
          CHECK(c.status.code() == StatusCode::kIOError);
          CHECK(c.status.message().find(tf.path) != std::string::npos);
          CHECK(c.status.message().find("offset 1048576") != std::string::npos);
        } else {
          CHECK(c.status.ok());
        }
      }
    }
    {  // EAGAIN is resubmitted
      auto done = run(FaultKind::kEagain, 0, 3, &injected);
      if (done.empty()) continue;
      CHECK(injected == 3);
      for (const auto& c : done) CHECK(c.status.ok());
      CHECK(std::memcmp(expect.data(), buf->data(), 3 << 20) == 0);
    }
    {  // short reads are completed
      auto done = run(FaultKind::kShortRead, 0, 5, &injected);
      if (done.empty()) continue;
      CHECK(injected == 5);
      for (const auto& c : done) CHECK(c.status.ok());
      CHECK(std::memcmp(expect.data(), buf->data(), 3 << 20) == 0);
    }
    {  // a corrupted byte reaches the caller (checksums catch it above the engine)
      auto done = run(FaultKind::kCorruptByte, 2, 1, &injected);
      if (done.empty()) continue;
      CHECK(injected == 1);
      for (const auto& c : done) CHECK(c.status.ok());
      CHECK(std::memcmp(expect.data(), buf->data(), 2 << 20) == 0);
      CHECK(std::memcmp(expect.data() + (2 << 20), buf->data() + (2 << 20), 1 << 20) != 0);
    }
  }
}

TEST_CASE("storage: the pread engine is chosen when io_uring setup fails") {
  IoEngineOptions opt;
  opt.inject_setup_errno = EPERM;  // what a seccomp policy answers
  opt.kind = IoEngineKind::kAuto;
  auto engine = CreateIoEngine(opt);
  REQUIRE(engine.ok());
  CHECK((*engine)->kind() == IoEngineKind::kPread);
  opt.kind = IoEngineKind::kIoUring;
  auto strict = CreateIoEngine(opt);
  REQUIRE_FALSE(strict.ok());
  CHECK(strict.status().code() == StatusCode::kUnavailable);
  CHECK(strict.status().message().find("io_uring_queue_init") != std::string::npos);
}

TEST_CASE("storage: bad requests are refused with a clear Status") {
  TestFile tf;
  auto file = ReadFile::OpenForRead(tf.path, true);
  REQUIRE(file.ok());
  for (IoEngineKind kind : {IoEngineKind::kIoUring, IoEngineKind::kPread}) {
    auto engine = MakeEngine(kind);
    if (!engine) continue;
    auto id = engine->AddFile(*file);
    REQUIRE(id.ok());
    auto buf = AlignedBuffer::Allocate(8192);
    REQUIRE(buf.ok());
    ReadRequest unknown{*id + 5, 0, 4096, buf->data(), 0};
    CHECK(engine->Submit(std::span<const ReadRequest>(&unknown, 1)).code() ==
          StatusCode::kInvalidArgument);
    ReadRequest past_end{*id, kFileBytes, 4096, buf->data(), 0};
    Status st = engine->ReadAll(std::span<const ReadRequest>(&past_end, 1));
    CHECK(st.code() == StatusCode::kIOError);
    CHECK(st.message().find("end of file") != std::string::npos);
    if (file->direct()) {
      ReadRequest misaligned{*id, 100, 4096, buf->data(), 0};
      st = engine->ReadAll(std::span<const ReadRequest>(&misaligned, 1));
      CHECK(st.code() == StatusCode::kInvalidArgument);
      CHECK(st.message().find("aligned") != std::string::npos);
    }
  }
}

TEST_CASE("storage: files on tmpfs are readable when O_DIRECT is requested") {
  if (!std::filesystem::is_directory("/dev/shm")) {
    MESSAGE("skipping: no /dev/shm");
    return;
  }
  const std::string path = "/dev/shm/skiff-test-" + std::to_string(::getpid()) + ".bin";
  REQUIRE(CreateRandomFile(path, 1 << 20, 3).ok());
  auto file = ReadFile::OpenForRead(path, true);
  REQUIRE(file.ok());
  auto engine = MakeEngine(IoEngineKind::kAuto);
  REQUIRE(engine);
  auto id = engine->AddFile(*file);
  REQUIRE(id.ok());
  auto buf = AlignedBuffer::Allocate(1 << 20);
  REQUIRE(buf.ok());
  ReadRequest r{*id, 0, 1 << 20, buf->data(), 0};
  CHECK(engine->ReadAll(std::span<const ReadRequest>(&r, 1)).ok());
  CHECK(std::memcmp(ReadWithPread(path, 0, 1 << 20).data(), buf->data(), 1 << 20) == 0);
  ::unlink(path.c_str());
}
