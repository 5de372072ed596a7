// Out-of-core pipeline: BufferedGraph + EpochRunner over a real (small) dataset on disk, read
// through the buffer pool under budgets that force evictions, compared with the in-memory arrays.
#include <doctest/doctest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include "skiff/format/dataset.h"
#include "skiff/half.h"
#include "skiff/pipeline/buffered_graph.h"
#include "skiff/pipeline/disk_sources.h"
#include "skiff/pipeline/epoch_plan.h"
#include "skiff/pipeline/epoch_runner.h"
#include "skiff/pipeline/hot_row_cache.h"
#include "skiff/pipeline/node_loader.h"
#include "skiff/pipeline/out_of_core.h"
#include "skiff/pipeline/resident_graph_source.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/storage/buffer_pool.h"
#include "skiff/storage/dataset_partition_source.h"
#include "skiff/train/batch_plan.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using namespace skiff::pipeline;

namespace {

// The pool options OutOfCore uses (its fine-read scratch), for budgets computed by hand.
storage::BufferPoolOptions OutOfCorePoolOptions(const format::Manifest& manifest) {
  storage::BufferPoolOptions o;
  o.fine_read_scratch_bytes = OutOfCore::FineReadScratchBytes(manifest);
  return o;
}

constexpr int64_t kNodes = 900;
constexpr int64_t kDim = 12;
constexpr int64_t kNodesPerPartition = 60;  // 15 partitions

uint64_t Mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A random undirected graph with skewed degrees (a few hubs), written as a Skiff dataset.
Status WriteGraph(const std::string& dir, format::DType feature_dtype) {
  std::vector<std::set<int32_t>> adj(kNodes);
  for (int64_t v = 0; v < kNodes; ++v) {
    const int64_t degree = (v % 97 == 0) ? 150 : 2 + static_cast<int64_t>(Mix(v) % 6);
    for (int64_t j = 0; j < degree; ++j) {
      const auto u = static_cast<int32_t>(Mix(v * 1000 + j) % kNodes);
      if (u == v) continue;
      adj[v].insert(u);
      adj[u].insert(static_cast<int32_t>(v));
    }
  }
  SKIFF_ASSIGN_OR_RETURN(auto w, format::DatasetWriter::Create(dir));
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> nbrs;
  for (const auto& list : adj) {
    nbrs.insert(nbrs.end(), list.begin(), list.end());
    offsets.push_back(static_cast<int64_t>(nbrs.size()));
  }
  auto& m = w->manifest();
  m.name = "ooc-test";
  m.num_nodes = kNodes;
  m.num_edges = static_cast<int64_t>(nbrs.size());
  m.undirected = true;
  m.feature_dim = kDim;
  m.feature_dtype = feature_dtype;
  m.num_classes = 3;
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kOffsetsFile, offsets.data(), offsets.size() * 8));
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kNeighborsFile, nbrs.data(), nbrs.size() * 4));
  std::vector<float> feats(kNodes * kDim);
  for (size_t i = 0; i < feats.size(); ++i) feats[i] = static_cast<float>(i % 1013) * 0.25f;
  if (feature_dtype == format::DType::kFloat32) {
    SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kFeaturesFile, feats.data(), feats.size() * 4));
  } else {
    std::vector<uint16_t> half(feats.size());
    for (size_t i = 0; i < half.size(); ++i) half[i] = FloatToHalf(feats[i]);
    SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kFeaturesFile, half.data(), half.size() * 2));
  }
  std::vector<int32_t> labels(kNodes);
  std::vector<int64_t> train, valid, test;
  for (int64_t v = 0; v < kNodes; ++v) {
    labels[v] = static_cast<int32_t>(v % 3);
    (v % 5 < 3 ? train : v % 5 == 3 ? valid : test).push_back(v);
  }
  m.train_count = static_cast<int64_t>(train.size());
  m.valid_count = static_cast<int64_t>(valid.size());
  m.test_count = static_cast<int64_t>(test.size());
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kLabelsFile, labels.data(), labels.size() * 4));
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kTrainFile, train.data(), train.size() * 8));
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kValidFile, valid.data(), valid.size() * 8));
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kTestFile, test.data(), test.size() * 8));
  return w->Commit();
}

// A small deterministic 2-hop sampler over any neighbour provider: per node, `fanout` draws (with
// replacement) chosen by a hash of (seed, node, draw). Enough to tell whether two graph views
// return the same adjacency lists; the production sampler lives in the training core.
template <typename NeighborsFn>
Status TestSample(const NeighborsFn& neighbors, std::span<const int64_t> seeds, uint64_t seed,
                  sampler::MiniBatch* batch) {
  batch->seeds.assign(seeds.begin(), seeds.end());
  batch->input_nodes.assign(seeds.begin(), seeds.end());
  std::unordered_map<int64_t, int32_t> local;
  for (size_t i = 0; i < seeds.size(); ++i) local.emplace(seeds[i], static_cast<int32_t>(i));
  std::vector<int64_t> frontier(seeds.begin(), seeds.end());
  std::vector<int64_t> indptr, nbrs;
  for (int fanout : {4, 3}) {
    SKIFF_RETURN_IF_ERROR(neighbors(frontier, &indptr, &nbrs));
    std::vector<int64_t> next;
    sampler::Block block;
    block.num_dst = static_cast<int64_t>(frontier.size());
    block.indptr.push_back(0);
    for (size_t i = 0; i < frontier.size(); ++i) {
      const int64_t degree = indptr[i + 1] - indptr[i];
      for (int d = 0; d < fanout && degree > 0; ++d) {
        const int64_t u =
            nbrs[indptr[i] + static_cast<int64_t>(Mix(seed ^ Mix(frontier[i] * 31 + d)) % degree)];
        auto [it, inserted] = local.emplace(u, static_cast<int32_t>(batch->input_nodes.size()));
        if (inserted) {
          batch->input_nodes.push_back(u);
          next.push_back(u);
        }
        block.indices.push_back(it->second);
      }
      block.indptr.push_back(static_cast<int64_t>(block.indices.size()));
    }
    block.num_src = static_cast<int64_t>(batch->input_nodes.size());
    batch->blocks.push_back(std::move(block));
    frontier = std::move(next);
  }
  return Status::Ok();
}

