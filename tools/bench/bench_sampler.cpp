// Times NeighborSampler::Sample on a dataset's graph held in memory: `batches` training batches of
// `batch` seeds with the given fanouts, on one thread, and prints ms per batch, sampled edges and
// input nodes per batch. The sampler is the CPU stage that feeds the GPU; this isolates it.
// Not part of the build; compile by hand (see BENCHMARKS.md, "Sampler"):
//   g++ -O2 -std=c++20 -Iinclude -I. tools/bench/bench_sampler.cpp build/libskiff_core.a \
//       $(pkg-config --libs liburing libxxhash libzip) -lrocksdb -lz -lopenblas -lpthread \
//       -o build/bench_sampler
//   build/bench_sampler DATASET [fanouts=15,10,5] [batch=1024] [batches=20]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "skiff/format/dataset.h"
#include "skiff/sampler/graph_source.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/train/batch_plan.h"

using namespace skiff;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DATASET [fanouts] [batch] [batches]\n", argv[0]);
    return 2;
  }
  auto ds = format::Dataset::Open(argv[1]);
  if (!ds.ok()) return std::fprintf(stderr, "%s\n", ds.status().ToString().c_str()), 1;
  auto graph = sampler::InMemoryGraph::Load(**ds);
  if (!graph.ok()) return std::fprintf(stderr, "%s\n", graph.status().ToString().c_str()), 1;
  auto fanouts = sampler::ParseFanouts(argc > 2 ? argv[2] : "15,10,5");
  if (!fanouts.ok()) return 1;
  const int64_t batch_size = argc > 3 ? std::atoll(argv[3]) : 1024;
  const int batches = argc > 4 ? std::atoi(argv[4]) : 20;
  auto train = (*ds)->LoadSplit(format::kTrainFile);
  if (!train.ok()) return 1;
  sampler::NeighborSampler sampler(**graph, *fanouts, /*record_degrees=*/false);
  const auto plan = train::PlanBatches(*train, batch_size, true, 1, 0);
  sampler::MiniBatch mb;
  double edges = 0, inputs = 0;
  // FNV-1a over every batch's input nodes and block CSRs: equal when a change draws the same
  // batches.
  uint64_t checksum = 1469598103934665603ull;
  auto mix = [&checksum](int64_t x) {
    checksum = (checksum ^ static_cast<uint64_t>(x)) * 1099511628211ull;
  };
  const int n = std::min<int>(batches, static_cast<int>(plan.size()));
  SKIFF_CHECK(sampler.Sample(plan[0], 7, &mb).ok());  // warm-up: the thread's ID map
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    SKIFF_CHECK(sampler.Sample(plan[static_cast<size_t>(i)], static_cast<uint64_t>(i), &mb).ok());
    for (const auto& b : mb.blocks) edges += static_cast<double>(b.num_edges());
    for (int64_t v : mb.input_nodes) mix(v);
    for (const auto& b : mb.blocks) {
      for (int64_t x : b.indptr) mix(x);
      for (int32_t x : b.indices) mix(x);
    }
    inputs += static_cast<double>(mb.input_nodes.size());
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "sampler: %.2f ms per batch, %.0f edges and %.0f input nodes per batch (%d batches), "
      "checksum %016llx\n",
      1e3 * s / n, edges / n, inputs / n, n, static_cast<unsigned long long>(checksum));
  return 0;
}
