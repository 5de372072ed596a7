#include "src/model/cuda/device_group.h"

#include <limits>
#include <set>
#include <string>

#ifdef SKIFF_HAVE_NCCL
#include <dlfcn.h>
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

namespace {

// NCCL's entry points, from libnccl.so.2 loaded on first use: the CUDA model never needs NCCL, so
// libskiff_cuda.so does not depend on it and loads where NCCL is not installed.
struct NcclApi {
  decltype(&ncclCommInitAll) comm_init_all = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
};

template <typename F>
bool Bind(void* library, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(library, name));
  return *out != nullptr;
}

// The loaded API, or Unavailable naming the library and dlopen's message (once per process; the
// library stays loaded).
Result<const NcclApi*> Nccl() {
  static const Result<const NcclApi*> api = []() -> Result<const NcclApi*> {
    void* library = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      return Status::Unavailable(
          std::string("several GPUs need NCCL, which is not installed here: ") + dlerror());
    }
    static NcclApi loaded;
    if (!Bind(library, "ncclCommInitAll", &loaded.comm_init_all) ||
        !Bind(library, "ncclCommDestroy", &loaded.comm_destroy) ||
        !Bind(library, "ncclAllReduce", &loaded.all_reduce) ||
        !Bind(library, "ncclGroupStart", &loaded.group_start) ||
        !Bind(library, "ncclGroupEnd", &loaded.group_end) ||
        !Bind(library, "ncclGetErrorString", &loaded.error_string)) {
      return Status::Unavailable(std::string("libnccl.so.2 lacks an entry point: ") + dlerror());
    }
    return &loaded;
  }();
  return api;
}

}  // namespace

struct DeviceGroup::Comms {
  const NcclApi* nccl = nullptr;
  std::vector<ncclComm_t> comms;
  ~Comms() {
    for (ncclComm_t c : comms) {
      if (c != nullptr) nccl->comm_destroy(c);
    }
  }
  Status Check(ncclResult_t result, const std::string& what) const {
    if (result == ncclSuccess) return Status::Ok();
    return Status::Internal("NCCL: " + what + ": " + nccl->error_string(result));
  }
};

Result<std::unique_ptr<DeviceGroup>> DeviceGroup::Create(const std::vector<int>& devices) {
  int available = 0;
  if (cudaGetDeviceCount(&available) != cudaSuccess) {
    cudaGetLastError();
    available = 0;
  }
  SKIFF_RETURN_IF_ERROR(CheckDevices(devices, available));
  auto comms = std::make_unique<Comms>();
  SKIFF_ASSIGN_OR_RETURN(comms->nccl, Nccl());
  comms->comms.assign(devices.size(), nullptr);
  const ncclResult_t result = comms->nccl->comm_init_all(
      comms->comms.data(), static_cast<int>(devices.size()), devices.data());
  if (result != ncclSuccess) {
    comms->comms.assign(devices.size(), nullptr);  // nothing to destroy after a failed init
    return Status::Unavailable(std::string("NCCL could not join the GPUs: ") +
                               comms->nccl->error_string(result));
  }
  return std::unique_ptr<DeviceGroup>(new DeviceGroup(devices, std::move(comms)));
}

Status DeviceGroup::AllReduceSum(std::span<float* const> buffers, size_t count,
                                 std::span<const cudaStream_t> streams) {
  if (buffers.size() != devices_.size() || streams.size() != devices_.size()) {
    return Status::InvalidArgument("AllReduceSum: one buffer and one stream per GPU of the group");
  }
  const NcclApi& nccl = *comms_->nccl;
  // One thread drives every device: the calls are grouped, or the first would wait for the rest.
  SKIFF_RETURN_IF_ERROR(comms_->Check(nccl.group_start(), "group start"));
  Status st;
  for (size_t i = 0; i < devices_.size() && st.ok(); ++i) {
    st = comms_->Check(nccl.all_reduce(buffers[i], buffers[i], count, ncclFloat, ncclSum,
                                       comms_->comms[i], streams[i]),
                       "all-reduce on GPU " + std::to_string(devices_[i]));
  }
  const Status end = comms_->Check(nccl.group_end(), "group end");
  return st.ok() ? end : st;
}

#else  // built without NCCL

struct DeviceGroup::Comms {};

Result<std::unique_ptr<DeviceGroup>> DeviceGroup::Create(const std::vector<int>& devices) {
  SKIFF_RETURN_IF_ERROR(CheckDevices(devices, std::numeric_limits<int>::max()));
  return Status::Unavailable(
      "this build of skiff has no NCCL (CMake found no nccl.h): several GPUs cannot "
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