struct Fixture {
  testing::TempDir tmp;
  std::unique_ptr<format::Dataset> dataset;
  std::unique_ptr<storage::DatasetPartitionSource> source;
  std::vector<int64_t> offsets, neighbors;
  std::vector<float> features;
  std::vector<std::vector<int64_t>> train_by_partition;

  explicit Fixture(format::DType dtype = format::DType::kFloat32) {
    REQUIRE(WriteGraph(tmp / "ds", dtype).ok());
    auto ds = format::Dataset::Open(tmp / "ds");
    REQUIRE(ds.ok());
    dataset = std::move(ds).value();
    auto src = storage::DatasetPartitionSource::Open(
        dataset.get(), {.direct = true, .nodes_per_partition = kNodesPerPartition});
    REQUIRE(src.ok());
    source = std::move(src).value();
    offsets = *dataset->LoadOffsets();
    neighbors = *dataset->LoadNeighbors();
    features = *dataset->LoadFeatures();
    train_by_partition.resize(source->num_partitions());
    const std::vector<int64_t> train = *dataset->LoadSplit(format::kTrainFile);
    for (int64_t v : train) {
      train_by_partition[source->partition_of(v)].push_back(v);
    }
  }

  // A resident set with no partition in it: every list is read fine-grained.
  ResidentSet NothingResident() const {
    return ResidentSet(
        std::vector<std::shared_ptr<const storage::PartitionPin>>(source->num_partitions()));
  }

  std::unique_ptr<storage::BufferPool> MakePool(
      uint32_t slots, std::shared_ptr<storage::FaultInjector> faults = {}) {
    storage::BufferPoolOptions opt;
    opt.min_resident_partitions = 2;
    opt.prefetch = false;
    opt.engine.faults = std::move(faults);
    opt.budget_bytes = storage::BufferPool::BudgetFor(*source, slots, opt);
    auto pool = storage::BufferPool::Create(source.get(), opt);
    REQUIRE(pool.ok());
    REQUIRE(pool.value()->num_slots() == slots);
    return std::move(pool).value();
  }

  Status MemoryNeighbors(std::span<const int64_t> nodes, std::vector<int64_t>* indptr,
                         std::vector<int64_t>* out) const {
    indptr->assign(1, 0);
    out->clear();
    for (int64_t v : nodes) {
      out->insert(out->end(), neighbors.begin() + offsets[v], neighbors.begin() + offsets[v + 1]);
      indptr->push_back(static_cast<int64_t>(out->size()));
    }
    return Status::Ok();
  }
};

struct Recorded {
  std::vector<int64_t> seeds, input_nodes;
  std::vector<int32_t> indices;
  std::vector<float> features;
};

// Runs one epoch of `plan` and records every batch as compute sees it.
Result<EpochReport> RunAndRecord(BufferedGraph& graph, const EpochPlan& plan, uint64_t epoch,
                                 std::vector<Recorded>* out, int sample_threads = 3,
                                 uint64_t batch_allowance = 0, uint64_t expected_batch = 0,
                                 uint64_t expected_held = 0) {
  EpochRunner runner(&graph, {.batch_size = 16,
                              .seed = 5,
                              .epoch = epoch,
                              .sample_threads = sample_threads,
                              .gather_threads = 2,
                              .batch_allowance_bytes = batch_allowance,
                              .expected_batch_bytes = expected_batch,
                              .expected_held_bytes = expected_held});
  auto sample = [](const BatchGraph& view, std::span<const int64_t> seeds, uint64_t seed,
                   sampler::MiniBatch* batch) {
    return TestSample([&](auto nodes, auto* i, auto* n) { return view.Neighbors(nodes, i, n); },
                      seeds, seed, batch);
  };
  out->clear();
  auto compute = [&](PreparedBatch& b) -> Status {
    if (b.index != static_cast<int64_t>(out->size())) return Status::Internal("out of order");
    Recorded r{b.batch.seeds, b.batch.input_nodes, {}, {b.features.begin(), b.features.end()}};
    for (const auto& block : b.batch.blocks) {
      r.indices.insert(r.indices.end(), block.indices.begin(), block.indices.end());
    }
    out->push_back(std::move(r));
    return Status::Ok();
  };
  return runner.Run(plan, sample, compute);
}

EpochPlan Plan(const Fixture& f, uint32_t capacity, uint64_t epoch) {
  auto plan = EpochPlan::Build(f.train_by_partition,
                               {.buffer_capacity = capacity, .seed = 5, .epoch = epoch});
  REQUIRE(plan.ok());
  return std::move(plan).value();
}

// Checks that every input node of every batch lies in its buffer state's resident partitions;
// `inputs_of(i)` is batch i's input_nodes, batches in plan order (batch size 16).
template <typename InputsOf>
void CheckInputsResident(const Fixture& f, const EpochPlan& plan, InputsOf inputs_of) {
  size_t index = 0;
  for (size_t s = 0; s < plan.states().size(); ++s) {
    const auto& resident = plan.states()[s].resident;
    for (size_t b = 0; b < plan.Batches(s, 16).size(); ++b, ++index) {
      for (int64_t v : inputs_of(index)) {
        CHECK(std::binary_search(resident.begin(), resident.end(), f.source->partition_of(v)));
      }
    }
  }
}

}  // namespace

