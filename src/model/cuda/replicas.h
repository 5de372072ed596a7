// CUDA model replicas in one process (`skiff train --device cuda --gpus 0,1,...`, and one CUDA
// model's --accumulate): a model::ReplicaGroup of CUDA models, one per GPU, whose step sums NCCL
// adds on the devices (DeviceGroup::AllReduceSum, on each replica's stream, so no host wait).
//
// Thread safety: the group is used by one thread at a time (model/replica_group.h).
#pragma once

#include <memory>
#include <vector>

#include "skiff/model/model.h"
#include "skiff/status.h"

namespace skiff::cuda {

// `devices` (CUDA ordinals, each once): a replica of `config` on each, joined by NCCL; empty: one
// replica on the first device and no NCCL (a step over `accumulate` batches on one GPU). Every
// replica starts from the parameters CreateCpu(config) initialises. InvalidArgument for a bad
// list (DeviceGroup::Create's message) or config; Unavailable without NCCL or a device.
Result<std::unique_ptr<model::Model>> CreateCudaReplicas(const model::ModelConfig& config,
                                                         const std::vector<int>& devices,
                                                         int accumulate);

}  // namespace skiff::cuda
