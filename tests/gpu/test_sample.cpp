// The device sampler (kernels/cuda/sample.cuh, src/model/cuda/device_sampler.h) against its
// reference, the host sampler: for the same graph, fanouts, seeds and sampler seed, the batch must
// be the same bit for bit -- input nodes, and every block's indptr and indices -- because both
// draw every node through skiff/neighbor_draw.h. Graphs mix isolated nodes, rows at and around
// kMaskPositions (the bit-set path), long rows (the insertion sort), and a hub; fanouts cover 0,
// -1 (whole rows), fanouts at or above the degree, and nested layers of different widths. Many
// batches run back to back through the two output slots, so a map entry left behind by one batch
// shows up in the next. Augmented blocks (GAT's self-loops, GCN's weights from whole-graph
// degrees) are compared with BatchStaging's host construction (weights within 1e-6 relative).
// Then the CUDA model: training and evaluation steps on device-sampled batches follow the same
// steps on host-sampled batches (loss totals and parameters within 1e-4 of the largest magnitude).
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/csr_aggregate.h"
#include "kernels/cuda/sample.cuh"
#include "skiff/model/model.h"
#include "skiff/sampler/feature_source.h"
#include "skiff/sampler/graph_source.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "src/model/cuda/device_sampler.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/model_compare.h"

using namespace skiff;