TEST_CASE("ooc pipeline: a tiny budget gives the same batches as the in-memory graph (exact)") {
  for (auto dtype : {format::DType::kFloat32, format::DType::kFloat16}) {
    Fixture f(dtype);
    const uint32_t k = f.source->num_partitions();
    REQUIRE(k == 15);
    auto pool = f.MakePool(3);  // 3 of 15 partitions: a plan of 2 resident + 1 loading
    BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
    for (uint64_t epoch = 0; epoch < 2; ++epoch) {
      const EpochPlan plan = Plan(f, 2, epoch);
      std::vector<Recorded> got;
      auto report = RunAndRecord(graph, plan, epoch, &got);
      REQUIRE_MESSAGE(report.ok(), report.status().ToString());
      // Every partition loaded (but the 3 still resident from the previous epoch), with evictions.
      CHECK(report->io.partition_loads >= (epoch == 0 ? k : k - 3));
      CHECK(report->io.evictions >= k - 3);
      CHECK(report->io.fine_adjacency > 0);  // non-resident neighbours were read fine-grained
      CHECK(report->io.read_amplification > 0);

      // Reference: the same plan, sampled from the in-memory CSR, features from the array.
      size_t index = 0;
      std::multiset<int64_t> seen;
      for (size_t s = 0; s < plan.states().size(); ++s) {
        for (auto seeds : plan.Batches(s, 16)) {
          REQUIRE(index < got.size());
          sampler::MiniBatch expected;
          REQUIRE(TestSample([&](auto n, auto* i, auto* o) { return f.MemoryNeighbors(n, i, o); },
                             seeds, BatchSampleSeed(5, 0, epoch, static_cast<int64_t>(index)),
                             &expected)
                      .ok());
          const Recorded& r = got[index];
          CHECK(r.seeds == expected.seeds);
          CHECK(r.input_nodes == expected.input_nodes);
          std::vector<int32_t> indices;
          for (const auto& block : expected.blocks) {
            indices.insert(indices.end(), block.indices.begin(), block.indices.end());
          }
          CHECK(r.indices == indices);
          REQUIRE(r.features.size() == expected.input_nodes.size() * kDim);
          bool same = true;
          for (size_t i = 0; i < expected.input_nodes.size(); ++i) {
            for (int64_t d = 0; d < kDim; ++d) {
              same &= r.features[i * kDim + d] == f.features[expected.input_nodes[i] * kDim + d];
            }
          }
          CHECK(same);
          seen.insert(r.seeds.begin(), r.seeds.end());
          ++index;
        }
      }
      CHECK(index == got.size());
      // Every training node exactly once.
      std::multiset<int64_t> train;
      for (const auto& part : f.train_by_partition) train.insert(part.begin(), part.end());
      CHECK(seen == train);
    }
  }
}

TEST_CASE("ooc pipeline: the result does not depend on the budget or on thread timing") {
  Fixture f;
  const uint32_t k = f.source->num_partitions();
  const EpochPlan plan = Plan(f, 2, 3);
  std::vector<Recorded> small, large;
  {
    auto pool = f.MakePool(3);
    BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
    REQUIRE(RunAndRecord(graph, plan, 3, &small, 1).ok());
  }
  {
    auto pool = f.MakePool(k);  // every partition fits (the plan still keeps 2 pinned at a time)
    BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
    REQUIRE(RunAndRecord(graph, plan, 3, &large, 4).ok());
  }
  REQUIRE(small.size() == large.size());
  for (size_t i = 0; i < small.size(); ++i) {
    CHECK(small[i].input_nodes == large[i].input_nodes);
    CHECK(small[i].indices == large[i].indices);
    CHECK(small[i].features == large[i].features);
  }
}

TEST_CASE("ooc pipeline: sampled batches correct an over-estimated batch size at admission") {
  Fixture f;
  const EpochPlan plan = Plan(f, 3, 2);
  auto pool = f.MakePool(4);
  BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
  std::vector<Recorded> free_run, fixed_estimate, corrected;
  auto unlimited = RunAndRecord(graph, plan, 2, &free_run, 3);
  REQUIRE(unlimited.ok());
  auto probe = RunAndRecord(graph, plan, 2, &fixed_estimate, 3, /*allowance=*/1, /*expected=*/1);
  REQUIRE(probe.ok());
  const uint64_t largest = probe->peak_batch_bytes;
  REQUIRE(largest > 0);
  // The plan expects every batch to be as large as the whole allowance: one at a time...
  const uint64_t allowance = 6 * largest;
  auto as_planned = RunAndRecord(graph, plan, 2, &fixed_estimate, 3, allowance, allowance);
  REQUIRE(as_planned.ok());
  CHECK(as_planned->peak_batches_in_flight == 1);
  // ...unless it says how much of that a sampled batch holds: then the batches' actual sizes
  // admit more of them, still within the allowance (plus the one staging buffer kept for reuse).
  auto measured = RunAndRecord(graph, plan, 2, &corrected, 3, allowance, allowance,
                               /*expected_held=*/allowance);
  REQUIRE(measured.ok());
  CHECK(measured->peak_batches_in_flight > 1);
  CHECK(measured->peak_batch_bytes <= allowance + largest);
  REQUIRE(corrected.size() == free_run.size());
  for (size_t i = 0; i < free_run.size(); ++i) {
    CHECK(corrected[i].input_nodes == free_run[i].input_nodes);
    CHECK(corrected[i].features == free_run[i].features);
  }
}

