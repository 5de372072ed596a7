#include "skiff/train/export.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <numeric>
#include <optional>

#include "skiff/convert/id_map.h"
#include "skiff/io/atomic_file.h"
#include "skiff/io/npy_writer.h"
#include "skiff/io/staged_dir.h"

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

namespace {

// Each node's number before partitioning: a partitioned dataset has renumbered its nodes (node v
// was node old_ids[v] before), and raw IDs follow the old numbering. Others: v itself.
// A relabelling that is not a permutation would write rows under the wrong raw IDs: LoadOldIds
// refuses it.
Result<std::vector<int64_t>> OldIds(const format::Dataset& dataset) { return dataset.LoadOldIds(); }

}  // namespace

Result<std::vector<std::string>> RawIdsOf(const format::Dataset& dataset,
                                          std::span<const int64_t> nodes) {
  const int64_t n = dataset.manifest().num_nodes;
  for (const int64_t v : nodes) {
    if (v < 0 || v >= n) {
      return Status::InvalidArgument("node " + std::to_string(v) + " is not in [0, " +
                                     std::to_string(n) + ")");
    }
  }
  SKIFF_ASSIGN_OR_RETURN(const std::vector<int64_t> old_ids, OldIds(dataset));
  std::vector<std::string> raw(nodes.size());
  if (!dataset.manifest().has_id_map) {
    for (size_t i = 0; i < nodes.size(); ++i) raw[i] = std::to_string(old_ids[nodes[i]]);
    return raw;
  }
  SKIFF_ASSIGN_OR_RETURN(std::unique_ptr<convert::IdMap> map,
                         convert::IdMap::OpenReadOnly(dataset.dir() + "/" + format::kIdMapDir));
  for (size_t i = 0; i < nodes.size(); ++i) {
    SKIFF_ASSIGN_OR_RETURN(raw[i], map->RawId(old_ids[nodes[i]]));
  }
  return raw;
}

namespace {

// The ID map's raw IDs of the nodes, as text and, where every one is an integer, as integers.
struct RawIds {
  std::vector<std::string> text;
  std::vector<int64_t> integer;
  bool integers = true;
};

Result<RawIds> LoadRawIds(const format::Dataset& dataset, const std::vector<int64_t>& old_ids) {
  SKIFF_ASSIGN_OR_RETURN(auto map,
                         convert::IdMap::OpenReadOnly(dataset.dir() + "/" + format::kIdMapDir));
  const size_t n = old_ids.size();
  RawIds raw;
  raw.text.resize(n);
  raw.integer.resize(n);
  for (size_t v = 0; v < n; ++v) {
    SKIFF_ASSIGN_OR_RETURN(raw.text[v], map->RawId(old_ids[v]));
    const std::string& s = raw.text[v];
    auto [ptr, err] = std::from_chars(s.data(), s.data() + s.size(), raw.integer[v]);
    if (err != std::errc() || ptr != s.data() + s.size() || s.empty()) raw.integers = false;
  }
  return raw;
}

// The nodes in the order of their raw IDs (`raw`, when the dataset has an ID map), else of their
// numbers before partitioning.
std::vector<int64_t> ExportOrder(const std::vector<int64_t>& old_ids,
                                 const std::optional<RawIds>& raw) {
  std::vector<int64_t> order(old_ids.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!raw.has_value()) {
    std::sort(order.begin(), order.end(),
              [&](int64_t a, int64_t b) { return old_ids[a] < old_ids[b]; });
  } else if (raw->integers) {
    std::sort(order.begin(), order.end(),
              [&](int64_t a, int64_t b) { return raw->integer[a] < raw->integer[b]; });
  } else {
    std::sort(order.begin(), order.end(),
              [&](int64_t a, int64_t b) { return raw->text[a] < raw->text[b]; });
  }
  return order;
}

// raw_ids.npy (integers) or raw_ids.txt (one per line), in export order.
Status WriteRawIds(const RawIds& raw, const std::vector<int64_t>& order,
                   const std::string& out_dir) {
  const auto n = static_cast<int64_t>(order.size());
  if (raw.integers) {
    std::vector<int64_t> ids(n);
    for (int64_t i = 0; i < n; ++i) ids[i] = raw.integer[order[i]];
    return io::WriteNpy(out_dir + "/raw_ids.npy", ids.data(), {n});
  }
  std::string text;
  for (int64_t i = 0; i < n; ++i) text += raw.text[order[i]] + "\n";
  return io::WriteFileAtomic(out_dir + "/raw_ids.txt", {text});
}

}  // namespace

Status ExportReplaceable(const std::string& out_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(out_dir, ec)) {
    return Status::InvalidArgument("output " + out_dir +
                                   " exists and is not a directory (remove it, or choose another "
                                   "path)");
  }
  for (const auto& entry : std::filesystem::directory_iterator(out_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (std::find(std::begin(kExportFiles), std::end(kExportFiles), name) ==
        std::end(kExportFiles)) {
      return Status::InvalidArgument(
          "output " + out_dir + " holds " + name +
          ", which is not part of an export: only an earlier export (or an empty directory) is "
          "replaced (remove it, or choose another path)");
    }
  }
  if (ec) return Status::IOError("list " + out_dir + ": " + ec.message());
  return Status::Ok();
}

