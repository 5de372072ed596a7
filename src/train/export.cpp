#include "skiff/train/export.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <numeric>

#include "skiff/convert/id_map.h"
#include "skiff/io/atomic_file.h"
#include "skiff/io/npy_writer.h"

namespace skiff::train {

Status ExportPredictions(const format::Dataset& dataset, Trainer& trainer,
                         const std::string& out_dir) {
  const int64_t n = dataset.manifest().num_nodes;
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return Status::IOError("create " + out_dir + ": " + ec.message());
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::vector<std::string> raw;
  bool integer_ids = true;
  std::vector<int64_t> raw_int;
  if (dataset.manifest().has_id_map) {
    SKIFF_ASSIGN_OR_RETURN(auto map,
                           convert::IdMap::OpenReadOnly(dataset.dir() + "/" + format::kIdMapDir));
    raw.resize(n);
    raw_int.resize(n);
    for (int64_t v = 0; v < n; ++v) {
      SKIFF_ASSIGN_OR_RETURN(raw[v], map->RawId(v));
      const auto& s = raw[v];
      auto [ptr, err] = std::from_chars(s.data(), s.data() + s.size(), raw_int[v]);
      if (err != std::errc() || ptr != s.data() + s.size() || s.empty()) integer_ids = false;
    }
    if (integer_ids) {
      std::sort(order.begin(), order.end(),
                [&](int64_t a, int64_t b) { return raw_int[a] < raw_int[b]; });
    } else {
      std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return raw[a] < raw[b]; });
    }
  }
  std::vector<int32_t> classes;
  std::vector<float> embeddings;
  SKIFF_RETURN_IF_ERROR(trainer.Predict(order, &classes, &embeddings));
  const int64_t h = n > 0 ? static_cast<int64_t>(embeddings.size()) / n : 0;
  SKIFF_RETURN_IF_ERROR(io::WriteNpy(out_dir + "/predictions.npy", classes.data(), {n}));
  SKIFF_RETURN_IF_ERROR(io::WriteNpy(out_dir + "/embeddings.npy", embeddings.data(), {n, h}));
  if (!raw.empty()) {
    if (integer_ids) {
      std::vector<int64_t> ids(n);
      for (int64_t i = 0; i < n; ++i) ids[i] = raw_int[order[i]];
      SKIFF_RETURN_IF_ERROR(io::WriteNpy(out_dir + "/raw_ids.npy", ids.data(), {n}));
    } else {
      std::string text;
      for (int64_t i = 0; i < n; ++i) text += raw[order[i]] + "\n";
      SKIFF_RETURN_IF_ERROR(io::WriteFileAtomic(out_dir + "/raw_ids.txt", {text}));
    }
  }
  return Status::Ok();
}

}  // namespace skiff::train