TEST_CASE("ooc pipeline: a byte allowance bounds the batches in flight (backpressure)") {
  Fixture f;
  const EpochPlan plan = Plan(f, 3, 2);
  auto pool = f.MakePool(4);
  BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
  std::vector<Recorded> free_run, one_at_a_time, bounded;
  auto unlimited = RunAndRecord(graph, plan, 2, &free_run, 3);
  REQUIRE(unlimited.ok());
  // An allowance smaller than any batch: one batch at a time, never a refusal.
  auto tight = RunAndRecord(graph, plan, 2, &one_at_a_time, 3, /*allowance=*/1, /*expected=*/1);
  REQUIRE_MESSAGE(tight.ok(), tight.status().ToString());
  CHECK(tight->peak_batches_in_flight == 1);
  // Room for two of the largest batch (what one batch at a time peaked at): the bytes counted
  // never exceed it by more than the one staging buffer kept for reuse (counted both while kept
  // and, until it is taken, in the batch that will take it).
  const uint64_t largest = tight->peak_batch_bytes;
  CHECK(largest > 0);
  auto two = RunAndRecord(graph, plan, 2, &bounded, 3, 2 * largest, largest);
  REQUIRE(two.ok());
  CHECK(two->peak_batch_bytes <= 3 * largest);
  // Backpressure changes timing, never the batches.
  REQUIRE(free_run.size() == one_at_a_time.size());
  REQUIRE(free_run.size() == bounded.size());
  for (size_t i = 0; i < free_run.size(); ++i) {
    CHECK(free_run[i].input_nodes == one_at_a_time[i].input_nodes);
    CHECK(free_run[i].features == one_at_a_time[i].features);
    CHECK(free_run[i].features == bounded[i].features);
  }
}

TEST_CASE("ooc pipeline: fully resident runs read nothing after the first epoch") {
  Fixture f;
  const uint32_t k = f.source->num_partitions();
  auto pool = f.MakePool(k);
  BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
  std::vector<Recorded> got;
  auto first = RunAndRecord(graph, Plan(f, k, 0), 0, &got);
  REQUIRE(first.ok());
  CHECK(first->buffer_states == 1);
  CHECK(first->io.partition_loads == k);
  auto second = RunAndRecord(graph, Plan(f, k, 1), 1, &got);
  REQUIRE(second.ok());
  CHECK(second->io.bytes_read == 0);
  CHECK(second->io.partition_loads == 0);
  CHECK(second->ToJson().contains("stages"));
  CHECK(second->Describe().find("read amplification") != std::string::npos);
}

TEST_CASE("ooc pipeline: the hot row cache holds the highest-degree rows and serves them exactly") {
  Fixture f;
  auto pool = f.MakePool(3);
  const uint64_t row_bytes = kDim * 4;
  auto cache = HotRowCache::Build(*f.source, *pool, HotRowCache::BytesFor(12, row_bytes, kNodes));
  REQUIRE_MESSAGE(cache.ok(), cache.status().ToString());
  REQUIRE(cache->num_rows() == 12);
  CHECK(cache->bytes() <= HotRowCache::BytesFor(12, row_bytes, kNodes));
  // The 12 cached nodes have the highest degrees: none outside has a higher one.
  int64_t lowest_cached = INT64_MAX, highest_other = 0;
  for (int64_t v = 0; v < kNodes; ++v) {
    const int64_t d = f.offsets[v + 1] - f.offsets[v];
    if (const std::byte* row = cache->Find(v)) {
      lowest_cached = std::min(lowest_cached, d);
      std::vector<float> got(kDim);
      std::memcpy(got.data(), row, row_bytes);
      CHECK(std::equal(got.begin(), got.end(), f.features.begin() + v * kDim));
    } else {
      highest_other = std::max(highest_other, d);
    }
  }
  CHECK(lowest_cached >= highest_other);
  for (int64_t v = 0; v < kNodes; v += 97) CHECK(cache->Find(v) != nullptr);  // the hubs

  // Gathering through the cache gives the same features, with fewer fine-grained rows.
  const EpochPlan plan = Plan(f, 2, 1);
  std::vector<Recorded> plain, cached;
  uint64_t plain_fine = 0, cached_fine = 0;
  {
    BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
    auto report = RunAndRecord(graph, plan, 1, &plain);
    REQUIRE(report.ok());
    plain_fine = report->io.fine_rows;
    CHECK(report->io.cached_rows == 0);
  }
  {
    BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
    graph.set_row_cache(&*cache);
    auto report = RunAndRecord(graph, plan, 1, &cached);
    REQUIRE(report.ok());
    cached_fine = report->io.fine_rows;
    CHECK(report->io.cached_rows > 0);
    CHECK(cached_fine + report->io.cached_rows == plain_fine);
  }
  CHECK(cached_fine < plain_fine);
  REQUIRE(plain.size() == cached.size());
  for (size_t i = 0; i < plain.size(); ++i) CHECK(plain[i].features == cached[i].features);
}

TEST_CASE("ooc pipeline: in-buffer sampling never leaves the resident partitions") {
  Fixture f;
  auto pool = f.MakePool(4);
  BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kInBuffer);
  const EpochPlan plan = Plan(f, 3, 0);
  std::vector<Recorded> got;
  auto report = RunAndRecord(graph, plan, 0, &got);
  REQUIRE_MESSAGE(report.ok(), report.status().ToString());
  CHECK(report->io.fine_bytes_read == 0);
  CHECK(report->io.fine_rows == 0);
  CHECK(report->io.fine_adjacency == 0);
  CheckInputsResident(
      f, plan, [&](size_t i) -> const auto& { return got[i].input_nodes; });
}

TEST_CASE("ooc pipeline: injected I/O faults surface as errors, never a hang") {
  Fixture f;
  struct Case {
    storage::FaultKind kind;
    uint64_t first_read;
    StatusCode expected;
  };
  for (const Case& c : {Case{storage::FaultKind::kEio, 0, StatusCode::kIOError},
                        Case{storage::FaultKind::kEio, 7, StatusCode::kIOError},
                        Case{storage::FaultKind::kEio, 40, StatusCode::kIOError},
                        Case{storage::FaultKind::kCorruptByte, 5, StatusCode::kCorruption}}) {
    CAPTURE(c.first_read);
    auto faults = std::make_shared<storage::FaultInjector>();
    faults->AddRule({.kind = c.kind, .first_read = c.first_read, .count = 1000000});
    auto pool = f.MakePool(3, faults);
    BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
    std::vector<Recorded> got;
    auto report = RunAndRecord(graph, Plan(f, 2, 0), 0, &got);
    REQUIRE_FALSE(report.ok());
    CHECK(report.status().code() == c.expected);
    CHECK_MESSAGE(report.status().message().find(f.dataset->dir()) != std::string::npos,
                  report.status().ToString());
  }
}

