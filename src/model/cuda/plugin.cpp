// The entry point of libskiff_cuda.so, which model::Model::CreateCuda loads with dlopen only when a
// CUDA model is asked for: the skiff executable does not link the CUDA runtime or cuBLAS, whose
// loading alone made ~215 MiB resident in every run, GPU or not, outside any memory budget.
//
// The library's references to the core (Model, Status, the CPU model it starts from) resolve
// against the executable that loads it (built with its symbols exported).
#include <cuda_runtime.h>

#include "kernels/cuda/device.cuh"
#include "skiff/model/model.h"
#include "src/model/cuda/cuda_model.h"
#include "src/model/cuda/replicas.h"

namespace {

// OK, or Unavailable naming why no CUDA device can be used.
skiff::Status CheckUsableDevice() {
  auto device = skiff::cuda::FirstDevice();
  if (device.ok()) return skiff::Status::Ok();
  return skiff::Status::Unavailable("CUDA model: no usable CUDA device (" +
                                    device.status().message() + "); use --device cpu");
}

}  // namespace

// `host_model` is a CPU model of the config (the CUDA model starts from its parameters), placed
// on GPU `slot` mod the number of GPUs. Sets *out and returns OK, or returns Unavailable (no usable
// device) or the model's error.
extern "C" __attribute__((visibility("default"))) skiff::Status SkiffCreateCudaModel(
    std::unique_ptr<skiff::model::Model>* host_model, int slot,
    std::unique_ptr<skiff::model::Model>* out) {
  using skiff::Status;
  SKIFF_RETURN_IF_ERROR(CheckUsableDevice());
  int count = 1;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) count = 1;
  auto model = skiff::cuda::CreateCudaModel(std::move(*host_model), slot % count);
  if (!model.ok()) return model.status();
  *out = std::move(model).value();
  return Status::Ok();
}

// Model::CreateCudaReplicas: a replica of `config` per GPU of `devices` (cuda::CreateCudaReplicas).
extern "C" __attribute__((visibility("default"))) skiff::Status SkiffCreateCudaReplicas(
    const skiff::model::ModelConfig* config, const std::vector<int>* devices, int accumulate,
    std::unique_ptr<skiff::model::Model>* out) {
  using skiff::Status;
  SKIFF_RETURN_IF_ERROR(CheckUsableDevice());
  auto model = skiff::cuda::CreateCudaReplicas(*config, *devices, accumulate);
  if (!model.ok()) return model.status();
  *out = std::move(model).value();
  return Status::Ok();
}

// Model::CudaPlacementFor: where a CUDA model would keep a dataset's features and graph
// (cuda::PlacementFor), asked before any model exists so that the memory plan knows.
extern "C" __attribute__((visibility("default"))) skiff::Status SkiffCudaPlacement(
    uint64_t device_bytes, int64_t num_nodes, int64_t feature_dim, int64_t num_edges,
    int num_layers, int max_fanout, skiff::model::Model::CudaPlacement* out) {
  using skiff::Status;
  SKIFF_RETURN_IF_ERROR(CheckUsableDevice());
  auto placement = skiff::cuda::PlacementFor(device_bytes, num_nodes, feature_dim, num_edges,
                                             num_layers, max_fanout);
  if (!placement.ok()) return placement.status();
  *out = *placement;
  return Status::Ok();
}
