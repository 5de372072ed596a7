#include "src/model/cuda/device_group.h"

#include <limits>
#include <set>
#include <string>

#ifdef SKIFF_HAVE_NCCL
#include <nccl.h>
#endif

namespace skiff::cuda {

namespace {

// The list's refusals, before any device is touched.
Status CheckDevices(const std::vector<int>& devices, int available) {
  if (devices.empty()) return Status::InvalidArgument("a device group needs at least one GPU");
  std::set<int> seen;
  for (int d : devices) {
    if (!seen.insert(d).second) {
      return Status::InvalidArgument("GPU " + std::to_string(d) +
                                     " is listed twice: each GPU holds one replica");
    }
  }
  for (int d : devices) {
    if (d < 0 || d >= available) {
      const std::string there = available == 0
                                    ? "this machine has none"
                                    : "this machine has " + std::to_string(available) + " (0 .. " +
                                          std::to_string(available - 1) + ")";
      return Status::InvalidArgument("there is no GPU " + std::to_string(d) + ": " + there);
    }
  }
  return Status::Ok();
}

}  // namespace

#ifdef SKIFF_HAVE_NCCL

struct DeviceGroup::Comms {
  std::vector<ncclComm_t> comms;
  ~Comms() {
    for (ncclComm_t c : comms) {
      if (c != nullptr) ncclCommDestroy(c);
    }
  }
};

namespace {

Status FromNccl(ncclResult_t result, const std::string& what) {
  if (result == ncclSuccess) return Status::Ok();
  return Status::Internal("NCCL: " + what + ": " + ncclGetErrorString(result));
}

}  // namespace

Result<std::unique_ptr<DeviceGroup>> DeviceGroup::Create(const std::vector<int>& devices) {
  int available = 0;
  if (cudaGetDeviceCount(&available) != cudaSuccess) {
    cudaGetLastError();
    available = 0;
  }
  SKIFF_RETURN_IF_ERROR(CheckDevices(devices, available));
  auto comms = std::make_unique<Comms>();
  comms->comms.assign(devices.size(), nullptr);
  const ncclResult_t result =
      ncclCommInitAll(comms->comms.data(), static_cast<int>(devices.size()), devices.data());
  if (result != ncclSuccess) {
    comms->comms.assign(devices.size(), nullptr);  // nothing to destroy after a failed init
    return Status::Unavailable(std::string("NCCL could not join the GPUs: ") +
                               ncclGetErrorString(result));
  }
  return std::unique_ptr<DeviceGroup>(new DeviceGroup(devices, std::move(comms)));
}

Status DeviceGroup::AllReduceSum(std::span<float* const> buffers, size_t count,
                                 std::span<const cudaStream_t> streams) {
  if (buffers.size() != devices_.size() || streams.size() != devices_.size()) {
    return Status::InvalidArgument("AllReduceSum: one buffer and one stream per GPU of the group");
  }
  // One thread drives every device: the calls are grouped, or the first would wait for the rest.
  SKIFF_RETURN_IF_ERROR(FromNccl(ncclGroupStart(), "group start"));
  Status st;
  for (size_t i = 0; i < devices_.size() && st.ok(); ++i) {
    st = FromNccl(ncclAllReduce(buffers[i], buffers[i], count, ncclFloat, ncclSum, comms_->comms[i],
                                streams[i]),
                  "all-reduce on GPU " + std::to_string(devices_[i]));
  }
  const Status end = FromNccl(ncclGroupEnd(), "group end");
  return st.ok() ? end : st;
}

#else  // built without NCCL

struct DeviceGroup::Comms {};

Result<std::unique_ptr<DeviceGroup>> DeviceGroup::Create(const std::vector<int>& devices) {
  SKIFF_RETURN_IF_ERROR(CheckDevices(devices, std::numeric_limits<int>::max()));
  return Status::Unavailable(
      "this build of skiff has no NCCL (CMake found no nccl.h and libnccl): several GPUs cannot "
      "sum their gradients");
}

Status DeviceGroup::AllReduceSum(std::span<float* const>, size_t, std::span<const cudaStream_t>) {
  return Status::Unavailable("this build of skiff has no NCCL");
}

#endif

DeviceGroup::DeviceGroup(std::vector<int> devices, std::unique_ptr<Comms> comms)
    : devices_(std::move(devices)), comms_(std::move(comms)) {}

DeviceGroup::~DeviceGroup() = default;

}  // namespace skiff::cuda