TEST_CASE("ooc pipeline: an error in the compute callback stops the epoch cleanly") {
  Fixture f;
  auto pool = f.MakePool(3);
  BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
  EpochRunner runner(&graph, {.batch_size = 8, .sample_threads = 2});
  int calls = 0;
  auto sample = [](const BatchGraph& view, std::span<const int64_t> seeds, uint64_t seed,
                   sampler::MiniBatch* batch) {
    return TestSample([&](auto nodes, auto* i, auto* n) { return view.Neighbors(nodes, i, n); },
                      seeds, seed, batch);
  };
  auto report = runner.Run(Plan(f, 2, 0), sample, [&](PreparedBatch&) -> Status {
    return ++calls == 5 ? Status::Internal("loss is NaN") : Status::Ok();
  });
  REQUIRE_FALSE(report.ok());
  CHECK(report.status().message().find("NaN") != std::string::npos);
  CHECK(calls == 5);
}

TEST_CASE("ooc pipeline: OutOfCore plans the budget, refuses one too small, covers every split") {
  Fixture f;
  OutOfCoreOptions options;
  options.batch_size = 16;
  options.fanouts = {4, 3};
  options.model = {.in_dim = kDim, .hidden = 16, .num_classes = 3, .num_parameters = 1000};
  options.nodes_per_partition = kNodesPerPartition;
  options.memory_bytes = 64 << 10;
  auto refused = OutOfCore::Create(f.dataset.get(), options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kResourceExhausted);
  CHECK(refused.status().message().find("needs at least") != std::string::npos);

  // A budget for the fixed part and 4 slots' worth: half of it becomes the hot row cache, the rest
  // 2 slots (1 resident + 1 loading).
  options.memory_bytes = 256ull << 20;
  auto big = OutOfCore::Create(f.dataset.get(), options);
  REQUIRE(big.ok());
  CHECK((*big)->plan_capacity() == 15);  // everything fits
  const MemoryPlan& mp = (*big)->memory_plan();
  options.memory_bytes =
      mp.fixed_bytes - mp.batch_allowance + mp.batch_bytes +
      storage::BufferPool::BudgetFor(*f.source, 4, OutOfCorePoolOptions(f.dataset->manifest())) + 1;
  auto ooc = OutOfCore::Create(f.dataset.get(), options);
  REQUIRE_MESSAGE(ooc.ok(), ooc.status().ToString());
  CHECK((*ooc)->pool().num_slots() == 2);
  CHECK((*ooc)->plan_capacity() == 1);
  CHECK((*ooc)->row_cache().num_rows() > 0);
  CHECK((*ooc)->row_cache().bytes() <= (*ooc)->memory_plan().row_cache_bytes);
  CHECK((*ooc)->memory_plan().fixed_bytes + (*ooc)->pool().allocated_bytes() <=
        options.memory_bytes);
  CHECK((*ooc)->Describe().find("1 resident") != std::string::npos);
  CHECK((*ooc)->Describe().find("hot row cache") != std::string::npos);
  // Sampler threads: at most the batches the plan has in flight (each keeps its ID map).
  CHECK((*ooc)->SampleThreads() ==
        std::clamp((*ooc)->memory_plan().planned_in_flight, 1, options.sample_threads));
  {
    OutOfCoreOptions many = options;
    many.sample_threads = 64;
    auto tight = OutOfCore::Create(f.dataset.get(), many);
    REQUIRE(tight.ok());
    CHECK((*tight)->SampleThreads() == (*tight)->memory_plan().planned_in_flight);
    CHECK((*tight)->SampleThreads() < 64);
    many.memory_bytes = 0;  // no budget: every thread asked for
    auto unbounded = OutOfCore::Create(f.dataset.get(), many);
    REQUIRE(unbounded.ok());
    CHECK((*unbounded)->SampleThreads() == 64);
  }

  auto sample = [](const BatchGraph& view, std::span<const int64_t> seeds, uint64_t seed,
                   sampler::MiniBatch* batch) {
    return TestSample([&](auto nodes, auto* i, auto* n) { return view.Neighbors(nodes, i, n); },
                      seeds, seed, batch);
  };
  for (const char* file : {format::kTrainFile, format::kValidFile, format::kTestFile}) {
    const std::vector<int64_t> nodes = *f.dataset->LoadSplit(file);
    std::multiset<int64_t> seen;
    auto report = (*ooc)->RunPass(
        nodes, {.batch_size = 16, .seed = 1, .stream = 3, .epoch = 0, .resident_order = {}}, sample,
        [&](PreparedBatch& b) -> Status {
          seen.insert(b.batch.seeds.begin(), b.batch.seeds.end());
          return Status::Ok();
        });
    REQUIRE_MESSAGE(report.ok(), report.status().ToString());
    CHECK(seen == std::multiset<int64_t>(nodes.begin(), nodes.end()));
  }

  // The disk sources read exactly what the dataset holds.
  const DiskGraphSource disk_graph((*ooc)->exact_graph());
  const DiskFeatureSource disk_features((*ooc)->exact_graph());
  std::vector<int64_t> row;
  for (int64_t v : {0, 97, 500, 899}) {
    REQUIRE(disk_graph.Neighbors(v, &row).ok());
    CHECK(row == std::vector<int64_t>(f.neighbors.begin() + f.offsets[v],
                                      f.neighbors.begin() + f.offsets[v + 1]));
    std::vector<float> x(kDim);
    const int64_t node[1] = {v};
    REQUIRE(disk_features.Gather(node, x.data()).ok());
    CHECK(x ==
          std::vector<float>(f.features.begin() + v * kDim, f.features.begin() + (v + 1) * kDim));
  }
}

