// .npz graph conversion (see include/skiff/convert/npz_graph.h).
//
// Memory: the CSR row pointers (N+1 values) and the labels are held in memory; adjacency indices
// and attribute values are streamed row by row. With `undirected`, the reverse edges are added by
// loading the adjacency indices (2 * nnz values) -- .npz graphs are loaded whole by their usual
// readers (scipy), so this is no larger than what produced the archive.
#include "skiff/convert/npz_graph.h"

#include "skiff/convert/feature_values.h"

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <set>

#include "skiff/half.h"
#include "skiff/io/npy.h"
#include "skiff/log.h"
#include "skiff/progress.h"

namespace skiff::convert {
namespace {

using io::NpyReader;

class Archive {
 public:
  static Result<Archive> Open(const std::string& path) {
    SKIFF_ASSIGN_OR_RETURN(auto names, io::ListNpzEntries(path));
    return Archive(path, std::set<std::string>(names.begin(), names.end()));
  }
  bool Has(const std::string& name) const { return names_.count(name) != 0; }
  const std::string& path() const { return path_; }

  Result<std::unique_ptr<NpyReader>> Open1D(const std::string& name, int64_t expected) const {
    SKIFF_ASSIGN_OR_RETURN(auto r, NpyReader::OpenNpzEntry(path_, name));
    const auto& shape = r->header().shape;
    if (shape.size() != 1) {
      return Status::InvalidArgument(r->source() + ": expected a 1-D array, got " +
                                     std::to_string(shape.size()) + " dimensions");
    }
    if (expected >= 0 && shape[0] != expected) {
      return Status::InvalidArgument(r->source() + ": shape mismatch: expected " +
                                     std::to_string(expected) + " elements, got " +
                                     std::to_string(shape[0]));
    }
    return r;
  }
  Result<std::vector<int64_t>> ReadInts(const std::string& name, int64_t expected) const {
    SKIFF_ASSIGN_OR_RETURN(auto r, Open1D(name, expected));
    std::vector<int64_t> v(static_cast<size_t>(r->header().shape[0]));
    SKIFF_RETURN_IF_ERROR(r->ReadInt64(static_cast<int64_t>(v.size()), v.data()));
    return v;
  }
  // A (rows, cols) pair stored as a length-2 array.
  Result<std::pair<int64_t, int64_t>> ReadShape(const std::string& name) const {
    SKIFF_ASSIGN_OR_RETURN(auto v, ReadInts(name, 2));
    if (v[0] < 0 || v[1] < 0) {
      return Status::InvalidArgument(path_ + ":" + name + ".npy: negative dimension");
    }
    return std::make_pair(v[0], v[1]);
  }
  // CSR row pointers: rows+1 non-decreasing values from 0 to nnz.
  Result<std::vector<int64_t>> ReadIndptr(const std::string& name, int64_t rows,
                                          int64_t nnz) const {
    SKIFF_ASSIGN_OR_RETURN(auto p, ReadInts(name, rows + 1));
    if (p.front() != 0 || p.back() != nnz) {
      return Status::Corruption(path_ + ":" + name + ".npy: CSR row pointers must run from 0 to " +
                                std::to_string(nnz) + " (the number of stored entries), got " +
                                std::to_string(p.front()) + " .. " + std::to_string(p.back()));
    }
    for (size_t i = 1; i < p.size(); ++i) {
      if (p[i] < p[i - 1]) {
        return Status::Corruption(path_ + ":" + name + ".npy: CSR row pointers decrease at row " +
                                  std::to_string(i - 1));
      }
    }
    return p;
  }