namespace {

// A graph of `n` nodes whose degrees cycle through awkward values (0, 1, around 64, around 128,
// a few hundred), plus one hub linked to a tenth of the graph.
std::unique_ptr<sampler::InMemoryGraph> AwkwardGraph(int64_t n, uint64_t seed) {
  const int64_t degrees[] = {0, 1, 2, 5, 9, 15, 16, 63, 64, 65, 100, 127, 128, 129, 300, 7, 3};
  std::mt19937_64 rng(seed);
  std::vector<int64_t> offsets{0}, neighbors;
  for (int64_t v = 0; v < n; ++v) {
    const int64_t d = v == n / 2 ? n / 10 : degrees[static_cast<size_t>(v) % std::size(degrees)];
    for (int64_t e = 0; e < d; ++e) {
      // Mostly nearby nodes (as on a partitioned graph), some anywhere; repeats allowed.
      const int64_t near = v + static_cast<int64_t>(rng() % 201) - 100;
      neighbors.push_back(rng() % 4 == 0 ? static_cast<int64_t>(rng() % n)
                                         : std::clamp<int64_t>(near, 0, n - 1));
    }
    offsets.push_back(static_cast<int64_t>(neighbors.size()));
  }
  auto g = sampler::InMemoryGraph::FromCsr(std::move(offsets), std::move(neighbors));
  REQUIRE(g.ok());
  return std::move(g).value();
}

std::vector<int64_t> Seeds(int64_t n, int64_t count, uint64_t seed) {
  std::vector<int64_t> all(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) all[static_cast<size_t>(v)] = v;
  std::mt19937_64 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(static_cast<size_t>(count));
  return all;
}

template <typename T>
std::vector<T> Download(const T* at, int64_t count, cudaStream_t stream) {
  std::vector<T> host(static_cast<size_t>(count));
  if (count > 0) {
    SKIFF_REQUIRE_CUDA(
        cudaMemcpyAsync(host.data(), at, sizeof(T) * count, cudaMemcpyDeviceToHost, stream));
  }
  SKIFF_REQUIRE_CUDA(cudaStreamSynchronize(stream));
  return host;
}

// BatchStaging's host augmentation of `b` (self-loop first; GCN weights when `gcn`).
struct Augmented {
  std::vector<int64_t> indptr{0};
  std::vector<int32_t> indices;
  std::vector<float> weight;
};
Augmented AugmentOnHost(const sampler::Block& b, bool gcn) {
  Augmented a;
  std::vector<float> edge(b.indices.size()), self(static_cast<size_t>(b.num_dst));
  if (gcn) {
    cpu::GcnEdgeWeights(b.num_dst, b.num_src, b.indptr.data(), b.indices.data(),
                        b.src_degree.data(), edge.data(), self.data());
  }
  for (int64_t d = 0; d < b.num_dst; ++d) {
    a.indices.push_back(static_cast<int32_t>(d));
    if (gcn) a.weight.push_back(self[static_cast<size_t>(d)]);
    for (int64_t e = b.indptr[d]; e < b.indptr[d + 1]; ++e) {
      a.indices.push_back(b.indices[static_cast<size_t>(e)]);
      if (gcn) a.weight.push_back(edge[static_cast<size_t>(e)]);
    }
    a.indptr.push_back(static_cast<int64_t>(a.indices.size()));
  }
  return a;
}

// Samples `seeds` on the device and compares with the host sampler, block by block.
void CompareBatch(cuda::DeviceSampler& device, const sampler::GraphSource& graph,
                  const std::vector<int>& fanouts, const std::vector<int64_t>& seeds,
                  uint64_t sample_seed, cuda::BlockAugment augment,
                  const gpu_testing::TestStream& compute) {
  const bool gcn = augment == cuda::BlockAugment::kGcn;
  sampler::NeighborSampler host(graph, fanouts, /*record_degrees=*/gcn);
  sampler::MiniBatch expected;
  SKIFF_REQUIRE_OK(host.Sample(seeds, sample_seed, &expected));
  gpu_testing::DeviceBuffer<int64_t> seeds_dev(seeds, compute.get());
  auto sampled = device.Sample(seeds_dev.get(), static_cast<int64_t>(seeds.size()), fanouts,
                               sample_seed, augment, compute.get());
  SKIFF_REQUIRE_OK(sampled.status());
  compute.Sync();  // compute waited for the sampler: the result is complete
  REQUIRE(sampled->num_input == static_cast<int64_t>(expected.input_nodes.size()));
  CHECK(Download(sampled->input_ids, sampled->num_input, compute.get()) == expected.input_nodes);
  REQUIRE(sampled->blocks.size() == expected.blocks.size());
  for (size_t l = 0; l < expected.blocks.size(); ++l) {
    CAPTURE(l);
    const sampler::Block& want = expected.blocks[l];
    const cuda::DeviceBlock& got = sampled->blocks[l];
    CHECK(got.num_dst == want.num_dst);
    CHECK(got.num_src == want.num_src);
    const auto indptr = Download(got.indptr, got.num_dst + 1, compute.get());
    const auto indices = Download(got.indices, got.nnz, compute.get());
    if (augment == cuda::BlockAugment::kNone) {
      CHECK(indptr == want.indptr);
      CHECK(indices == want.indices);
      continue;
    }
    const Augmented a = AugmentOnHost(want, gcn);
    CHECK(indptr == a.indptr);
    CHECK(indices == a.indices);
    if (!gcn) continue;
    const auto weight = Download(got.edge_weight, got.nnz, compute.get());
    REQUIRE(weight.size() == a.weight.size());
    for (size_t e = 0; e < weight.size(); ++e) {
      CHECK(std::fabs(weight[e] - a.weight[e]) <= 1e-6f * std::fabs(a.weight[e]));
    }
  }
  SKIFF_REQUIRE_OK(device.Consumed(compute.get()));
}

}  // namespace

TEST_CASE("device sampler: batches equal the host sampler's, bit for bit") {
  const int64_t n = 20000;
  auto graph = AwkwardGraph(n, 3);
  // A small upload chunk: the graph crosses in many ranges.
  auto device = cuda::DeviceSampler::Create(*graph, 4096);
  SKIFF_REQUIRE_OK(device.status());
  gpu_testing::TestStream compute;
  const std::vector<std::vector<int>> fanout_sets = {{15, 10, 5}, {5, 10, 15}, {3, -1}, {0, 4},
                                                     {100, 25},   {70, 2},     {1},     {128},
                                                     {-1},        {2, 2, 2, 2}};
  uint64_t sample_seed = 1;
  for (const std::vector<int>& fanouts : fanout_sets) {
    CAPTURE(sampler::FanoutsToString(fanouts));
    for (int64_t count : {1, 7, 256, 1500}) {
      CAPTURE(count);
      const auto seeds = Seeds(n, count, sample_seed);
      CompareBatch(**device, *graph, fanouts, seeds, sample_seed++, cuda::BlockAugment::kNone,
                   compute);
    }
  }
  // The hub and an isolated node as seeds; the same batch twice gives the same result.
  const std::vector<int64_t> special{n / 2, 0, 17};
  CompareBatch(**device, *graph, {15, 10}, special, 99, cuda::BlockAugment::kNone, compute);
  CompareBatch(**device, *graph, {15, 10}, special, 99, cuda::BlockAugment::kNone, compute);
}