namespace {
// SampleFn running the training core's NeighborSampler over the batch's ResidentGraphSource.
SampleFn ProductionSampler(std::vector<int> fanouts, bool prepare_hops) {
  return [fanouts, prepare_hops](const BatchGraph& view, std::span<const int64_t> seeds,
                                 uint64_t seed, sampler::MiniBatch* batch) -> Status {
    if (prepare_hops) {
      ResidentGraphSource source(view.graph(), view.resident(), seeds,
                                 static_cast<int>(fanouts.size()));
      return sampler::NeighborSampler(source, fanouts).Sample(seeds, seed, batch);
    }
    ResidentGraphSource source(view.graph(), view.resident());
    return sampler::NeighborSampler(source, fanouts).Sample(seeds, seed, batch);
  };
}
}  // namespace

TEST_CASE(
    "ooc pipeline: the training core's sampler draws the same batches from disk as in memory") {
  Fixture f;
  auto memory_graph = sampler::InMemoryGraph::FromCsr(f.offsets, f.neighbors);
  REQUIRE(memory_graph.ok());
  const std::vector<int> fanouts{5, 3};
  const sampler::NeighborSampler memory_sampler(**memory_graph, fanouts);
  const EpochPlan plan = Plan(f, 2, 1);
  for (bool prepare : {false, true}) {
    auto pool = f.MakePool(3);
    BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
    EpochRunner runner(&graph, {.batch_size = 16, .seed = 9, .epoch = 1, .sample_threads = 3});
    std::vector<sampler::MiniBatch> got;
    auto report = runner.Run(plan, ProductionSampler(fanouts, prepare), [&](PreparedBatch& b) {
      got.push_back(b.batch);
      return Status::Ok();
    });
    REQUIRE_MESSAGE(report.ok(), report.status().ToString());
    CHECK(report->io.fine_adjacency > 0);
    size_t index = 0;
    for (size_t s = 0; s < plan.states().size(); ++s) {
      for (auto seeds : plan.Batches(s, 16)) {
        sampler::MiniBatch expected;
        REQUIRE(memory_sampler
                    .Sample(seeds, BatchSampleSeed(9, 0, 1, static_cast<int64_t>(index)), &expected)
                    .ok());
        REQUIRE(index < got.size());
        CHECK(got[index].input_nodes == expected.input_nodes);
        REQUIRE(got[index].blocks.size() == expected.blocks.size());
        for (size_t l = 0; l < expected.blocks.size(); ++l) {
          CHECK(got[index].blocks[l].indptr == expected.blocks[l].indptr);
          CHECK(got[index].blocks[l].indices == expected.blocks[l].indices);
        }
        ++index;
      }
    }
    CHECK(index == got.size());
  }
}

TEST_CASE("ooc pipeline: in-buffer sampling with the training core's sampler stays resident") {
  Fixture f;
  auto pool = f.MakePool(4);
  BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kInBuffer);
  const EpochPlan plan = Plan(f, 3, 0);
  EpochRunner runner(&graph, {.batch_size = 16, .seed = 9, .sample_threads = 2});
  std::vector<sampler::MiniBatch> got;
  auto report = runner.Run(plan, ProductionSampler({5, 3}, false), [&](PreparedBatch& b) {
    got.push_back(b.batch);
    return Status::Ok();
  });
  REQUIRE_MESSAGE(report.ok(), report.status().ToString());
  CHECK(report->io.fine_bytes_read == 0);
  CheckInputsResident(
      f, plan, [&](size_t i) -> const auto& { return got[i].input_nodes; });
}

TEST_CASE("ooc pipeline: neighbour lists read with 32-bit ids are the 64-bit ones") {
  Fixture f;
  auto pool = f.MakePool(3);
  BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
  // No partition resident: every list is read fine-grained, in the order asked.
  const ResidentSet none = f.NothingResident();
  std::vector<int64_t> nodes;
  for (int64_t v = graph.num_nodes() - 1; v >= 0; v -= 3) nodes.push_back(v);
  std::vector<int64_t> indptr64, indptr32, expected_indptr, ids64, expected;
  std::vector<int32_t> ids32;
  REQUIRE(graph.Neighbors(none, nodes, &indptr64, &ids64).ok());
  REQUIRE(graph.Neighbors(none, nodes, &indptr32, &ids32).ok());
  REQUIRE(f.MemoryNeighbors(nodes, &expected_indptr, &expected).ok());
  CHECK(indptr64 == expected_indptr);
  CHECK(indptr32 == expected_indptr);
  CHECK(ids64 == expected);
  CHECK(std::vector<int64_t>(ids32.begin(), ids32.end()) == expected);
  CHECK_FALSE(expected.empty());
}

