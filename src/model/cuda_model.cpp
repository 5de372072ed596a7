// Model::CreateCuda: the entry point of the CUDA compute stage.
//
// The config is validated exactly as for the CPU model (by creating one: the CUDA model's host
// master parameters are the CPU model's, so both start identical). Then the device is probed;
// without SKIFF_HAVE_CUDA, or without a usable device, the result is Unavailable with the reason.
#include "skiff/model/model.h"

#ifdef SKIFF_HAVE_CUDA
#include "kernels/cuda/cuda_model.cuh"
#include "kernels/cuda/device.cuh"
#endif

namespace skiff::model {

Result<std::unique_ptr<Model>> Model::CreateCuda(const ModelConfig& config) {
  // Validates the config (InvalidArgument before any device question).
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<Model> host_model, CreateCpu(config));
#ifndef SKIFF_HAVE_CUDA
  (void)host_model;
  return Status::Unavailable(
      "CUDA model: this build of Skiff has no CUDA support (configure with -DSKIFF_CUDA=ON on a "
      "machine with the CUDA toolkit); use --device cpu");
#else
  auto device = cuda::FirstDevice();
  if (!device.ok()) {
    return Status::Unavailable("CUDA model: no usable CUDA device (" + device.status().message() +
                               "); use --device cpu");
  }
  return cuda::CreateCudaModel(std::move(host_model));
#endif
}

}  // namespace skiff::model
