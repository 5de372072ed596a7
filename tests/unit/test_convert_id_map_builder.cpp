// IdMapBuilder against the reference it replaces (IdMap::GetOrAssign, one lookup per endpoint):
// the same dense IDs for string, sparse 64-bit and mixed IDs, in memory and with many spilled runs;
// the bulk-loaded map answers both ways; dense integers are recognised; a full disk is an error
// naming the spill file and leaves nothing behind.
#include <doctest/doctest.h>

#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "skiff/convert/id_map.h"
#include "skiff/convert/id_map_builder.h"
#include "skiff/io/write_path.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using namespace skiff::convert;
namespace fs = std::filesystem;

namespace {

using RawEdges = std::vector<std::pair<std::string, std::string>>;
using DenseEdges = std::vector<std::pair<int64_t, int64_t>>;

// Power-law-ish endpoints over `ids` names made by `name`.
template <typename Name>
RawEdges MakeEdges(size_t edges, uint64_t ids, uint64_t seed, Name name) {
  std::mt19937_64 rng(seed);
  RawEdges out;
  for (size_t i = 0; i < edges; ++i) {
    const uint64_t a = rng() % ids, b = rng() % (1 + rng() % ids);
    out.emplace_back(name(a), name(b));
  }
  return out;
}

// The dense IDs IdMap::GetOrAssign gives, edge by edge (source, then target).
DenseEdges Reference(const RawEdges& edges, const std::string& dir) {
  auto map = IdMap::Create(dir, 8ull << 20);
  REQUIRE(map.ok());
  DenseEdges out;
  for (const auto& [s, d] : edges) {
    auto a = (*map)->GetOrAssign(s);
    auto b = (*map)->GetOrAssign(d);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    out.emplace_back(*a, *b);
  }
  REQUIRE((*map)->Close().ok());
  return out;
}

struct Built {
  DenseEdges edges;
  int64_t num_nodes = 0;
  bool identity = false;
  IdMapBuilderStats stats;
};

Built Build(const RawEdges& edges, uint64_t memory, const std::string& spill,
            const std::string& map_dir, bool detect_dense = false) {
  IdMapBuilderOptions o;
  o.memory_bytes = memory;
  o.spill_parent_dir = spill;
  o.detect_dense_integers = detect_dense;
  auto b = IdMapBuilder::Create(o);
  REQUIRE(b.ok());
  for (const auto& [s, d] : edges) {
    const Status st = (*b)->Add(s, d);
    REQUIRE_MESSAGE(st.ok(), st.ToString());
  }
  const Status st = (*b)->Finish(map_dir);
  REQUIRE_MESSAGE(st.ok(), st.ToString());
  Built out;
  out.num_nodes = (*b)->num_nodes();
  out.identity = (*b)->identity();
  REQUIRE((*b)->Replay([&](int64_t s, int64_t d) {
                out.edges.emplace_back(s, d);
                return Status::Ok();
              })
              .ok());
  out.stats = (*b)->stats();
  return out;
}

// The bulk-loaded map holds exactly what the reference map holds.
void CheckMapsAgree(const std::string& got_dir, const std::string& want_dir) {
  auto got = IdMap::OpenReadOnly(got_dir);
  auto want = IdMap::OpenReadOnly(want_dir);
  REQUIRE(got.ok());
  REQUIRE(want.ok());
  REQUIRE((*got)->size() == (*want)->size());
  for (int64_t v = 0; v < (*want)->size(); ++v) {
    auto raw = (*want)->RawId(v);
    auto raw_got = (*got)->RawId(v);
    REQUIRE(raw.ok());
    REQUIRE(raw_got.ok());
    REQUIRE(*raw_got == *raw);
    auto found = (*got)->Find(*raw);
    REQUIRE(found.ok());
    REQUIRE(found->has_value());
    REQUIRE(**found == v);
  }
  auto missing = (*got)->Find("never-seen");
  REQUIRE(missing.ok());
  CHECK_FALSE(missing->has_value());
}

}  // namespace