TEST_CASE("ooc pipeline: lists read ahead for the next group give its batches with fewer reads") {
  Fixture f;
  auto pool = f.MakePool(3);
  BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
  const ResidentSet none = f.NothingResident();
  const std::vector<int> fanouts{5, 3};
  // Two groups of two batches; the second group's seeds repeat one node.
  const std::vector<std::vector<int64_t>> first{{3, 40, 200, 511}, {77, 640, 12}};
  const std::vector<std::vector<int64_t>> second{{5, 300, 899, 41}, {620, 5, 150}};
  auto spans = [](const std::vector<std::vector<int64_t>>& group) {
    return std::vector<std::span<const int64_t>>(group.begin(), group.end());
  };
  auto flat = [](const std::vector<std::vector<int64_t>>& group) {
    std::vector<int64_t> out;
    for (const auto& b : group) out.insert(out.end(), b.begin(), b.end());
    return out;
  };
  const std::vector<uint64_t> rng{11, 12};
  auto sample = [&](const ResidentGraphSource& source,
                    const std::vector<std::vector<int64_t>>& group, uint64_t* lists_read) {
    std::vector<sampler::MiniBatch> batches(group.size());
    std::vector<sampler::MiniBatch*> out{&batches[0], &batches[1]};
    const uint64_t before = graph.counters().fine_adjacency;
    REQUIRE(sampler::NeighborSampler(source, fanouts).SampleGroup(spans(group), rng, out).ok());
    *lists_read = graph.counters().fine_adjacency - before;
    return batches;
  };
  uint64_t alone_reads = 0;
  const std::vector<int64_t> second_seeds = flat(second);
  const ResidentGraphSource alone(graph, none, second_seeds, 2);
  const std::vector<sampler::MiniBatch> expected = sample(alone, second, &alone_reads);

  ListsReadAhead ahead;
  uint64_t reads = 0;
  const std::vector<int64_t> first_seeds = flat(first);
  const ResidentGraphSource reading(graph, none, first_seeds, 2, &ahead, second_seeds);
  sample(reading, first, &reads);
  const std::set<int64_t> distinct(second_seeds.begin(), second_seeds.end());
  CHECK(ahead.size() == distinct.size());
  const ResidentGraphSource taking(graph, none, second_seeds, 2, &ahead, {});
  CHECK(ahead.size() == 0);  // taken, and nothing to read ahead
  const std::vector<sampler::MiniBatch> got = sample(taking, second, &reads);
  // Its seeds' lists were not read again (a read counts the lists that are not empty).
  const auto listed = std::count_if(distinct.begin(), distinct.end(),
                                    [&](int64_t v) { return graph.source().degree(v) > 0; });
  CHECK(listed > 0);
  CHECK(reads + static_cast<uint64_t>(listed) == alone_reads);
  for (size_t b = 0; b < got.size(); ++b) {
    CHECK(got[b].input_nodes == expected[b].input_nodes);
    REQUIRE(got[b].blocks.size() == expected[b].blocks.size());
    for (size_t l = 0; l < got[b].blocks.size(); ++l) {
      CHECK(got[b].blocks[l].indptr == expected[b].blocks[l].indptr);
      CHECK(got[b].blocks[l].indices == expected[b].blocks[l].indices);
    }
  }
}

namespace {

SampleGroupFn TestSampleFn() {
  return OneByOne([](const BatchGraph& view, std::span<const int64_t> seeds, uint64_t seed,
                     sampler::MiniBatch* batch) {
    return TestSample([&](auto nodes, auto* i, auto* n) { return view.Neighbors(nodes, i, n); },
                      seeds, seed, batch);
  });
}

EpochRunnerOptions StreamOptions(uint64_t allowance = 0, bool admit_past_consumer = false) {
  return {.batch_size = 16,
          .seed = 5,
          .epoch = 2,
          .sample_threads = 3,
          .gather_threads = 2,
          .batch_allowance_bytes = allowance,
          .expected_batch_bytes = allowance > 0 ? uint64_t{1} : uint64_t{0},
          .admit_past_consumer = admit_past_consumer};
}

}  // namespace

TEST_CASE("pass stream: pulled batches are Run's, in order, whatever the consumer keeps") {
  Fixture f;
  const EpochPlan plan = Plan(f, 3, 2);
  auto pool = f.MakePool(4);
  BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
  std::vector<Recorded> pushed;
  REQUIRE(RunAndRecord(graph, plan, 2, &pushed).ok());

  EpochRunner runner(&graph, StreamOptions(0, /*admit_past_consumer=*/true));
  auto stream = runner.Start(plan, TestSampleFn());
  REQUIRE(stream.ok());
  CHECK((*stream)->num_batches() == static_cast<int64_t>(pushed.size()));
  // Keep every batch (as `list(loader)` would): the pass must not wait on them.
  std::vector<PreparedBatch> kept;
  while (true) {
    auto next = (*stream)->Next();
    REQUIRE_MESSAGE(next.ok(), next.status().ToString());
    if (!next->has_value()) break;
    kept.push_back(std::move(**next));
  }
  REQUIRE(kept.size() == pushed.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    CHECK(kept[i].index == static_cast<int64_t>(i));
    CHECK(kept[i].batch.input_nodes == pushed[i].input_nodes);
    CHECK(std::vector<float>(kept[i].features.begin(), kept[i].features.end()) ==
          pushed[i].features);
  }
  // Released in any order, after the pass ended.
  for (size_t i = kept.size(); i-- > 0;) (*stream)->Release(std::move(kept[i]));
  auto report = (*stream)->Finish();
  REQUIRE(report.ok());
  CHECK(report->batches == static_cast<int64_t>(pushed.size()));
  REQUIRE(report->stages.size() == 5);
  CHECK(report->stages.back().name == "compute");
  CHECK(report->stages.back().items == static_cast<int64_t>(pushed.size()));
}

TEST_CASE("pass stream: kept batches count against the allowance until released") {
  Fixture f;
  const EpochPlan plan = Plan(f, 3, 2);
  auto pool = f.MakePool(4);
  BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
  // An allowance below any batch: a consumer that binds the next batch before it drops the
  // previous one (a Python loop) gets each batch only once it waits for it -- never more than the
  // kept one and the one handed over exist.
  EpochRunner runner(&graph, StreamOptions(/*allowance=*/1, /*admit_past_consumer=*/true));
  auto stream = runner.Start(plan, TestSampleFn());
  REQUIRE(stream.ok());
  std::optional<PreparedBatch> previous;
  int64_t count = 0;
  while (true) {
    auto next = (*stream)->Next();
    REQUIRE(next.ok());
    if (!next->has_value()) break;
    if (previous.has_value()) (*stream)->Release(std::move(*previous));
    previous = std::move(**next);
    ++count;
  }
  (*stream)->Release(std::move(*previous));
  auto report = (*stream)->Finish();
  REQUIRE(report.ok());
  CHECK(report->batches == count);
  CHECK(report->peak_batches_in_flight <= 2);
}

