// The compute device of `skiff train` and `skiff predict`: `--device cpu|cuda`, where a CUDA model
// keeps the features and the graph (asked of the device before anything is planned), and offering
// them to the model once it exists. Both commands plan their pipeline from the ComputeSite this
// gives (pipeline::OpenOutOfCoreTraining).
//
// Thread safety: plain functions, called from the command's thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "skiff/enum_names.h"
#include "skiff/format/dataset.h"
#include "skiff/pipeline/trainer_passes.h"
#include "skiff/status.h"
#include "skiff/train/link_trainer.h"
#include "skiff/train/trainer.h"

namespace skiff::cli {

// The compute stage's device.
enum class Device { kCpu, kCuda };
inline constexpr EnumName<Device> kDeviceNames[] = {{Device::kCpu, "cpu"}, {Device::kCuda, "cuda"}};

// The session options a device run needs, of train::TrainOptionTable(): the names AddTrainFlags
// takes to add only these (skiff predict; skiff train adds every option).
inline const std::vector<std::string>& DeviceOptionNames() {
  static const std::vector<std::string> names = {"cuda-matmul", "device-memory", "sampler"};
  return names;
}

// InvalidArgument when the options ask the device for what `device` cannot do (--sampler device
// without --device cuda).
Status CheckDeviceOptions(Device device, const train::TrainOptions& t);

// Where the model computes and what it keeps there. With kCuda the device is asked, before
// anything is planned, where a CUDA model would keep the features and the graph
// (Model::CudaPlacementFor, in the memory --device-memory gives them): every feature row goes
// there when they fit (batches carry node IDs), and otherwise the rows stay on the host and the
// model caches what fits (docs/cuda.md); the graph too with --sampler device, or with auto when it
// fits beside them. `*runtime_bytes` grows by what loading the CUDA runtime made resident.
Result<pipeline::ComputeSite> ComputeSiteFor(Device device, const format::Manifest& m,
                                             const train::TrainOptions& t, uint64_t* runtime_bytes);

// Resident pages of the files of the CUDA driver, runtime and libraries and of Skiff's CUDA kernels
// (libskiff_cuda.so). They grow after the runtime is loaded: CUDA loads a kernel's code from its
// library's file when the kernel is first launched (lazy loading), cuBLAS's too. `skiff train`
// counts that growth, to exit, in the CUDA runtime's share of its peak (docs/pipeline.md).
uint64_t CudaLibraryFileRssBytes();

// The model factory Trainer::Create takes for `device`; a CUDA model on GPU `slot` mod the
// number of GPUs (Model::CreateCuda).
train::ModelFactory ModelFactoryFor(Device device, int slot = 0);

// --gpus: CUDA ordinals, each once ("0,1,3"); InvalidArgument naming the item that is not one.
// Empty text: no list.
Result<std::vector<int>> ParseGpuList(const std::string& text);

// The model factory of node-classification training: on kCuda with a GPU list or steps over
// several batches, a model::ReplicaGroup of CUDA replicas (Model::CreateCudaReplicas), which sums
// each step's gradients on the GPUs; otherwise ModelFactoryFor(device).
train::ModelFactory TrainingModelFactory(Device device, const std::vector<int>& gpus,
                                         int accumulate);

// Offers the features (and the graph) to the model's device. A plan that counted on the graph
// there loaded no partition to sample from, and out of core one that counted on the features there
// holds no rows, so the model declining them (its device filled up since it was asked) is an error.
Status OfferFeaturesToDevice(const pipeline::ComputeSite& site, uint64_t memory_bytes,
                             train::Trainer* trainer);

// Link prediction on `device`: in memory (memory_bytes 0) on the GPU, offers the features to the
// device (LinkTrainer::OfferFeatures within `device_bytes`), so that batches carry node IDs and the
// model gathers their rows there; when they do not fit, the host gathers them as before. Within
// --memory the host always gathers (the budget's plan counts the rows on the host).
Status OfferLinkFeaturesToDevice(Device device, uint64_t memory_bytes, uint64_t device_bytes,
                                 train::LinkTrainer* trainer);

}  // namespace skiff::cli
