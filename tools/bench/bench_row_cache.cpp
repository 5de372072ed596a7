// What the CUDA model's device row cache (model::RowSlots, docs/cuda.md "A row cache") would save
// on a dataset's training batches, measured on the host: the share of input rows found in a cache
// of each given capacity (and so the rows a batch still uploads), and the host's cost of indexing a
// batch. Batches are the training pass's: every training node once per epoch in the in-memory
// order, sampled with NeighborSampler; the cache persists across epochs as in a run. Not part of
// the build; compile by hand (see BENCHMARKS.md, "Features larger than the device"):
//   g++ -O2 -std=c++20 -Iinclude -I. tools/bench/bench_row_cache.cpp build/libskiff_core.a \
//       $(pkg-config --libs liburing libxxhash libzip) -lrocksdb -lz -lopenblas -lpthread \
//       -o build/bench_row_cache
//   build/bench_row_cache DATASET FANOUTS BATCH EPOCHS CAPACITY_SHARE...
// e.g. build/bench_row_cache /var/tmp/g1m 15,10,5 1024 2 0.125 0.25 0.5
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/model/row_slots.h"
#include "skiff/sampler/graph_source.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/train/batch_plan.h"

using namespace skiff;

namespace {

int Fail(const Status& s) {
  std::fprintf(stderr, "%s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s DATASET FANOUTS BATCH EPOCHS CAPACITY_SHARE...\n", argv[0]);
    return 2;
  }
  auto ds = format::Dataset::Open(argv[1]);
  if (!ds.ok()) return Fail(ds.status());
  auto graph = sampler::InMemoryGraph::Load(**ds);
  if (!graph.ok()) return Fail(graph.status());
  auto fanouts = sampler::ParseFanouts(argv[2]);
  if (!fanouts.ok()) return Fail(fanouts.status());
  const int64_t batch_size = std::atoll(argv[3]);
  const int epochs = std::atoi(argv[4]);
  auto train = (*ds)->LoadSplit(format::kTrainFile);
  if (!train.ok()) return Fail(train.status());
  const int64_t num_nodes = (*ds)->manifest().num_nodes;

  // Sample every epoch's batches once; each capacity then replays the same input node lists.
  sampler::NeighborSampler sampler(**graph, *fanouts, /*record_degrees=*/false);
  std::vector<std::vector<int64_t>> inputs;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    const auto plan = train::PlanBatches(*train, batch_size, true, 1, static_cast<uint64_t>(epoch));
    sampler::MiniBatch mb;
    for (size_t i = 0; i < plan.size(); ++i) {
      const Status st = sampler.Sample(plan[i], 1000003 * static_cast<uint64_t>(epoch) + i, &mb);
      if (!st.ok()) return Fail(st);
      inputs.push_back(mb.input_nodes);
    }
  }
  double rows = 0;
  for (const auto& ids : inputs) rows += static_cast<double>(ids.size());
  std::printf("%zu batches of %.0f input rows on average, %lld nodes\n", inputs.size(),
              rows / static_cast<double>(inputs.size()), static_cast<long long>(num_nodes));

  for (int a = 5; a < argc; ++a) {
    const double share = std::atof(argv[a]);
    const auto capacity = static_cast<int64_t>(share * static_cast<double>(num_nodes));
    model::RowSlots slots(num_nodes, capacity);
    std::vector<int64_t> slot_of, missing;
    uint64_t declined = 0, last_epoch_hits = 0, last_epoch_rows = 0;
    const size_t per_epoch = inputs.size() / static_cast<size_t>(epochs);
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t b = 0; b < inputs.size(); ++b) {
      missing.clear();
      auto assigned = slots.Assign(inputs[b], &slot_of, &missing);
      if (!assigned.ok()) return Fail(assigned.status());
      if (!*assigned) ++declined;
      if (b >= inputs.size() - per_epoch) {
        last_epoch_rows += inputs[b].size();
        last_epoch_hits += *assigned ? inputs[b].size() - missing.size() : 0;
      }
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double total = static_cast<double>(slots.hits() + slots.misses());
    std::printf(
        "cache %.3f of the nodes (%lld rows): %.1f%% of input rows hit over all epochs, %.1f%% in "
        "the last; %llu batches larger than the cache; %.2f ms per batch to index (%.1f ns per "
        "row)\n",
        share, static_cast<long long>(capacity),
        total > 0 ? 100.0 * static_cast<double>(slots.hits()) / total : 0.0,
        last_epoch_rows > 0
            ? 100.0 * static_cast<double>(last_epoch_hits) / static_cast<double>(last_epoch_rows)
            : 0.0,
        static_cast<unsigned long long>(declined), 1e3 * s / static_cast<double>(inputs.size()),
        1e9 * s / rows);
  }
  return 0;
}