 private:
  Archive(std::string path, std::set<std::string> names)
      : path_(std::move(path)), names_(std::move(names)) {}
  std::string path_;
  std::set<std::string> names_;
};

Status Missing(const Archive& a, const std::string& what) {
  return Status::InvalidArgument(a.path() + ": archive lacks " + what +
                                 " (expected the layout adj_data/adj_indices/adj_indptr/adj_shape,"
                                 " attr_data/attr_indices/attr_indptr/attr_shape or attr_matrix,"
                                 " labels)");
}

// Sorts, de-duplicates and (optionally) drops self loops of one row in place.
void CleanRow(std::vector<int64_t>& row, int64_t self, bool keep_self_loops) {
  std::sort(row.begin(), row.end());
  row.erase(std::unique(row.begin(), row.end()), row.end());
  if (!keep_self_loops) {
    auto it = std::lower_bound(row.begin(), row.end(), self);
    if (it != row.end() && *it == self) row.erase(it);
  }
}

// Appends one row of neighbour IDs in the dataset's neighbour dtype.
Status AppendRow(format::ChecksummedFileWriter& file, const std::vector<int64_t>& row, bool wide,
                 std::vector<int32_t>& narrow) {
  if (wide) return file.Append(row.data(), row.size() * 8);
  narrow.assign(row.begin(), row.end());
  return file.Append(narrow.data(), narrow.size() * 4);
}

// An adjacency index read from `source` at element `at`: a node in [0, n).
Status CheckNode(const std::string& source, int64_t u, int64_t at, int64_t n) {
  if (u >= 0 && u < n) return Status::Ok();
  return Status::Corruption(source + ": element " + std::to_string(at) + " is node " +
                            std::to_string(u) + ", outside [0, " + std::to_string(n) + ")");
}

// Writes the dataset's neighbour lists row by row, cleaned (CleanRow), and keeps their offsets.
class RowWriter {
 public:
  RowWriter(format::ChecksummedFileWriter* file, int64_t n, bool wide, bool keep_self_loops)
      : file_(file),
        wide_(wide),
        keep_self_loops_(keep_self_loops),
        offsets_(static_cast<size_t>(n) + 1, 0),
        progress_("adjacency", static_cast<uint64_t>(n), "rows") {}

  // Appends node v's row (v = the rows appended so before); `row` is cleaned in place.
  Status Append(int64_t v, std::vector<int64_t>& row) {
    CleanRow(row, v, keep_self_loops_);
    SKIFF_RETURN_IF_ERROR(AppendRow(*file_, row, wide_, narrow_));
    offsets_[static_cast<size_t>(v) + 1] =
        offsets_[static_cast<size_t>(v)] + static_cast<int64_t>(row.size());
    if ((v & 0xffff) == 0) progress_.Set(static_cast<uint64_t>(v));
    return Status::Ok();
  }

  // The offsets of the n rows, once all are appended.
  const std::vector<int64_t>& Finish() {
    progress_.Set(static_cast<uint64_t>(offsets_.size() - 1));
    progress_.Finish();
    return offsets_;
  }