namespace {

// Writes an export of every node into `out_dir`, published whole: `write` gets the nodes in
// raw-ID order (the ID map's, or the node numbers before partitioning) and the staging directory,
// and the raw IDs go beside its files.
Status StageExport(
    const format::Dataset& dataset, const std::string& out_dir,
    const std::function<Status(const std::vector<int64_t>& order, const std::string& dir)>& write) {
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::absolute(out_dir, ec).parent_path();
  std::filesystem::create_directories(parent, ec);
  if (ec) return Status::IOError("create " + parent.string() + ": " + ec.message());
  SKIFF_ASSIGN_OR_RETURN(auto staged, io::StagedDirectory::Create(out_dir, ExportReplaceable));
  SKIFF_ASSIGN_OR_RETURN(const std::vector<int64_t> old_ids, OldIds(dataset));
  std::optional<RawIds> raw;
  if (dataset.manifest().has_id_map) {
    SKIFF_ASSIGN_OR_RETURN(raw, LoadRawIds(dataset, old_ids));
  }
  const std::vector<int64_t> order = ExportOrder(old_ids, raw);
  const std::string& dir = staged->staging();
  SKIFF_RETURN_IF_ERROR(write(order, dir));
  if (raw.has_value()) SKIFF_RETURN_IF_ERROR(WriteRawIds(*raw, order, dir));
  return staged->Publish().WithContext("publishing the export " + out_dir);
}

}  // namespace

Status ExportPredictions(const format::Dataset& dataset, const Predictor& predict,
                         const std::string& out_dir) {
  const int64_t n = dataset.manifest().num_nodes;
  return StageExport(
      dataset, out_dir, [&](const std::vector<int64_t>& order, const std::string& dir) -> Status {
        std::vector<int32_t> classes;
        std::vector<float> embeddings;
        SKIFF_RETURN_IF_ERROR(predict(order, &classes, &embeddings));
        const int64_t h = n > 0 ? static_cast<int64_t>(embeddings.size()) / n : 0;
        SKIFF_RETURN_IF_ERROR(io::WriteNpy(dir + "/predictions.npy", classes.data(), {n}));
        return io::WriteNpy(dir + "/embeddings.npy", embeddings.data(), {n, h});
      });
}

Status ExportEmbeddings(const format::Dataset& dataset, const Embedder& embed,
                        const std::string& out_dir) {
  const int64_t n = dataset.manifest().num_nodes;
  return StageExport(dataset, out_dir,
                     [&](const std::vector<int64_t>& order, const std::string& dir) -> Status {
                       std::vector<float> embeddings;
                       SKIFF_RETURN_IF_ERROR(embed(order, &embeddings));
                       const int64_t h = n > 0 ? static_cast<int64_t>(embeddings.size()) / n : 0;
                       return io::WriteNpy(dir + "/embeddings.npy", embeddings.data(), {n, h});
                     });
}

Result<std::vector<int64_t>> DenseIdsOf(const format::Dataset& dataset,
                                        std::span<const std::string> raw,
                                        const std::function<std::string(size_t)>& what) {
  const int64_t n = dataset.manifest().num_nodes;
  SKIFF_ASSIGN_OR_RETURN(const std::vector<int64_t> old_ids, OldIds(dataset));
  std::vector<int64_t> dense_of_old(static_cast<size_t>(n), -1);
  for (int64_t v = 0; v < n; ++v) dense_of_old[old_ids[v]] = v;
  std::unique_ptr<convert::IdMap> map;
  if (dataset.manifest().has_id_map) {
    SKIFF_ASSIGN_OR_RETURN(map,
                           convert::IdMap::OpenReadOnly(dataset.dir() + "/" + format::kIdMapDir));
  }
  std::vector<int64_t> out(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    int64_t old = -1;
    if (map != nullptr) {
      SKIFF_ASSIGN_OR_RETURN(const std::optional<int64_t> found, map->Find(raw[i]));
      old = found.value_or(-1);
    } else {
      const std::string& s = raw[i];
      auto [ptr, err] = std::from_chars(s.data(), s.data() + s.size(), old);
      if (err != std::errc() || ptr != s.data() + s.size()) old = -1;
    }
    if (old < 0 || old >= n || dense_of_old[old] < 0) {
      return Status::InvalidArgument(
          what(i) + ": node \"" + raw[i] + "\" is not in " + dataset.dir() +
          (map != nullptr ? " (its ID map)" : " (nodes 0 to " + std::to_string(n - 1) + ")"));
    }
    out[i] = dense_of_old[old];
  }
  return out;
}

}  // namespace skiff::train