TEST_CASE("device sampler: augmented blocks equal BatchStaging's") {
  const int64_t n = 5000;
  auto graph = AwkwardGraph(n, 8);
  auto device = cuda::DeviceSampler::Create(*graph, 1 << 20);
  SKIFF_REQUIRE_OK(device.status());
  gpu_testing::TestStream compute;
  for (cuda::BlockAugment augment : {cuda::BlockAugment::kSelfLoop, cuda::BlockAugment::kGcn}) {
    CAPTURE(static_cast<int>(augment));
    for (uint64_t s = 0; s < 4; ++s) {
      CompareBatch(**device, *graph, {10, 5}, Seeds(n, 300, s), 40 + s, augment, compute);
    }
  }
}

TEST_CASE("device sampler: an inconsistent graph is refused, naming the entry") {
  struct BadCsr final : sampler::CsrSource {
    int64_t num_nodes() const override { return 3; }
    int64_t num_edges() const override { return 2; }
    Status ReadOffsets(int64_t first, int64_t count, int64_t* out) const override {
      const int64_t offsets[] = {0, 1, 2, 2};
      std::copy_n(offsets + first, count, out);
      return Status::Ok();
    }
    Status ReadNeighbors(int64_t first, int64_t count, int64_t* out) const override {
      const int64_t neighbors[] = {1, 7};  // 7 is not a node
      std::copy_n(neighbors + first, count, out);
      return Status::Ok();
    }
    std::string Describe() const override { return "a test graph"; }
  };
  auto device = cuda::DeviceSampler::Create(BadCsr{}, 1 << 20);
  REQUIRE(device.status().code() == StatusCode::kCorruption);
  CHECK(device.status().ToString().find("graph.neighbors entry 1") != std::string::npos);
}

namespace {

model::ModelConfig SampledConfig(model::ModelKind kind) {
  model::ModelConfig c;
  c.kind = kind;
  c.in_dim = 21;
  c.hidden_dim = 16;
  c.num_classes = 4;
  c.num_layers = 2;
  c.heads = 2;
  c.dropout = 0.3f;
  c.seed = 5;
  c.cuda_matmul = model::CudaMatmul::kFp32;
  return c;
}

}  // namespace

