// CUDA replicas (src/model/cuda/replicas.h: `skiff train --device cuda --gpus`, and one CUDA
// model's --accumulate) against the plain CUDA model and the CPU reference group:
//   - the multi-GPU path with one GPU (a group over GPU 0, its step sums all-reduced by NCCL) gives
//     the plain CUDA model's parameters: bitwise when the plain model repeats itself bitwise (no
//     atomics reorder its sums on this device), else within the fp32 tolerance (model_compare.h);
//     the same without NCCL (devices {});
//   - one GPU's steps over 3 batches follow the CPU model's --accumulate 3 within the tolerance;
//   - with two or more GPUs, a group over GPUs 0 and 1 follows one GPU accumulating 2 batches per
//     step within the tolerance, and its replicas hold the same parameters (MESSAGE otherwise).
//   - ComputeGradients (what a data-parallel CUDA rank calls) leaves the batch's gradients in the
//     host tensors and its loss in the device totals, and the next update takes them.
// Where NCCL is missing (no nccl.h in the build, or libnccl.so.2 absent) the NCCL cases say so.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "skiff/model/model.h"
#include "skiff/model/replica_group.h"
#include "skiff/train/gradient_sum.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/gpu/model_compare.h"
#include "tests/unit/test_model_util.h"

using namespace skiff;
using namespace skiff::model;

namespace {

ModelConfig Config() {
  ModelConfig c;
  c.kind = ModelKind::kSage;
  c.in_dim = 29;
  c.hidden_dim = 24;
  c.num_classes = 5;
  c.num_layers = 2;
  c.dropout = 0.3f;
  c.seed = 17;
  c.cuda_matmul = CudaMatmul::kFp32;
  return c;
}

struct Batch {
  sampler::MiniBatch batch;
  std::vector<float> x;
  BatchInput input() const { return {.batch = &batch, .x = x.data()}; }
};

std::vector<Batch> Batches(int n) {
  std::mt19937_64 rng(23);
  std::vector<Batch> out(static_cast<size_t>(n));
  for (size_t b = 0; b < out.size(); ++b) {
    out[b].batch = testing::RandomMiniBatch({200, 80, 30}, 7, 5, rng);
    out[b].x = gpu_testing::RandomFloats(out[b].batch.input_nodes.size() * 29, 40 + b);
  }
  return out;
}

Optimizer::Config Sgd() {  // as test_cuda_model.cpp: Adam would magnify reordered near-zero sums
  Optimizer::Config oc;
  oc.kind = OptimizerKind::kSgd;
  oc.lr = 0.05f;
  oc.momentum = 0.9f;
  return oc;
}

// Trains `model` on every batch through TrainStep (and EndTrainingPass), as the trainer does.
void Train(Model& model, const std::vector<Batch>& batches) {
  Optimizer opt(model, Sgd());
  for (size_t b = 0; b < batches.size(); ++b) {
    SKIFF_REQUIRE_OK(model.TrainStep(batches[b].input(), 500 + b, opt));
  }
  SKIFF_REQUIRE_OK(model.EndTrainingPass(opt));
  SKIFF_REQUIRE_OK(model.TakeLossTotals().status());
}

std::vector<float> Flatten(Model& m) {
  std::vector<float> out;
  for (const Parameter& p : m.Parameters()) out.insert(out.end(), p.data, p.data + p.size());
  return out;
}

std::unique_ptr<Model> Plain(const std::vector<Batch>& batches) {
  auto m = Model::CreateCuda(Config());
  REQUIRE_MESSAGE(m.ok(), m.status().ToString());
  Train(**m, batches);
  return std::move(*m);
}

// A group, or null (with a MESSAGE) when NCCL is not there.
std::unique_ptr<Model> Group(const std::vector<int>& devices, int accumulate) {
  auto m = Model::CreateCudaReplicas(Config(), devices, accumulate);
  if (!m.ok() && (m.status().message().find("has no NCCL") != std::string::npos ||
                  m.status().message().find("not installed here") != std::string::npos)) {
    MESSAGE("not run: " << m.status().ToString());
    return nullptr;
  }
  REQUIRE_MESSAGE(m.ok(), m.status().ToString());
  CHECK((*m)->accumulates_steps());
  return std::move(*m);
}

}  // namespace

