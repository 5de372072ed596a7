#include "tools/skiff/compute_device.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "skiff/log.h"
#include "skiff/model/model.h"
#include "skiff/process.h"
#include "skiff/units.h"

namespace skiff::cli {

Status CheckDeviceOptions(Device device, const train::TrainOptions& t) {
  if (t.sampler == train::SamplerPlace::kDevice && device != Device::kCuda) {
    return Status::InvalidArgument("--sampler device samples on the GPU: it needs --device cuda");
  }
  if (t.micro_batches > 1 && device != Device::kCpu) {
    return Status::InvalidArgument(
        "--micro-batches cuts the CPU model's batches (host activations); with --device cuda the "
        "activations are in device memory");
  }
  return Status::Ok();
}

Result<pipeline::ComputeSite> ComputeSiteFor(Device device, const format::Manifest& m,
                                             const train::TrainOptions& t,
                                             uint64_t* runtime_bytes) {
  if (device == Device::kCpu) return pipeline::ComputeSite{.aggregated_input = true};
  const uint64_t rss = CurrentRssBytes();
  SKIFF_ASSIGN_OR_RETURN(
      const model::Model::CudaPlacement placement,
      model::Model::CudaPlacementFor(t.device_memory_bytes, m.num_nodes, m.feature_dim, m.num_edges,
                                     static_cast<int>(t.fanouts.size()), t.LargestFanout()));
  *runtime_bytes += std::max(CurrentRssBytes(), rss) - rss;
  const uint64_t row_bytes = static_cast<uint64_t>(m.feature_dim) * sizeof(float);
  if (t.sampler == train::SamplerPlace::kDevice && !placement.features) {
    return Status::InvalidArgument(
        "--sampler device needs the features in device memory: they take " +
        FormatBytes(static_cast<uint64_t>(m.num_nodes) * row_bytes) + ", and the device gives " +
        "them " + FormatBytes(placement.feature_memory) +
        " (raise --device-memory, or use --sampler host or auto)");
  }
  pipeline::ComputeSite site{.device = true};
  site.features_on_device = placement.features;
  // With kDevice and a graph the device would not take, the model says why and the run stops.
  site.graph_on_device =
      placement.features && (t.sampler == train::SamplerPlace::kDevice ||
                             (t.sampler == train::SamplerPlace::kAuto && placement.graph));
  if (!placement.features && row_bytes > 0) {
    site.device_cache_rows =
        static_cast<int64_t>(std::min<uint64_t>(placement.feature_memory / row_bytes, m.num_nodes));
  }
  return site;
}

uint64_t CudaLibraryFileRssBytes() {
  static constexpr std::string_view kCudaLibraries[] = {
      "libcuda.", "libcudart.",  "libcublas",    "libnvidia-",
      "libnvrtc", "libcusparse", "libnvJitLink", "libskiff_cuda."};
  return MappedFileRssBytes(kCudaLibraries);
}

train::ModelFactory ModelFactoryFor(Device device, int slot) {
  if (device != Device::kCuda) return nullptr;
  return
      [slot](const model::ModelConfig& config) { return model::Model::CreateCuda(config, slot); };
}

Result<std::vector<int>> ParseGpuList(const std::string& text) {
  std::vector<int> gpus;
  if (text.empty()) return gpus;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    int value = -1;
    const auto [rest, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || rest != item.data() + item.size() || value < 0) {
      return Status::InvalidArgument("--gpus: '" + item +
                                     "' is not a GPU number (a list such as 0,1,2)");
    }
    if (std::find(gpus.begin(), gpus.end(), value) != gpus.end()) {
      return Status::InvalidArgument("--gpus: GPU " + item +
                                     " is listed twice: each GPU holds one replica");
    }
    gpus.push_back(value);
    start = end + 1;
  }
  return gpus;
}

train::ModelFactory TrainingModelFactory(Device device, const std::vector<int>& gpus,
                                         int accumulate) {
  if (device != Device::kCuda || (gpus.empty() && accumulate == 1)) return ModelFactoryFor(device);
  return [gpus, accumulate](const model::ModelConfig& config) {
    return model::Model::CreateCudaReplicas(config, gpus, accumulate);
  };
}

Status OfferFeaturesToDevice(const pipeline::ComputeSite& site, uint64_t memory_bytes,
                             train::Trainer* trainer) {
  if (!site.device) return Status::Ok();
  SKIFF_ASSIGN_OR_RETURN(const bool held, trainer->OfferFeatures());
  const bool graph_missing = site.graph_on_device && !trainer->model().samples_on_device();
  const bool features_missing = site.features_on_device && !held;
  if (graph_missing || (features_missing && memory_bytes > 0)) {
    return Status::ResourceExhausted(
        std::string("--device cuda: the plan counted on the ") +
        (features_missing ? "features" : "graph") +
        " in device memory, and the device did not take them (the reason is logged above; set "
        "--device-memory, or use --sampler host)");
  }
  if (features_missing) {
    LogWarning(
        "the device did not take the features it was planned for: every batch reads its "
        "rows from disk");
  }
  return Status::Ok();
}

Status OfferLinkFeaturesToDevice(Device device, uint64_t memory_bytes, uint64_t device_bytes,
                                 train::LinkTrainer* trainer) {
  if (device != Device::kCuda || memory_bytes > 0) return Status::Ok();
  SKIFF_ASSIGN_OR_RETURN(const bool held, trainer->OfferFeatures(device_bytes));
  if (!held) LogInfo("the features stay on the host: every batch uploads its rows");
  return Status::Ok();
}

}  // namespace skiff::cli
