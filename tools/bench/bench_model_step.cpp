// Times one training step (forward, loss, backward, Adam) of a CPU model on a synthetic mini-batch
// shaped like a sampled GraphSAGE batch: `batch` seeds, fanouts 15,10,5 over a graph of `nodes`
// nodes (block sizes estimated from uniform sampling), random features and edges.
// Not part of the build; compile by hand (see BENCHMARKS.md, "CPU model step timings"):
//   g++ -O2 -std=c++20 -Iinclude -I. tools/bench/bench_model_step.cpp build/libskiff_core.a \
//       -lopenblas -lpthread -o build/bench_model_step
//   build/bench_model_step MODEL THREADS [in_dim hidden classes batch nodes steps]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/blas_core.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/parallel.h"
#include "skiff/model/model.h"

using namespace skiff;

namespace {
double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}
}  // namespace

int main(int argc, char** argv) {
  // OpenBLAS's kernels as skiff runs them (kernels/cpu/blas_core.h).
  skiff::cpu::RestartWithBlasCoreIfNeeded(argv);
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s sage|gcn|gat THREADS [in_dim hidden classes batch nodes steps]\n",
                 argv[0]);
    return 2;
  }
  const std::string kind = argv[1];
  cpu::SetNumThreads(std::atoi(argv[2]));
  auto arg = [&](int i, int64_t dflt) { return argc > i ? std::atoll(argv[i]) : dflt; };
  const int64_t in_dim = arg(3, 128), hidden = arg(4, 256), classes = arg(5, 47);
  const int64_t batch_size = arg(6, 1024), nodes = arg(7, 1000000), steps = arg(8, 5);
  const int64_t fanouts[3] = {15, 10, 5};  // input layer first

  // Layer sizes from the seeds outwards: each hop adds the expected number of distinct new nodes.
  std::vector<int64_t> sizes = {batch_size};
  for (int hop = 2; hop >= 0; --hop) {
    const double draws = static_cast<double>(sizes.back() * fanouts[hop]);
    const double outside = static_cast<double>(nodes - sizes.back());
    sizes.push_back(sizes.back() +
                    static_cast<int64_t>(outside * (1.0 - std::exp(-draws / nodes))));
  }
  std::mt19937_64 rng(1);
  sampler::MiniBatch batch;
  for (int64_t v = 0; v < sizes.back(); ++v) batch.input_nodes.push_back(v);
  batch.seeds.assign(batch.input_nodes.begin(), batch.input_nodes.begin() + batch_size);
  for (int l = 0; l < 3; ++l) {
    sampler::Block b;
    b.num_src = sizes[static_cast<size_t>(3 - l)];
    b.num_dst = sizes[static_cast<size_t>(2 - l)];
    std::uniform_int_distribution<int32_t> src(0, static_cast<int32_t>(b.num_src - 1));
    b.indptr.push_back(0);
    for (int64_t d = 0; d < b.num_dst; ++d) {
      for (int64_t k = 0; k < fanouts[l]; ++k) b.indices.push_back(src(rng));
      b.indptr.push_back(static_cast<int64_t>(b.indices.size()));
    }
    std::printf("block %d: dst %lld src %lld edges %lld\n", l, static_cast<long long>(b.num_dst),
                static_cast<long long>(b.num_src), static_cast<long long>(b.num_edges()));
    batch.blocks.push_back(std::move(b));
  }
  std::uniform_int_distribution<int32_t> label(0, static_cast<int32_t>(classes - 1));
  for (int64_t s = 0; s < batch_size; ++s) batch.labels.push_back(label(rng));
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(sizes.back() * in_dim));
  for (float& v : x) v = normal(rng);

  model::ModelConfig c;
  c.kind = model::ParseModelKind(kind).value();
  c.in_dim = in_dim;
  c.hidden_dim = kind == "gat" ? hidden / 4 : hidden;
  c.num_classes = classes;
  c.num_layers = 3;
  c.dropout = 0.5f;
  c.input_dropout = 0.0f;
  auto m = std::move(model::Model::CreateCpu(c).value());
  model::Optimizer opt(*m, {});
  std::vector<float> logits, grad(static_cast<size_t>(batch_size * classes));
  double forward_s = 0, backward_s = 0, step_s = 0;
  for (int64_t step = 0; step <= steps; ++step) {  // step 0 warms the buffers up, not timed
    auto t0 = std::chrono::steady_clock::now();
    m->ZeroGrad();
    if (!m->Forward(batch, x.data(), true, static_cast<uint64_t>(step), &logits).ok()) return 1;
    const float loss = cpu::SoftmaxCrossEntropy(batch_size, classes, logits.data(),
                                                batch.labels.data(), grad.data(), nullptr);
    const double t_forward = Seconds(t0);
    auto t1 = std::chrono::steady_clock::now();
    if (!m->Backward(grad.data()).ok()) return 1;
    const double t_backward = Seconds(t1);
    auto t2 = std::chrono::steady_clock::now();
    if (!opt.Step().ok()) return 1;
    const double t_step = Seconds(t2);
    if (step > 0) {
      forward_s += t_forward;
      backward_s += t_backward;
      step_s += t_step;
    }
    std::printf("step %lld loss %.4f\n", static_cast<long long>(step), loss);
  }
  const double total = (forward_s + backward_s + step_s) / static_cast<double>(steps);
  std::printf(
      "%s threads %d: forward %.1f ms, backward %.1f ms, adam %.1f ms, total %.1f ms/batch "
      "(%.0f seeds/s)\n",
      kind.c_str(), cpu::NumThreads(), 1e3 * forward_s / steps, 1e3 * backward_s / steps,
      1e3 * step_s / steps, 1e3 * total, batch_size / total);
  return 0;
}