TEST_CASE("ID map builder: the IDs GetOrAssign gives, in memory and over many spilled runs") {
  struct Case {
    const char* what;
    RawEdges edges;
  };
  std::vector<Case> cases;
  cases.push_back({"strings", MakeEdges(40000, 9000, 1, [](uint64_t i) {
                     return "user-" + std::to_string(i * 2654435761u % 100003);
                   })});
  cases.push_back({"sparse 64-bit", MakeEdges(40000, 9000, 2, [](uint64_t i) {
                     return std::to_string(i * 0x9e3779b97f4a7c15ull);
                   })});
  cases.push_back({"mixed, empty and long", MakeEdges(40000, 9000, 3, [](uint64_t i) {
                     if (i % 7 == 0) return std::to_string(i);
                     if (i == 5) return std::string();
                     if (i % 11 == 0) return std::string(40 + i % 30, 'x') + std::to_string(i);
                     return std::string("0").append(std::to_string(i));  // "07" is not "7"
                   })});
  for (const Case& c : cases) {
    CAPTURE(c.what);
    testing::TempDir dir;
    const DenseEdges want = Reference(c.edges, dir / "ref");
    for (const uint64_t memory : {uint64_t{64} << 20, uint64_t{48} << 10}) {
      CAPTURE(memory);
      const std::string map_dir = dir / ("map-" + std::to_string(memory));
      const Built got = Build(c.edges, memory, dir.path(), map_dir);
      CHECK_FALSE(got.identity);
      if (memory < (1u << 20)) CHECK(got.stats.runs_spilled >= 5);
      if (memory > (1u << 20)) CHECK(got.stats.runs_spilled == 0);
      CHECK(got.edges == want);  // replay keeps the input order
      CheckMapsAgree(map_dir, dir / "ref");
      CHECK(got.num_nodes == IdMap::OpenReadOnly(dir / "ref").value()->size());
    }
    // Nothing but the maps is left in the spill parent.
    for (const auto& e : fs::directory_iterator(dir.path())) {
      CHECK(e.path().filename().string().rfind("skiff-idmap-", 0) != 0);
    }
  }
}

TEST_CASE("ID map builder: dense integers map to themselves; anything else gets a map") {
  testing::TempDir dir;
  // 0..999 in a shuffled order, each as "v" (written canonically: raw IDs are compared byte for
  // byte, so "007" would be an ID of its own, below).
  std::vector<int> perm(1000);
  for (int i = 0; i < 1000; ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), std::mt19937(5));
  RawEdges edges;
  for (int i = 0; i < 1000; ++i)
    edges.emplace_back(std::to_string(perm[i]), std::to_string(perm[(i + 1) % 1000]));
  for (const uint64_t memory : {uint64_t{16} << 20, uint64_t{16} << 10}) {
    CAPTURE(memory);
    const std::string map_dir = dir / ("dense-" + std::to_string(memory));
    const Built got = Build(edges, memory, dir.path(), map_dir, /*detect_dense=*/true);
    CHECK(got.identity);
    CHECK(got.num_nodes == 1000);
    CHECK_FALSE(fs::exists(map_dir));
    REQUIRE(got.edges.size() == edges.size());
    for (size_t i = 0; i < edges.size(); ++i) {
      CHECK(got.edges[i].first == std::stoll(edges[i].first));
      CHECK(got.edges[i].second == std::stoll(edges[i].second));
    }
    if (memory < (1u << 20)) CHECK(got.stats.runs_spilled >= 2);
  }
  // A gap (no node 1000 .. 1004), a non-integer or an integer written otherwise ("007" is not
  // "7", "+7" neither) makes a map, in first-seen order.
  for (const std::string odd : {"1005", "-1", "x", "007", "+7"}) {
    CAPTURE(odd);
    RawEdges with = edges;
    with.emplace_back(odd, "0");
    const std::string map_dir = dir / ("odd-" + odd);
    const Built got = Build(with, 16ull << 10, dir.path(), map_dir, /*detect_dense=*/true);
    CHECK_FALSE(got.identity);
    CHECK(got.num_nodes == 1001);
    CHECK(got.edges == Reference(with, dir / ("ref-" + odd)));
  }
}

TEST_CASE("ID map builder: a full disk while spilling names the file and leaves nothing") {
  testing::TempDir dir;
  const RawEdges edges =
      MakeEdges(20000, 5000, 9, [](uint64_t i) { return "id" + std::to_string(i); });
  for (uint64_t fault_op : {0, 3, 12}) {
    CAPTURE(fault_op);
    IdMapBuilderOptions o;
    o.memory_bytes = 32 << 10;
    o.spill_parent_dir = dir.path();
    Status st;
    {
      auto b = IdMapBuilder::Create(o);
      REQUIRE(b.ok());
      io::ScopedWriteFaults faults({{io::WriteFaultKind::kEnospc, fault_op, 1 << 20}});
      for (const auto& [s, d] : edges) {
        st = (*b)->Add(s, d);
        if (!st.ok()) break;
      }
      if (st.ok()) st = (*b)->Finish(dir / "map");
    }
    REQUIRE_FALSE(st.ok());
    CHECK(st.code() == StatusCode::kResourceExhausted);
    CHECK(st.message().find("spill file") != std::string::npos);
    CHECK(fs::is_empty(dir.path()));
  }
}
