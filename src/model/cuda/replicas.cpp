#include "src/model/cuda/replicas.h"

#include <span>
#include <string>
#include <utility>

#include "skiff/model/replica_group.h"
#include "src/model/cuda/cuda_model.h"
#include "src/model/cuda/device_group.h"

namespace skiff::cuda {

namespace {

// "2 GPUs (0, 1) summing gradients with NCCL".
std::string Describe(const std::vector<int>& devices) {
  std::string list;
  for (int d : devices) list += (list.empty() ? "" : ", ") + std::to_string(d);
  return std::to_string(devices.size()) + (devices.size() == 1 ? " GPU (" : " GPUs (") + list +
         ") summing gradients with NCCL";
}

}  // namespace

Result<std::unique_ptr<model::Model>> CreateCudaReplicas(const model::ModelConfig& config,
                                                         const std::vector<int>& devices,
                                                         int accumulate) {
  std::shared_ptr<DeviceGroup> group;
  if (!devices.empty()) {
    SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<DeviceGroup> created, DeviceGroup::Create(devices));
    group = std::move(created);
  }
  const std::vector<int> on = devices.empty() ? std::vector<int>{0} : devices;
  std::vector<std::unique_ptr<model::Model>> replicas;
  for (int device : on) {
    SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<model::Model> host, model::Model::CreateCpu(config));
    SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<model::Model> replica,
                           CreateCudaModel(std::move(host), device));
    replicas.push_back(std::move(replica));
  }
  model::ReplicaGroup::SumAcross sum = [group](std::span<model::Model* const> all) -> Status {
    if (group == nullptr) return Status::Ok();  // one replica: its sum is the total
    std::vector<float*> buffers;
    std::vector<cudaStream_t> streams;
    size_t count = 0;
    for (model::Model* replica : all) {
      const StepSumView view = StepSumOf(*replica);
      buffers.push_back(view.sum);
      streams.push_back(view.stream);
      count = view.count;
    }
    return group->AllReduceSum(buffers, count, streams);
  };
  const std::string description =
      devices.empty() ? "gradients of a step summed on the GPU" : Describe(devices);
  SKIFF_ASSIGN_OR_RETURN(
      std::unique_ptr<model::ReplicaGroup> replica_group,
      model::ReplicaGroup::Create(std::move(replicas), std::move(sum), accumulate, description));
  return std::unique_ptr<model::Model>(std::move(replica_group));
}

}  // namespace skiff::cuda