 private:
  format::ChecksummedFileWriter* const file_;
  const bool wide_;
  const bool keep_self_loops_;
  std::vector<int64_t> offsets_;
  std::vector<int32_t> narrow_;
  Progress progress_;
};

// The rows as stored: streamed from the indices, one row at a time.
Status WriteStoredRows(NpyReader& indices, const std::vector<int64_t>& indptr, int64_t n,
                       RowWriter& rows) {
  std::vector<int64_t> row;
  for (int64_t v = 0; v < n; ++v) {
    const int64_t begin = indptr[static_cast<size_t>(v)];
    row.resize(static_cast<size_t>(indptr[static_cast<size_t>(v) + 1] - begin));
    SKIFF_RETURN_IF_ERROR(indices.ReadInt64(static_cast<int64_t>(row.size()), row.data()));
    for (size_t k = 0; k < row.size(); ++k) {
      SKIFF_RETURN_IF_ERROR(
          CheckNode(indices.source(), row[k], begin + static_cast<int64_t>(k), n));
    }
    SKIFF_RETURN_IF_ERROR(rows.Append(v, row));
  }
  return Status::Ok();
}

// The rows with every edge's reverse added: the indices are loaded whole, and both directions
// bucketed by source (a counting sort) before each row is written.
Status WriteSymmetricRows(NpyReader& indices, const std::vector<int64_t>& indptr, int64_t n,
                          RowWriter& rows) {
  const int64_t nnz = indptr.back();
  std::vector<int64_t> targets(static_cast<size_t>(nnz));
  SKIFF_RETURN_IF_ERROR(indices.ReadInt64(nnz, targets.data()));
  // Each edge (v, u) in stored order; f(v, u) is called for each.
  const auto for_each_edge = [&](auto&& f) {
    for (int64_t v = 0; v < n; ++v) {
      const auto end = indptr[static_cast<size_t>(v) + 1];
      for (int64_t k = indptr[static_cast<size_t>(v)]; k < end; ++k) {
        f(v, targets[static_cast<size_t>(k)]);
      }
    }
  };
  for (int64_t k = 0; k < nnz; ++k) {
    SKIFF_RETURN_IF_ERROR(CheckNode(indices.source(), targets[static_cast<size_t>(k)], k, n));
  }
  std::vector<int64_t> degree(static_cast<size_t>(n) + 1, 0);
  for_each_edge([&](int64_t v, int64_t u) {
    ++degree[static_cast<size_t>(v) + 1];
    ++degree[static_cast<size_t>(u) + 1];
  });
  for (int64_t v = 0; v < n; ++v) {
    degree[static_cast<size_t>(v) + 1] += degree[static_cast<size_t>(v)];
  }
  std::vector<int64_t> both(static_cast<size_t>(degree.back()));
  std::vector<int64_t> fill(degree.begin(), degree.end() - 1);
  for_each_edge([&](int64_t v, int64_t u) {
    both[static_cast<size_t>(fill[static_cast<size_t>(v)]++)] = u;
    both[static_cast<size_t>(fill[static_cast<size_t>(u)]++)] = v;
  });
  targets = {};
  std::vector<int64_t> row;
  for (int64_t v = 0; v < n; ++v) {
    row.assign(both.begin() + degree[static_cast<size_t>(v)],
               both.begin() + degree[static_cast<size_t>(v) + 1]);
    SKIFF_RETURN_IF_ERROR(rows.Append(v, row));
  }
  return Status::Ok();
}

Status WriteAdjacency(const Archive& a, const NpzGraphOptions& opt, int64_t n,
                      format::DatasetWriter& writer) {
  if (!a.Has("adj_indices") || !a.Has("adj_indptr") || !a.Has("adj_shape")) {
    return Missing(a, "the CSR adjacency adj_indices/adj_indptr/adj_shape");
  }
  SKIFF_ASSIGN_OR_RETURN(auto indices_reader, a.Open1D("adj_indices", -1));
  const int64_t nnz = indices_reader->header().shape[0];
  SKIFF_ASSIGN_OR_RETURN(auto indptr, a.ReadIndptr("adj_indptr", n, nnz));
  const bool wide = n >= (int64_t{1} << 31);
  writer.manifest().neighbor_dtype = wide ? format::DType::kInt64 : format::DType::kInt32;
  SKIFF_ASSIGN_OR_RETURN(auto neighbors, writer.CreateFile(format::kNeighborsFile));
  RowWriter rows(neighbors.get(), n, wide, opt.keep_self_loops);
  SKIFF_RETURN_IF_ERROR(opt.undirected ? WriteSymmetricRows(*indices_reader, indptr, n, rows)
                                       : WriteStoredRows(*indices_reader, indptr, n, rows));
  const std::vector<int64_t>& offsets = rows.Finish();
  SKIFF_RETURN_IF_ERROR(writer.FinishFile(*neighbors));
  SKIFF_RETURN_IF_ERROR(writer.WriteFile(format::kOffsetsFile, offsets.data(), offsets.size() * 8));
  writer.manifest().num_edges = offsets.back();
  writer.manifest().undirected = opt.undirected;
  return Status::Ok();
}

// Appends node v's float32 row to features.bin in the dataset's feature dtype.
Status AppendFeatureRow(format::ChecksummedFileWriter& file, const std::vector<float>& row,
                        int64_t v, const std::string& source, format::DType dtype,
                        std::vector<uint16_t>& half) {
  SKIFF_RETURN_IF_ERROR(
      CheckFeatureValues(row.data(), 1, static_cast<int64_t>(row.size()), v, dtype, source));
  if (dtype == format::DType::kFloat32) return file.Append(row.data(), row.size() * 4);
  half.resize(row.size());
  for (size_t k = 0; k < row.size(); ++k) half[k] = FloatToHalf(row[k]);
  return file.Append(half.data(), half.size() * 2);
}

// Sparse attributes (attr_data/attr_indices/attr_indptr/attr_shape): each row is summed from its
// entries (duplicates add up, as in scipy) and written dense.
Status WriteSparseFeatures(const Archive& a, const NpzGraphOptions& opt, int64_t n,
                           format::DatasetWriter& writer, format::ChecksummedFileWriter& features) {
  SKIFF_ASSIGN_OR_RETURN(auto shape, a.ReadShape("attr_shape"));
  if (shape.first != n) {
    return Status::InvalidArgument(
        a.path() + ":attr_shape.npy: shape mismatch: " + std::to_string(shape.first) +
        " feature rows, expected one per node (" + std::to_string(n) + ")");
  }
  const int64_t dim = shape.second;
  SKIFF_ASSIGN_OR_RETURN(auto cols, a.Open1D("attr_indices", -1));
  const int64_t nnz = cols->header().shape[0];
  SKIFF_ASSIGN_OR_RETURN(auto vals, a.Open1D("attr_data", nnz));
  SKIFF_ASSIGN_OR_RETURN(auto indptr, a.ReadIndptr("attr_indptr", n, nnz));
  writer.manifest().feature_dim = dim;
  std::vector<float> row;
  std::vector<uint16_t> half;
  std::vector<int64_t> row_cols;
  std::vector<float> row_vals;
  Progress progress("features", static_cast<uint64_t>(n), "rows");
  for (int64_t v = 0; v < n; ++v) {
    const int64_t begin = indptr[static_cast<size_t>(v)];
    const auto count = static_cast<size_t>(indptr[static_cast<size_t>(v) + 1] - begin);
    row_cols.resize(count);
    row_vals.resize(count);
    SKIFF_RETURN_IF_ERROR(cols->ReadInt64(static_cast<int64_t>(count), row_cols.data()));
    SKIFF_RETURN_IF_ERROR(vals->ReadFloat(static_cast<int64_t>(count), row_vals.data()));
    row.assign(static_cast<size_t>(dim), 0.0f);
    for (size_t k = 0; k < count; ++k) {
      if (row_cols[k] < 0 || row_cols[k] >= dim) {
        return Status::Corruption(cols->source() + ": element " +
                                  std::to_string(begin + static_cast<int64_t>(k)) + " is column " +
                                  std::to_string(row_cols[k]) + ", outside [0, " +
                                  std::to_string(dim) + ")");
      }
      row[static_cast<size_t>(row_cols[k])] += row_vals[k];
    }
    SKIFF_RETURN_IF_ERROR(
        AppendFeatureRow(features, row, v, vals->source(), opt.feature_dtype, half));
    if ((v & 0xffff) == 0) progress.Set(static_cast<uint64_t>(v));
  }
  progress.Set(static_cast<uint64_t>(n));
  return Status::Ok();
}

// A dense attribute matrix (attr_matrix, n x dim), row by row.
Status WriteDenseFeatures(const Archive& a, const NpzGraphOptions& opt, int64_t n,
                          format::DatasetWriter& writer, format::ChecksummedFileWriter& features) {
  SKIFF_ASSIGN_OR_RETURN(auto r, NpyReader::OpenNpzEntry(a.path(), "attr_matrix"));
  const auto& shape = r->header().shape;
  if (shape.size() != 2 || shape[0] != n) {
    return Status::InvalidArgument(r->source() + ": shape mismatch: expected (" +
                                   std::to_string(n) + ", dim), one feature row per node");
  }
  const int64_t dim = shape[1];
  writer.manifest().feature_dim = dim;
  std::vector<float> row(static_cast<size_t>(dim));
  std::vector<uint16_t> half;
  for (int64_t v = 0; v < n; ++v) {
    SKIFF_RETURN_IF_ERROR(r->ReadFloat(dim, row.data()));
    SKIFF_RETURN_IF_ERROR(AppendFeatureRow(features, row, v, r->source(), opt.feature_dtype, half));
  }
  return Status::Ok();
}

Status WriteFeatures(const Archive& a, const NpzGraphOptions& opt, int64_t n,
                     format::DatasetWriter& writer) {
  if (opt.feature_dtype != format::DType::kFloat32 &&
      opt.feature_dtype != format::DType::kFloat16) {
    return Status::InvalidArgument(std::string("feature dtype must be float32 or float16, not ") +
                                   format::DTypeName(opt.feature_dtype));
  }
  const bool sparse =
      a.Has("attr_indices") && a.Has("attr_indptr") && a.Has("attr_shape") && a.Has("attr_data");
  if (!sparse && !a.Has("attr_matrix")) {
    return Missing(a,
                   "node attributes (attr_data/attr_indices/attr_indptr/attr_shape or "
                   "attr_matrix)");
  }
  writer.manifest().feature_dtype = opt.feature_dtype;
  SKIFF_ASSIGN_OR_RETURN(auto features, writer.CreateFile(format::kFeaturesFile));
  SKIFF_RETURN_IF_ERROR(sparse ? WriteSparseFeatures(a, opt, n, writer, *features)
                               : WriteDenseFeatures(a, opt, n, writer, *features));
  return writer.FinishFile(*features);
}

Result<std::vector<int32_t>> ReadLabels(const Archive& a, int64_t n, int64_t* num_classes) {
  std::vector<int32_t> labels(static_cast<size_t>(n), -1);
  int64_t max_label = -1;
  if (a.Has("labels")) {
    SKIFF_ASSIGN_OR_RETURN(auto raw, a.ReadInts("labels", n));
    for (size_t v = 0; v < raw.size(); ++v) {
      if (raw[v] >= format::kMaxClasses || raw[v] < -1) {
        return Status::InvalidArgument(a.path() + ":labels.npy: element " + std::to_string(v) +
                                       " is label " + std::to_string(raw[v]) +
                                       ", expected a class index below 2^24 or -1 (unlabelled)");
      }
      labels[v] = static_cast<int32_t>(raw[v]);
      max_label = std::max<int64_t>(max_label, labels[v]);
    }
    *num_classes = max_label + 1;
  } else if (a.Has("labels_indices") && a.Has("labels_indptr") && a.Has("labels_shape")) {
    // One-hot labels as a CSR matrix (n, classes).
    SKIFF_ASSIGN_OR_RETURN(auto shape, a.ReadShape("labels_shape"));
    if (shape.first != n) {
      return Status::InvalidArgument(
          a.path() + ":labels_shape.npy: shape mismatch: " + std::to_string(shape.first) +
          " rows, expected " + std::to_string(n));
    }
    if (shape.second > format::kMaxClasses) {
      return Status::InvalidArgument(a.path() +
                                     ":labels_shape.npy: " + std::to_string(shape.second) +
                                     " classes, above the limit of 2^24");
    }
    SKIFF_ASSIGN_OR_RETURN(auto cols, a.ReadInts("labels_indices", -1));
    SKIFF_ASSIGN_OR_RETURN(auto indptr,
                           a.ReadIndptr("labels_indptr", n, static_cast<int64_t>(cols.size())));
    for (int64_t v = 0; v < n; ++v) {
      const int64_t begin = indptr[static_cast<size_t>(v)];
      const int64_t end = indptr[static_cast<size_t>(v) + 1];
      if (end - begin > 1) {
        return Status::InvalidArgument(a.path() + ":labels_indptr.npy: node " + std::to_string(v) +
                                       " has " + std::to_string(end - begin) +
                                       " labels; expected at most one (multi-label data is not "
                                       "supported)");
      }
      if (end > begin) {
        const int64_t c = cols[static_cast<size_t>(begin)];
        if (c < 0 || c >= shape.second) {
          return Status::Corruption(a.path() + ":labels_indices.npy: element " +
                                    std::to_string(begin) + " is class " + std::to_string(c) +
                                    ", outside [0, " + std::to_string(shape.second) + ")");
        }
        labels[static_cast<size_t>(v)] = static_cast<int32_t>(c);
      }
    }
    *num_classes = shape.second;
  } else {
    return Missing(a, "labels (labels, or labels_indices/labels_indptr/labels_shape)");
  }
  return labels;
}

Result<std::vector<int64_t>> ReadSplitArray(const Archive& a, const std::string& name, int64_t n) {
  if (!a.Has(name)) return std::vector<int64_t>{};
  SKIFF_ASSIGN_OR_RETURN(auto ids, a.ReadInts(name, -1));
  for (size_t k = 0; k < ids.size(); ++k) {
    if (ids[k] < 0 || ids[k] >= n) {
      return Status::Corruption(a.path() + ":" + name + ".npy: element " + std::to_string(k) +
                                " is node " + std::to_string(ids[k]) + ", outside [0, " +
                                std::to_string(n) + ")");
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace

Status ConvertNpzGraph(const NpzGraphOptions& opt) {
  auto run = [&]() -> Status {
    SKIFF_ASSIGN_OR_RETURN(Archive a, Archive::Open(opt.input));
    if (!a.Has("adj_shape")) return Missing(a, "adj_shape");
    SKIFF_ASSIGN_OR_RETURN(auto adj_shape, a.ReadShape("adj_shape"));
    if (adj_shape.first != adj_shape.second) {
      return Status::InvalidArgument(a.path() + ":adj_shape.npy: adjacency is " +
                                     std::to_string(adj_shape.first) + " x " +
                                     std::to_string(adj_shape.second) + ", expected square");
    }
    const int64_t n = adj_shape.first;
    SKIFF_ASSIGN_OR_RETURN(auto writer, format::DatasetWriter::Create(opt.output, opt.overwrite));
    auto& m = writer->manifest();
    m.name = std::filesystem::path(opt.input).stem().string();
    m.source = "convert " + opt.input + (opt.undirected ? " --undirected" : "");
    m.num_nodes = n;
    SKIFF_RETURN_IF_ERROR(WriteAdjacency(a, opt, n, *writer));
    SKIFF_RETURN_IF_ERROR(WriteFeatures(a, opt, n, *writer));
    int64_t num_classes = 0;
    SKIFF_ASSIGN_OR_RETURN(auto labels, ReadLabels(a, n, &num_classes));
    m.num_classes = num_classes;
    SKIFF_RETURN_IF_ERROR(writer->WriteFile(format::kLabelsFile, labels.data(), labels.size() * 4));
    Splits splits;
    if (a.Has("idx_train") || a.Has("idx_val") || a.Has("idx_test")) {
      SKIFF_ASSIGN_OR_RETURN(splits.train, ReadSplitArray(a, "idx_train", n));
      SKIFF_ASSIGN_OR_RETURN(splits.valid, ReadSplitArray(a, "idx_val", n));
      SKIFF_ASSIGN_OR_RETURN(splits.test, ReadSplitArray(a, "idx_test", n));
      SKIFF_RETURN_IF_ERROR(CheckDisjoint(splits, a.path() + ":idx_train.npy",
                                          a.path() + ":idx_val.npy", a.path() + ":idx_test.npy"));
    } else {
      SKIFF_ASSIGN_OR_RETURN(splits, MakeSplits(opt.split, labels, num_classes));
    }
    SKIFF_RETURN_IF_ERROR(WriteSplits(*writer, splits));
    SKIFF_RETURN_IF_ERROR(writer->Commit());
    LogInfo("converted " + opt.input + " -> " + opt.output + ": " + std::to_string(n) + " nodes, " +
            std::to_string(m.num_edges) + " edges" +
            (opt.undirected ? " (both directions)" : " (directed)") + ", " +
            std::to_string(m.feature_dim) + " features (" + format::DTypeName(m.feature_dtype) +
            "), " + std::to_string(num_classes) + " classes, splits " +
            std::to_string(m.train_count) + "/" + std::to_string(m.valid_count) + "/" +
            std::to_string(m.test_count));
    return Status::Ok();
  };
  return run().WithContext("converting " + opt.input);
}

}  // namespace skiff::convert