TEST_CASE("replicas: the multi-GPU path with one GPU gives the plain path's model") {
  const std::vector<Batch> batches = Batches(6);
  auto plain = Plain(batches);
  auto again = Plain(batches);
  const bool repeatable = Flatten(*plain) == Flatten(*again);
  MESSAGE("the plain CUDA model " << (repeatable ? "repeats itself bitwise"
                                                 : "does not repeat itself bitwise (atomics)"));
  for (const std::vector<int>& devices : {std::vector<int>{0}, std::vector<int>{}}) {
    CAPTURE(devices.size());
    auto group = Group(devices, 1);
    if (group == nullptr) continue;
    Train(*group, batches);
    if (repeatable) CHECK(Flatten(*group) == Flatten(*plain));
    gpu_testing::CheckParametersClose(*group, *plain, "one-GPU group vs plain:");
  }
}

TEST_CASE("replicas: one GPU's steps over 3 batches follow the CPU model's --accumulate 3") {
  const std::vector<Batch> batches = Batches(8);  // steps of 3, 3 and 2 batches
  auto gpu = Group({}, 3);
  REQUIRE(gpu != nullptr);
  Train(*gpu, batches);
  auto cpu = Model::CreateCpu(Config());
  REQUIRE(cpu.ok());
  Optimizer opt(**cpu, Sgd());
  train::GradientSum sum((*cpu)->NumParameters());
  for (size_t b = 0; b < batches.size(); ++b) {
    SKIFF_REQUIRE_OK((*cpu)->ComputeGradients(batches[b].input(), 500 + b));
    sum.Add((*cpu)->Parameters());
    if (sum.batches() == 3 || b + 1 == batches.size()) {
      sum.Store((*cpu)->Parameters(), sum.batches());
      sum.Clear();
      SKIFF_REQUIRE_OK(opt.Step());
    }
  }
  CHECK(opt.steps() == 3);
  gpu_testing::CheckParametersClose(*gpu, **cpu, "GPU --accumulate 3 vs CPU:");
}

TEST_CASE("replicas: two GPUs follow one GPU accumulating the same batches") {
  int n = 0;
  SKIFF_REQUIRE_CUDA(cudaGetDeviceCount(&n));
  if (n < 2) {
    MESSAGE("not run: this machine has " << n << " GPU (two are needed)");
    return;
  }
  const std::vector<Batch> batches = Batches(7);
  auto two = Group({0, 1}, 1);
  if (two == nullptr) return;
  Train(*two, batches);
  auto one = Group({}, 2);
  REQUIRE(one != nullptr);
  Train(*one, batches);
  gpu_testing::CheckParametersClose(*two, *one, "GPUs 0, 1 vs GPU 0 --accumulate 2:");
  auto& group = dynamic_cast<ReplicaGroup&>(*two);
  CHECK(Flatten(group.replica(1)) == Flatten(group.replica(0)));
}

TEST_CASE(
    "cuda model: ComputeGradients gives the host the batch's gradients, as a rank sums them") {
  const std::vector<Batch> batches = Batches(3);
  auto gpu = Model::CreateCuda(Config());
  auto cpu = Model::CreateCpu(Config());
  REQUIRE_MESSAGE(gpu.ok(), gpu.status().ToString());
  REQUIRE(cpu.ok());
  Optimizer opt_gpu(**gpu, Sgd()), opt_cpu(**cpu, Sgd());
  for (size_t b = 0; b < batches.size(); ++b) {
    CAPTURE(b);
    SKIFF_REQUIRE_OK((*gpu)->ComputeGradients(batches[b].input(), 700 + b));
    SKIFF_REQUIRE_OK((*cpu)->ComputeGradients(batches[b].input(), 700 + b));
    const std::vector<Parameter> pg = (*gpu)->Parameters(), pc = (*cpu)->Parameters();
    for (size_t i = 0; i < pg.size(); ++i) {
      std::vector<float> g(pg[i].grad, pg[i].grad + pg[i].size());
      gpu_testing::CheckClose(g, pc[i].grad, static_cast<size_t>(pc[i].size()), pc[i].name);
    }
    // The update takes the host gradients (a rank's step mean is written there).
    SKIFF_REQUIRE_OK(opt_gpu.Step());
    SKIFF_REQUIRE_OK(opt_cpu.Step());
  }
  gpu_testing::CheckParametersClose(**gpu, **cpu, "after 3 host-summed steps:");
  auto tg = (*gpu)->TakeLossTotals();
  auto tc = (*cpu)->TakeLossTotals();
  SKIFF_REQUIRE_OK(tg.status());
  CHECK(tg->labelled == tc->labelled);
  CHECK(std::fabs(tg->loss_sum - tc->loss_sum) <= 1e-4 * std::max(1.0, std::fabs(tc->loss_sum)));
}
