// Model::CreateCuda: the entry point of the CUDA compute stage.
//
// The config is validated exactly as for the CPU model (by creating one: the CUDA model's host
// master parameters are the CPU model's, so both start identical). The CUDA code lives in
// libskiff_cuda.so (kernels/cuda/plugin.cpp), loaded here on first use: found beside the
// executable (or one directory up, for test binaries), or at $SKIFF_CUDA_LIBRARY. Without
// SKIFF_HAVE_CUDA, when the library cannot be loaded, or without a usable device, the result is
// Unavailable with the reason. Model::CudaPlacementFor asks the same library, before any model
// exists, where a CUDA model would keep a dataset's features and graph.
#include "skiff/model/model.h"

#ifdef SKIFF_HAVE_CUDA
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#endif

namespace skiff::model {

#ifndef SKIFF_HAVE_CUDA
constexpr char kNoCudaBuild[] =
    "CUDA model: this build of Skiff has no CUDA support (configure with -DSKIFF_CUDA=ON on a "
    "machine with the CUDA toolkit); use --device cpu";
#endif

#ifdef SKIFF_HAVE_CUDA
namespace {

// The library's entry points (src/model/cuda/plugin.cpp).
struct CudaLibrary {
  Status (*create)(std::unique_ptr<Model>*, int, std::unique_ptr<Model>*) = nullptr;
  Status (*placement)(uint64_t, int64_t, int64_t, int64_t, int, int,
                      Model::CudaPlacement*) = nullptr;
  Status (*replicas)(const ModelConfig*, const std::vector<int>*, int,
                     std::unique_ptr<Model>*) = nullptr;
};

// Loads the library once per process (it stays loaded); its entry points or the reason they are
// not there.
Result<CudaLibrary> LoadCudaLibrary() {
  static std::once_flag once;
  static Result<CudaLibrary> loaded = Status::Internal("not loaded");
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("SKIFF_CUDA_LIBRARY"); env != nullptr && *env != '\0') {
      candidates.push_back(env);
    } else {
      std::error_code ec;
      const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
      if (!ec) {
        candidates.push_back((exe.parent_path() / "libskiff_cuda.so").string());
        candidates.push_back((exe.parent_path().parent_path() / "libskiff_cuda.so").string());
      }
    }
    std::string errors;
    for (const std::string& path : candidates) {
      void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        errors += std::string(errors.empty() ? "" : "; ") + ::dlerror();
        continue;
      }
      void* create = ::dlsym(handle, "SkiffCreateCudaModel");
      void* placement = ::dlsym(handle, "SkiffCudaPlacement");
      void* replicas = ::dlsym(handle, "SkiffCreateCudaReplicas");
      if (create == nullptr || placement == nullptr || replicas == nullptr) {
        errors += "; " + path + " lacks an entry point (an older build?)";
        continue;
      }
      CudaLibrary library;
      library.create = reinterpret_cast<decltype(library.create)>(create);
      library.placement = reinterpret_cast<decltype(library.placement)>(placement);
      library.replicas = reinterpret_cast<decltype(library.replicas)>(replicas);
      loaded = library;
      return;
    }
    loaded = Status::Unavailable("CUDA model: cannot load the CUDA library (" +
                                 (errors.empty() ? std::string("no candidate path") : errors) +
                                 "); set SKIFF_CUDA_LIBRARY, or use --device cpu");
  });
  return loaded;
}

}  // namespace
#endif

Result<std::unique_ptr<Model>> Model::CreateCuda(const ModelConfig& config, int slot) {
  // Validates the config (InvalidArgument before any device question).
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<Model> host_model, CreateCpu(config));
#ifndef SKIFF_HAVE_CUDA
  (void)host_model, (void)slot;
  return Status::Unavailable(kNoCudaBuild);
#else
  SKIFF_ASSIGN_OR_RETURN(const CudaLibrary library, LoadCudaLibrary());
  std::unique_ptr<Model> model;
  SKIFF_RETURN_IF_ERROR(library.create(&host_model, slot, &model));
  return model;
#endif
}

Result<std::unique_ptr<Model>> Model::CreateCudaReplicas(const ModelConfig& config,
                                                         const std::vector<int>& devices,
                                                         int accumulate) {
  SKIFF_RETURN_IF_ERROR(CreateCpu(config).status());  // the config's errors first
#ifndef SKIFF_HAVE_CUDA
  (void)devices, (void)accumulate;
  return Status::Unavailable(kNoCudaBuild);
#else
  SKIFF_ASSIGN_OR_RETURN(const CudaLibrary library, LoadCudaLibrary());
  std::unique_ptr<Model> model;
  SKIFF_RETURN_IF_ERROR(library.replicas(&config, &devices, accumulate, &model));
  return model;
#endif
}

Result<Model::CudaPlacement> Model::CudaPlacementFor(uint64_t device_bytes, int64_t num_nodes,
                                                     int64_t feature_dim, int64_t num_edges,
                                                     int num_layers, int max_fanout) {
#ifndef SKIFF_HAVE_CUDA
  (void)device_bytes, (void)num_nodes, (void)feature_dim, (void)num_edges, (void)num_layers,
      (void)max_fanout;
  return Status::Unavailable(kNoCudaBuild);
#else
  SKIFF_ASSIGN_OR_RETURN(const CudaLibrary library, LoadCudaLibrary());
  CudaPlacement placement;
  SKIFF_RETURN_IF_ERROR(library.placement(device_bytes, num_nodes, feature_dim, num_edges,
                                          num_layers, max_fanout, &placement));
  return placement;
#endif
}

}  // namespace skiff::model
