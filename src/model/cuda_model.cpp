// Model::CreateCuda: the entry point of the CUDA compute stage.
//
// The config is validated exactly as for the CPU model (by creating one: the CUDA model's host
// master parameters are the CPU model's, so both start identical). The CUDA code lives in
// libskiff_cuda.so (kernels/cuda/plugin.cpp), loaded here on first use: found beside the
// executable (or one directory up, for test binaries), or at $SKIFF_CUDA_LIBRARY. Without
// SKIFF_HAVE_CUDA, when the library cannot be loaded, or without a usable device, the result is
// Unavailable with the reason. Model::CudaFeatureMemory asks the same library, before any model
// exists, how much device memory a CUDA model would give the features.
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
  Status (*create)(std::unique_ptr<Model>*, std::unique_ptr<Model>*) = nullptr;
  Status (*feature_memory)(uint64_t, uint64_t*) = nullptr;
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
      void* feature_memory = ::dlsym(handle, "SkiffCudaFeatureMemory");
      if (create == nullptr || feature_memory == nullptr) {
        errors += "; " + path + " lacks SkiffCreateCudaModel or SkiffCudaFeatureMemory";
        continue;
      }
      CudaLibrary library;
      library.create = reinterpret_cast<decltype(library.create)>(create);
      library.feature_memory = reinterpret_cast<decltype(library.feature_memory)>(feature_memory);
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

Result<std::unique_ptr<Model>> Model::CreateCuda(const ModelConfig& config) {
  // Validates the config (InvalidArgument before any device question).
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<Model> host_model, CreateCpu(config));
#ifndef SKIFF_HAVE_CUDA
  (void)host_model;
  return Status::Unavailable(kNoCudaBuild);
#else
  SKIFF_ASSIGN_OR_RETURN(const CudaLibrary library, LoadCudaLibrary());
  std::unique_ptr<Model> model;
  SKIFF_RETURN_IF_ERROR(library.create(&host_model, &model));
  return model;
#endif
}

Result<uint64_t> Model::CudaFeatureMemory(uint64_t device_bytes) {
#ifndef SKIFF_HAVE_CUDA
  (void)device_bytes;
  return Status::Unavailable(kNoCudaBuild);
#else
  SKIFF_ASSIGN_OR_RETURN(const CudaLibrary library, LoadCudaLibrary());
  uint64_t bytes = 0;
  SKIFF_RETURN_IF_ERROR(library.feature_memory(device_bytes, &bytes));
  return bytes;
#endif
}

}  // namespace skiff::model