TEST_CASE("cuda model: device-sampled steps follow host-sampled steps") {
  const int64_t n = 3000;
  auto graph = AwkwardGraph(n, 12);
  for (model::ModelKind kind :
       {model::ModelKind::kSage, model::ModelKind::kGcn, model::ModelKind::kGat}) {
    CAPTURE(model::ModelKindName(kind));
    const model::ModelConfig c = SampledConfig(kind);
    auto table = sampler::InMemoryFeatures::FromMatrix(
        gpu_testing::RandomFloats(static_cast<size_t>(n * c.in_dim), 4), c.in_dim);
    REQUIRE(table.ok());
    auto on_host = model::Model::CreateCuda(c);
    auto on_device = model::Model::CreateCuda(c);
    REQUIRE_MESSAGE(on_host.ok(), on_host.status().ToString());
    REQUIRE_MESSAGE(on_device.ok(), on_device.status().ToString());
    for (auto* m : {&*on_host, &*on_device}) {
      auto held = (*m)->HoldFeatures(**table, 0);
      SKIFF_REQUIRE_OK(held.status());
      REQUIRE(*held);
    }
    // Graph not held yet: a batch to sample is refused.
    CHECK_FALSE((*on_device)->samples_on_device());
    auto too_wide = (*on_device)->HoldGraph(*graph, 0, 129);  // beyond kMaxDeviceSampleLength
    SKIFF_REQUIRE_OK(too_wide.status());
    CHECK_FALSE(*too_wide);
    auto held_graph = (*on_device)->HoldGraph(*graph, 0, 6);
    SKIFF_REQUIRE_OK(held_graph.status());
    REQUIRE(*held_graph);
    REQUIRE((*on_device)->samples_on_device());
    const std::vector<int> fanouts{6, 4};
    sampler::NeighborSampler host(*graph, fanouts, model::NeedsNodeDegrees(kind));
    model::Optimizer::Config oc;
    oc.lr = 0.01f;
    model::Optimizer opt_host(**on_host, oc), opt_device(**on_device, oc);
    std::mt19937_64 rng(9);
    for (int step = 0; step < 6; ++step) {
      const auto seeds = Seeds(n, 200, 70 + step);
      const uint64_t sample_seed = 1000 + static_cast<uint64_t>(step);
      sampler::MiniBatch sampled, seeds_only;
      SKIFF_REQUIRE_OK(host.Sample(seeds, sample_seed, &sampled));
      sampled.labels.resize(seeds.size());
      for (int32_t& label : sampled.labels) label = static_cast<int32_t>(rng() % 5) - 1;
      seeds_only.seeds = seeds;
      seeds_only.labels = sampled.labels;
      const model::DeviceSampling sample{.fanouts = &fanouts, .seed = sample_seed};
      const uint64_t dropout_seed = 300 + static_cast<uint64_t>(step);
      if (step < 5) {
        SKIFF_REQUIRE_OK((*on_host)->TrainStep({.batch = &sampled}, dropout_seed, opt_host));
        SKIFF_REQUIRE_OK(
            (*on_device)
                ->TrainStep({.batch = &seeds_only, .sample = &sample}, dropout_seed, opt_device));
      } else {
        SKIFF_REQUIRE_OK((*on_host)->EvalStep({.batch = &sampled}));
        SKIFF_REQUIRE_OK((*on_device)->EvalStep({.batch = &seeds_only, .sample = &sample}));
        std::vector<float> logits_host, logits_device;
        SKIFF_REQUIRE_OK((*on_host)->Forward(sampled, nullptr, false, 0, &logits_host));
        SKIFF_REQUIRE_OK((*on_device)
                             ->ForwardInput({.batch = &seeds_only, .sample = &sample}, false, 0,
                                            &logits_device));
        gpu_testing::CheckClose(logits_device, logits_host.data(), logits_host.size(), "logits");
      }
    }
    auto totals_host = (*on_host)->TakeLossTotals();
    auto totals_device = (*on_device)->TakeLossTotals();
    SKIFF_REQUIRE_OK(totals_device.status());
    CHECK(totals_device->labelled == totals_host->labelled);
    CHECK(std::abs(totals_device->correct - totals_host->correct) <= 1);
    CHECK(std::fabs(totals_device->loss_sum - totals_host->loss_sum) <=
          1e-4 * std::max(1.0, std::fabs(totals_host->loss_sum)));
    gpu_testing::CheckParametersClose(**on_device, **on_host, "after 5 steps:");
    // Repeated and out-of-range seeds are refused before anything is sampled.
    const model::DeviceSampling sample{.fanouts = &fanouts, .seed = 1};
    sampler::MiniBatch bad;
    bad.seeds = {3, 3};
    CHECK((*on_device)->EvalStep({.batch = &bad, .sample = &sample}).code() ==
          StatusCode::kInvalidArgument);
    bad.seeds = {n};
    CHECK((*on_device)->EvalStep({.batch = &bad, .sample = &sample}).code() ==
          StatusCode::kInvalidArgument);
  }
}
