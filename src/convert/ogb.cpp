#include "skiff/convert/ogb.h"

#include "skiff/format/dataset.h"
#include "skiff/io/npy.h"

#include <algorithm>
#include <filesystem>

namespace skiff::convert {
namespace fs = std::filesystem;

namespace {
const char* kLayoutHelp =
    "expected the OGB node-property raw layout: raw/edge.csv.gz, optional "
    "raw/num-node-list.csv.gz, "
    "raw/node-feat.csv.gz, raw/node-label.csv.gz and split/<name>/{train,valid,test}.csv.gz "
    "(node splits) or .npz (edge splits)";

// The file `base` + ".csv.gz", or + ".csv" when only the uncompressed one exists; "" if neither.
std::string FindCsv(const fs::path& dir, const std::string& base) {
  std::error_code ec;
  for (const char* ext : {".csv.gz", ".csv"}) {
    const fs::path p = dir / (base + ext);
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

// The link-prediction layout: split/<name>/{train,valid,test}.npz (the .pt files rewritten).
Result<OgbLayout> FindOgbLinkSplit(const std::string& dir, const fs::path& sdir, OgbLayout layout) {
  std::error_code ec;
  const std::string where = "OGB dataset " + dir + ": split/" + layout.split_name + "/";
  for (const auto& [file, name] :
       {std::pair{&layout.train_file, "train"}, std::pair{&layout.valid_file, "valid"},
        std::pair{&layout.test_file, "test"}}) {
    const fs::path npz = sdir / (std::string(name) + ".npz");
    if (fs::is_regular_file(npz, ec)) {
      *file = npz.string();
      continue;
    }
    if (fs::is_regular_file(sdir / (std::string(name) + ".pt"), ec)) {
      return Status::InvalidArgument(
          where + name +
          ".pt is a torch pickle (OGB's link-prediction split), which skiff does "
          "not read: run `python3 tools/ogb/link_splits_to_npz.py " +
          dir + "` once (it needs torch) to write train.npz, valid.npz and test.npz beside it");
    }
    return Status::NotFound(
        where + name + ".csv.gz (a node split) or " + name +
        ".npz (an edge split) is missing; expected train, valid and test files");
  }
  layout.link = true;
  return layout;
}

bool IsBlankLine(std::string_view line) {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}
}  // namespace

bool IsOgbDirectory(const std::string& dir) {
  std::error_code ec;
  return fs::is_directory(fs::path(dir) / "raw", ec);
}

Result<OgbLayout> FindOgbLayout(const std::string& dir, const std::string& split_name) {
  OgbLayout layout;
  layout.root = dir;
  const fs::path raw = fs::path(dir) / "raw";
  std::error_code ec;
  if (!fs::is_directory(raw, ec)) {
    return Status::NotFound("OGB dataset " + dir + ": no raw/ directory; " + kLayoutHelp);
  }
  layout.edge_file = FindCsv(raw, "edge");
  if (layout.edge_file.empty()) {
    return Status::NotFound("OGB dataset " + dir + ": raw/edge.csv.gz is missing; " + kLayoutHelp);
  }
  layout.num_nodes_file = FindCsv(raw, "num-node-list");
  layout.node_feat_file = FindCsv(raw, "node-feat");
  layout.node_label_file = FindCsv(raw, "node-label");

  const fs::path split_root = fs::path(dir) / "split";
  std::vector<std::string> names;
  if (fs::is_directory(split_root, ec)) {
    for (const auto& entry : fs::directory_iterator(split_root, ec)) {
      if (entry.is_directory(ec)) names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
  }
  if (!split_name.empty()) {
    if (std::find(names.begin(), names.end(), split_name) == names.end()) {
      std::string have;
      for (const auto& n : names) have += (have.empty() ? "" : ", ") + n;
      return Status::NotFound(
          "OGB dataset " + dir + ": split/" + split_name +
          " does not exist (split directories: " + (have.empty() ? "none" : have) + ")");
    }
    layout.split_name = split_name;
  } else if (names.size() == 1) {
    layout.split_name = names[0];
  } else if (names.size() > 1) {
    std::string have;
    for (const auto& n : names) have += (have.empty() ? "" : ", ") + n;
    return Status::InvalidArgument("OGB dataset " + dir + " has several split directories (" +
                                   have + "); choose one with --ogb-split NAME");
  }
  if (!layout.split_name.empty()) {
    const fs::path sdir = split_root / layout.split_name;
    if (FindCsv(sdir, "train").empty()) return FindOgbLinkSplit(dir, sdir, std::move(layout));
    layout.train_file = FindCsv(sdir, "train");
    layout.valid_file = FindCsv(sdir, "valid");
    layout.test_file = FindCsv(sdir, "test");
    for (const auto& [file, name] :
         {std::pair{&layout.train_file, "train"}, std::pair{&layout.valid_file, "valid"},
          std::pair{&layout.test_file, "test"}}) {
      if (file->empty()) {
        return Status::NotFound("OGB dataset " + dir + ": split/" + layout.split_name + "/" + name +
                                ".csv.gz is missing; expected train, valid and test files");
      }
    }
  }
  return layout;
}

namespace {

// An integer array of `key` in the archive, checked to have `columns` columns (0: 1-D) and IDs in
// [0, num_nodes).
Result<std::vector<int64_t>> ReadIdArray(const std::string& path, const std::string& key,
                                         int columns, int64_t num_nodes) {
  SKIFF_ASSIGN_OR_RETURN(auto reader, io::NpyReader::OpenNpzEntry(path, key));
  const io::NpyHeader& h = reader->header();
  const bool shaped =
      columns == 0 ? h.shape.size() == 1 : h.shape.size() == 2 && h.shape[1] == columns;
  if (!shaped || !h.is_integer()) {
    std::string shape;
    for (int64_t d : h.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    return Status::Corruption(
        reader->source() + ": expected integer node IDs of shape " +
        (columns == 0 ? std::string("[n]") : "[n, " + std::to_string(columns) + "]") + ", found " +
        h.descr + " [" + shape + "]");
  }
  std::vector<int64_t> ids(static_cast<size_t>(h.num_elements()));
  SKIFF_RETURN_IF_ERROR(reader->ReadInt64(static_cast<int64_t>(ids.size()), ids.data()));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= num_nodes) {
      return Status::Corruption(reader->source() + ": element " + std::to_string(i) + " is node " +
                                std::to_string(ids[i]) + ", outside [0, " +
                                std::to_string(num_nodes) + ")");
    }
  }
  return ids;
}

}  // namespace

Result<OgbEdgeSplitFile> ReadOgbEdgeSplitFile(const std::string& path, int64_t num_nodes,
                                              bool read_candidates) {
  SKIFF_ASSIGN_OR_RETURN(const std::vector<std::string> keys, io::ListNpzEntries(path));
  const auto has = [&](const char* key) {
    return std::find(keys.begin(), keys.end(), key) != keys.end();
  };
  OgbEdgeSplitFile out;
  if (has("edge")) {
    SKIFF_ASSIGN_OR_RETURN(out.pairs, ReadIdArray(path, "edge", 2, num_nodes));
  } else if (has("source_node") && has("target_node")) {
    SKIFF_ASSIGN_OR_RETURN(auto sources, ReadIdArray(path, "source_node", 0, num_nodes));
    SKIFF_ASSIGN_OR_RETURN(auto targets, ReadIdArray(path, "target_node", 0, num_nodes));
    if (sources.size() != targets.size()) {
      return Status::Corruption(path + ": source_node has " + std::to_string(sources.size()) +
                                " entries but target_node " + std::to_string(targets.size()));
    }
    out.pairs.reserve(2 * sources.size());
    for (size_t i = 0; i < sources.size(); ++i) {
      out.pairs.push_back(sources[i]);
      out.pairs.push_back(targets[i]);
    }
  } else {
    std::string found;
    for (const auto& k : keys) found += (found.empty() ? "" : ", ") + k;
    return Status::InvalidArgument(path +
                                   ": expected the arrays \"edge\" or \"source_node\" and "
                                   "\"target_node\" (an OGB link-prediction split); found: " +
                                   (found.empty() ? "none" : found));
  }
  if (has("edge_neg")) {
    SKIFF_ASSIGN_OR_RETURN(out.negatives, ReadIdArray(path, "edge_neg", 2, num_nodes));
  }
  if (has("target_node_neg")) {
    SKIFF_ASSIGN_OR_RETURN(auto reader, io::NpyReader::OpenNpzEntry(path, "target_node_neg"));
    const auto& shape = reader->header().shape;
    const auto positives = static_cast<int64_t>(out.pairs.size() / 2);
    if (shape.size() != 2 || shape[0] != positives || shape[1] < 1) {
      return Status::Corruption(reader->source() + ": expected [" + std::to_string(positives) +
                                ", K] candidates, one row per positive");
    }
    out.negatives_per_positive = shape[1];
    if (read_candidates) {
      SKIFF_ASSIGN_OR_RETURN(out.candidates, ReadIdArray(path, "target_node_neg",
                                                         static_cast<int>(shape[1]), num_nodes));
    }
  }
  return out;
}

Result<int64_t> ReadOgbNumNodes(const std::string& path) {
  SKIFF_ASSIGN_OR_RETURN(auto lines, LineReader::Open(path));
  std::string_view line;
  std::vector<std::string_view> fields;
  while (lines->Next(&line)) {
    if (IsBlankLine(line)) continue;
    SplitFields(line, &fields);
    int64_t n = 0;
    if (fields.size() != 1 || !ParseInt64(fields[0], &n) || n < 0) {
      return Status::Corruption(lines->Where() +
                                ": expected the number of nodes (one non-negative integer)");
    }
    return n;
  }
  SKIFF_RETURN_IF_ERROR(lines->status());
  return Status::Corruption(path + ": file is empty; expected the number of nodes");
}

Result<std::vector<int64_t>> ReadOgbIndexFile(const std::string& path, int64_t num_nodes) {
  SKIFF_ASSIGN_OR_RETURN(auto lines, LineReader::Open(path));
  std::vector<int64_t> ids;
  std::string_view line;
  std::vector<std::string_view> fields;
  while (lines->Next(&line)) {
    if (IsBlankLine(line)) continue;
    SplitFields(line, &fields);
    int64_t v = 0;
    if (fields.size() != 1 || !ParseInt64(fields[0], &v)) {
      return Status::Corruption(lines->Where() +
                                ": expected one integer node ID per line, found \"" +
                                std::string(line.substr(0, 80)) + "\"");
    }
    if (v < 0 || v >= num_nodes) {
      return Status::Corruption(lines->Where() + ": node ID " + std::to_string(v) +
                                " is out of range [0, " + std::to_string(num_nodes) + ")");
    }
    ids.push_back(v);
  }
  SKIFF_RETURN_IF_ERROR(lines->status());
  std::sort(ids.begin(), ids.end());
  const auto dup = std::adjacent_find(ids.begin(), ids.end());
  if (dup != ids.end()) {
    return Status::Corruption(path + ": node ID " + std::to_string(*dup) +
                              " is listed more than once");
  }
  return ids;
}

Result<std::vector<int32_t>> ReadOgbLabels(const std::string& path, int64_t num_nodes) {
  SKIFF_ASSIGN_OR_RETURN(auto lines, LineReader::Open(path));
  std::vector<int32_t> labels;
  labels.reserve(static_cast<size_t>(num_nodes));
  std::string_view line;
  std::vector<std::string_view> fields;
  while (lines->Next(&line)) {
    SplitFields(line, &fields);
    if (fields.size() > 1) {
      return Status::Corruption(lines->Where() + ": expected one label per line, found " +
                                std::to_string(fields.size()) +
                                " columns (multi-label tasks are not supported)");
    }
    if (static_cast<int64_t>(labels.size()) == num_nodes) {
      if (IsBlankLine(line)) continue;
      return Status::Corruption(lines->Where() + ": more label lines than the " +
                                std::to_string(num_nodes) + " nodes");
    }
    const std::string_view f = fields.empty() ? std::string_view() : fields[0];
    int64_t v = 0;
    float fv = 0;
    if (f.empty() || f == "nan" || f == "NaN") {
      labels.push_back(-1);
    } else if (ParseInt64(f, &v) && v >= -1 && v < format::kMaxClasses) {
      labels.push_back(static_cast<int32_t>(v));
    } else if (ParseFloat(f, &fv) && fv >= 0 && fv < static_cast<float>(format::kMaxClasses) &&
               fv == static_cast<float>(static_cast<int32_t>(fv))) {
      labels.push_back(static_cast<int32_t>(fv));
    } else {
      return Status::Corruption(lines->Where() + ": label \"" + std::string(f.substr(0, 40)) +
                                "\" is not a class number (an integer in [0, 2^24), or nan for "
                                "unlabelled)");
    }
  }
  SKIFF_RETURN_IF_ERROR(lines->status());
  if (static_cast<int64_t>(labels.size()) != num_nodes) {
    return Status::Corruption(path + ": " + std::to_string(labels.size()) +
                              " label lines, expected one per node (" + std::to_string(num_nodes) +
                              ")");
  }
  return labels;
}

Result<std::unique_ptr<CsvFloatRowReader>> CsvFloatRowReader::Open(const std::string& path) {
  SKIFF_ASSIGN_OR_RETURN(auto lines, LineReader::Open(path));
  std::unique_ptr<CsvFloatRowReader> reader(new CsvFloatRowReader(std::move(lines)));
  std::string_view line;
  if (reader->lines_->Next(&line)) {
    SplitFields(line, &reader->fields_);
    reader->dim_ = static_cast<int64_t>(reader->fields_.size());
    reader->first_line_.assign(line);
    reader->have_first_ = true;
  }
  SKIFF_RETURN_IF_ERROR(reader->lines_->status());
  return reader;
}

bool CsvFloatRowReader::ParseRow(std::string_view line, float* row) {
  SplitFields(line, &fields_);
  if (static_cast<int64_t>(fields_.size()) != dim_) {
    status_ = Status::Corruption(lines_->Where() + ": expected " + std::to_string(dim_) +
                                 " comma-separated feature values (as on the first line), found " +
                                 std::to_string(fields_.size()));
    return false;
  }
  for (int64_t col = 0; col < dim_; ++col) {
    if (!ParseFloat(fields_[static_cast<size_t>(col)], &row[col])) {
      status_ = Status::Corruption(
          lines_->Where() + ": column " + std::to_string(col + 1) + ": \"" +
          std::string(fields_[static_cast<size_t>(col)].substr(0, 40)) + "\" is not a number");
      return false;
    }
  }
  ++rows_read_;
  return true;
}

bool CsvFloatRowReader::NextRow(float* row) {
  if (!status_.ok()) return false;
  if (have_first_) {
    have_first_ = false;
    return ParseRow(first_line_, row);
  }
  std::string_view line;
  if (!lines_->Next(&line)) {
    status_ = lines_->status();
    return false;
  }
  return ParseRow(line, row);
}

}  // namespace skiff::convert