TEST_CASE("pass stream: a consumer that stops early, or cancels from another thread, is not hung") {
  Fixture f;
  const EpochPlan plan = Plan(f, 2, 1);
  auto pool = f.MakePool(3);
  BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
  EpochRunner runner(&graph, StreamOptions(1));
  {
    auto stream = runner.Start(plan, TestSampleFn());
    REQUIRE(stream.ok());
    auto first = (*stream)->Next();
    REQUIRE(first.ok());
    REQUIRE(first->has_value());
    CHECK((*stream)->Finish().status().code() == StatusCode::kInvalidArgument);
    // Dropped with a batch still held and the stages blocked on the allowance: the destructor
    // cancels and joins.
  }
  auto stream = runner.Start(plan, TestSampleFn());
  REQUIRE(stream.ok());
  auto first = (*stream)->Next();
  REQUIRE(first.ok());
  std::thread canceller([&] { (*stream)->Cancel(Status::Aborted("stop here")); });
  canceller.join();
  Status error;
  for (int i = 0; i < 1000 && error.ok(); ++i) {
    auto next = (*stream)->Next();
    if (!next.ok())
      error = next.status();
    else if (next->has_value())
      (*stream)->Release(std::move(**next));
    else
      break;
  }
  CHECK(error.message() == "stop here");
  (*stream)->Release(std::move(**first));
}

TEST_CASE("pass stream: a timed wait returns without losing the batch") {
  Fixture f;
  const EpochPlan plan = Plan(f, 2, 1);
  auto pool = f.MakePool(3);
  BufferedGraph graph(f.source.get(), pool.get(), SamplingMode::kExact);
  EpochRunner runner(&graph, StreamOptions());
  auto stream = runner.Start(plan, TestSampleFn());
  REQUIRE(stream.ok());
  int64_t taken = 0;
  int timeouts = 0;
  while (true) {
    bool timed_out = false;
    auto next = (*stream)->Next(std::chrono::microseconds(50), &timed_out);
    REQUIRE(next.ok());
    if (timed_out) {
      ++timeouts;
      continue;
    }
    if (!next->has_value()) break;
    CHECK((*next)->index == taken);
    ++taken;
    (*stream)->Release(std::move(**next));
  }
  CHECK(taken == (*stream)->num_batches());
  CHECK((*stream)->Finish().ok());
}

TEST_CASE("node loader: a pass's batches in the Trainer's order, and SampleNow draws each alike") {
  Fixture f;
  auto loader = NodeLoader::Create(f.dataset.get(),
                                   {.fanouts = {3, 2}, .batch_size = 32, .threads = 2, .seed = 9});
  REQUIRE_MESSAGE(loader.ok(), loader.status().ToString());
  const std::vector<int64_t> train = *f.dataset->LoadSplit(format::kTrainFile);
  const std::vector<int32_t> labels = *f.dataset->LoadLabels();
  auto stream = (*loader)->Start(train, /*shuffle=*/true, /*stream=*/1, /*epoch=*/3);
  REQUIRE(stream.ok());
  const auto order = train::PlanBatches(train, 32, true, 9, 3);
  int64_t index = 0;
  while (true) {
    auto next = (*stream)->Next();
    REQUIRE(next.ok());
    if (!next->has_value()) break;
    const PreparedBatch& b = **next;
    REQUIRE(index < static_cast<int64_t>(order.size()));
    CHECK(b.batch.seeds == order[index]);
    for (size_t i = 0; i < b.batch.seeds.size(); ++i) {
      CHECK(b.batch.labels[i] == labels[b.batch.seeds[i]]);
    }
    // The rows are the file's.
    for (size_t i = 0; i < b.batch.input_nodes.size(); i += 7) {
      const int64_t v = b.batch.input_nodes[i];
      CHECK(std::equal(b.features.begin() + i * kDim, b.features.begin() + (i + 1) * kDim,
                       f.features.begin() + v * kDim));
    }
    sampler::MiniBatch now;
    REQUIRE((*loader)->SampleNow(b.batch.seeds, b.sample_seed, &now).ok());
    CHECK(now.input_nodes == b.batch.input_nodes);
    CHECK(now.labels == b.batch.labels);
    REQUIRE(now.blocks.size() == b.batch.blocks.size());
    for (size_t l = 0; l < now.blocks.size(); ++l) {
      CHECK(now.blocks[l].indices == b.batch.blocks[l].indices);
    }
    std::vector<float> rows(b.batch.input_nodes.size() * kDim);
    REQUIRE((*loader)->ReadRows(b.batch.input_nodes, rows.data()).ok());
    CHECK(std::equal(rows.begin(), rows.end(), b.features.begin()));
    (*stream)->Release(std::move(**next));
    ++index;
  }
  CHECK(index == static_cast<int64_t>(order.size()));
  const int64_t outside[] = {0, kNodes};
  CHECK((*loader)->ReadRows(outside, nullptr).code() == StatusCode::kInvalidArgument);
}

TEST_CASE(
    "epoch report: the physical limit is the larger of reading at the disk's rate and compute") {
  EpochReport report;
  report.wall_seconds = 6;
  report.stages = {{.name = "gather", .busy_seconds = 5.5}, {.name = "compute", .busy_seconds = 2}};
  CHECK(report.DescribePhysicalLimit().empty());  // nothing read: no line
  report.io.bytes_read = 10ull << 30;
  const std::string unknown = report.DescribePhysicalLimit();
  CHECK(unknown.find("physical limit: unknown") != std::string::npos);
  CHECK(unknown.find("compute busy 2.000s") != std::string::npos);
  report.disk_bytes_per_second = 2.0 * (1ull << 30);
  const std::string disk = report.DescribePhysicalLimit();
  CAPTURE(disk);
  CHECK(disk.find("5.000s of reading, compute busy 2.000s") != std::string::npos);
  CHECK(disk.find("took 1.20x the larger (bound by the disk)") != std::string::npos);
  CHECK(report.Describe().find(disk) != std::string::npos);
  CHECK(report.ToJson()["read_seconds_at_disk_rate"].get<double>() == doctest::Approx(5.0));
  report.stages[1].busy_seconds = 8;
  report.wall_seconds = 10;
  CHECK(report.DescribePhysicalLimit().find("took 1.25x the larger (bound by compute)") !=
        std::string::npos);
}
