// RocksDB ID map: first-seen dense IDs, raw <-> dense round trip through a small cache.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "skiff/convert/id_map.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using namespace skiff::convert;

TEST_CASE("ID map: string IDs round trip, across cache clears and reopening") {
  testing::TempDir dir;
  const std::string path = dir / "idmap";
  const int kIds = 20000;
  auto raw = [](int i) { return "user:" + std::to_string(i * 7919 % 100003) + (i % 3 ? "x" : ""); };
  {
    // 1 MiB is raised to the 16 MiB minimum, whose cache holds all of these IDs; the next test
    // case overflows the cache.
    auto map = IdMap::Create(path, 1 << 20);
    REQUIRE(map.ok());
    for (int i = 0; i < kIds; ++i) {
      auto id = (*map)->GetOrAssign(raw(i));
      REQUIRE(id.ok());
      CHECK(*id == i);  // first-seen order
    }
    for (int i = kIds - 1; i >= 0; i -= 13) {
      auto id = (*map)->GetOrAssign(raw(i));
      REQUIRE(id.ok());
      CHECK(*id == i);  // repeated IDs keep their number
    }
    CHECK((*map)->size() == kIds);
    auto back = (*map)->RawId(4321);
    REQUIRE(back.ok());
    CHECK(*back == raw(4321));
    CHECK((*map)->RawId(kIds).status().code() == StatusCode::kNotFound);
    REQUIRE((*map)->Close().ok());
  }
  auto ro = IdMap::OpenReadOnly(path);
  REQUIRE(ro.ok());
  CHECK((*ro)->size() == kIds);
  for (int i = 0; i < kIds; i += 997) {
    auto found = (*ro)->Find(raw(i));
    REQUIRE(found.ok());
    REQUIRE(found->has_value());
    CHECK(**found == i);
    auto back = (*ro)->RawId(i);
    REQUIRE(back.ok());
    CHECK(*back == raw(i));
  }
  auto absent = (*ro)->Find("nobody");
  REQUIRE(absent.ok());
  CHECK_FALSE(absent->has_value());
  REQUIRE((*ro)->Close().ok());

  CHECK_FALSE(IdMap::Create(path, 1 << 20).ok());  // an existing map is never overwritten
}

TEST_CASE("ID map: lookups after the cache is cleared go to RocksDB and stay consistent") {
  testing::TempDir dir;
  auto map = IdMap::Create(dir / "idmap", 0);  // minimum budget: the cache holds ~130k entries
  REQUIRE(map.ok());
  const int kIds = 150000;  // more than the cache holds: it is cleared at least once
  for (int i = 0; i < kIds; ++i) {
    auto id = (*map)->GetOrAssign("n" + std::to_string(i));
    REQUIRE(id.ok());
    REQUIRE(*id == i);
  }
  const uint64_t db_before = (*map)->db_lookups();
  for (int i = 0; i < kIds; i += 101) {
    auto id = (*map)->GetOrAssign("n" + std::to_string(i));
    REQUIRE(id.ok());
    CHECK(*id == i);
  }
  CHECK((*map)->db_lookups() > db_before);  // some answers came from RocksDB, not the cache
  CHECK((*map)->size() == kIds);
  REQUIRE((*map)->Close().ok());
}
