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
  return ExportPredictions(
      dataset,
      [&trainer](const std::vector<int64_t>& nodes, std::vector<int32_t>* classes,
                 std::vector<float>* embeddings) {
        return trainer.Predict(nodes, classes, embeddings);
      },
      out_dir);
}

Status ExportPredictions(const format::Dataset& dataset, const Predictor& predict,
                         const std::string& out_dir) {
  const int64_t n = dataset.manifest().num_nodes;
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return Status::IOError("create " + out_dir + ": " + ec.message());
  // Rows are in raw-ID order. A partitioned dataset has renumbered its nodes: node v was node
  // old_ids[v] before, and raw IDs (the ID map's, or those old numbers) follow the old numbering.
  std::vector<int64_t> base(n);
  std::iota(base.begin(), base.end(), int64_t{0});
  if (dataset.manifest().files.count(format::kRelabelOldIdsFile) > 0) {
    SKIFF_ASSIGN_OR_RETURN(const format::ChecksummedFileReader* file,
                           dataset.File(format::kRelabelOldIdsFile));
    if (file->info().data_bytes != static_cast<uint64_t>(n) * 8) {
      return Status::Corruption(file->path() + ": holds " +
                                std::to_string(file->info().data_bytes) + " bytes, expected " +
                                std::to_string(n * 8));
    }
    SKIFF_RETURN_IF_ERROR(file->ReadAt(0, static_cast<uint64_t>(n) * 8, base.data()));
    for (int64_t v = 0; v < n; ++v) {
      if (base[v] < 0 || base[v] >= n) {
        return Status::Corruption(file->path() + ": entry " + std::to_string(v) + " (" +
                                  std::to_string(base[v]) + ") is not a node ID below " +
                                  std::to_string(n));
      }
    }
  }
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
      SKIFF_ASSIGN_OR_RETURN(raw[v], map->RawId(base[v]));
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
  } else {
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return base[a] < base[b]; });
  }
  std::vector<int32_t> classes;
  std::vector<float> embeddings;
  SKIFF_RETURN_IF_ERROR(predict(order, &classes, &embeddings));
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
