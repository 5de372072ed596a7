#include "skiff/partition/partition_dataset.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>

#include "skiff/format/dataset.h"
#include "skiff/log.h"
#include "skiff/process.h"
#include "skiff/progress.h"
#include "skiff/units.h"

namespace skiff::partition {
namespace {

namespace fs = std::filesystem;
using format::ChecksummedFileReader;
using format::ChecksummedFileWriter;
using format::DatasetWriter;
using format::DType;

// Bytes of node state held during a rewrite: part (4) + new ID (8) + old ID (8) + GREM flags (1).
constexpr uint64_t kStateBytesPerNode = 21;
// Bytes of working memory per streamed edge: a chunk row entry is an int64 copy, the file read
// buffer and vector growth (~32 bytes), and GREM may hold a second chunk (revisited rows).
constexpr uint64_t kChunkBytesPerEdge = 64;

// Appends `count` IDs as int32 or int64.
class IdWriter {
 public:
  IdWriter(ChecksummedFileWriter* file, bool wide) : file_(file), wide_(wide) {}
  Status Append(const int64_t* ids, size_t count) {
    if (wide_) return file_->Append(ids, count * 8);
    narrow_.resize(count);
    for (size_t i = 0; i < count; ++i) narrow_[i] = static_cast<int32_t>(ids[i]);
    return file_->Append(narrow_.data(), count * 4);
  }

 private:
  ChecksummedFileWriter* file_;
  const bool wide_;
  std::vector<int32_t> narrow_;
};

struct Layout {
  int k = 0;
  std::vector<int64_t> boundaries;  // k+1
  std::vector<int64_t> new_id;      // old -> new
  std::vector<int64_t> old_id;      // new -> old
  int32_t PartOfNew(int64_t v) const {
    return static_cast<int32_t>(std::upper_bound(boundaries.begin(), boundaries.end(), v) -
                                boundaries.begin() - 1);
  }
};

Layout MakeLayout(const std::vector<int32_t>& part, int k) {
  Layout l;
  l.k = k;
  const int64_t n = static_cast<int64_t>(part.size());
  l.boundaries.assign(k + 1, 0);
  for (int32_t p : part) ++l.boundaries[p + 1];
  for (int p = 0; p < k; ++p) l.boundaries[p + 1] += l.boundaries[p];
  std::vector<int64_t> next(l.boundaries.begin(), l.boundaries.end() - 1);
  l.new_id.resize(n);
  l.old_id.resize(n);
  for (int64_t v = 0; v < n; ++v) {
    const int64_t id = next[part[v]]++;
    l.new_id[v] = id;
    l.old_id[id] = v;
  }
  return l;
}

// Rows in new order with relabelled, sorted neighbours. Counts edges per (src part, dst part).
Status WriteGraph(const GraphSource& graph, const Layout& l, bool wide, int64_t chunk_vertices,
                  int64_t chunk_edges, DatasetWriter& w, std::vector<int64_t>* bucket_counts,
                  bool show_progress) {
  const int64_t n = graph.num_nodes();
  SKIFF_ASSIGN_OR_RETURN(auto offsets_file, w.CreateFile(format::kOffsetsFile));
  SKIFF_ASSIGN_OR_RETURN(auto neighbors_file, w.CreateFile(format::kNeighborsFile));
  IdWriter neighbors_out(neighbors_file.get(), wide);
  bucket_counts->assign(static_cast<size_t>(l.k) * l.k, 0);
  OptionalProgress progress(show_progress, "rewrite graph", n, "nodes");
  RowChunk chunk;
  std::vector<int64_t> offsets_out;
  std::vector<int64_t> row;
  int64_t edges_written = 0;
  const int64_t zero = 0;
  SKIFF_RETURN_IF_ERROR(offsets_file->Append(&zero, 8));
  for (int64_t first = 0; first < n;) {
    // Batches are cut at chunk_edges so skewed degrees cannot overrun the budget.
    const std::span<const int64_t> candidates(
        l.old_id.data() + first, static_cast<size_t>(std::min(n, first + chunk_vertices) - first));
    SKIFF_ASSIGN_OR_RETURN(size_t rows, graph.RowsWithin(candidates, chunk_edges));
    const int64_t last = first + static_cast<int64_t>(rows);
    SKIFF_RETURN_IF_ERROR(graph.ReadRows(candidates.first(rows), &chunk));
    offsets_out.clear();
    int32_t src_part = l.PartOfNew(first);
    for (size_t i = 0; i < chunk.size(); ++i) {
      const int64_t v_new = first + static_cast<int64_t>(i);
      while (v_new >= l.boundaries[src_part + 1]) ++src_part;
      const auto r = chunk.Row(i);
      row.resize(r.size());
      for (size_t t = 0; t < r.size(); ++t) row[t] = l.new_id[r[t]];
      std::sort(row.begin(), row.end());
      int32_t dst_part = 0;
      for (int64_t u : row) {
        while (u >= l.boundaries[dst_part + 1]) ++dst_part;
        ++(*bucket_counts)[static_cast<size_t>(src_part) * l.k + dst_part];
      }
      SKIFF_RETURN_IF_ERROR(neighbors_out.Append(row.data(), row.size()));
      edges_written += static_cast<int64_t>(row.size());
      offsets_out.push_back(edges_written);
    }
    SKIFF_RETURN_IF_ERROR(offsets_file->Append(offsets_out.data(), offsets_out.size() * 8));
    progress.Add(chunk.size());
    first = last;
  }
  if (edges_written != graph.num_edges()) {
    return Status::Corruption("graph.offsets: rows hold " + std::to_string(edges_written) +
                              " edges but the manifest says " + std::to_string(graph.num_edges()));
  }
  SKIFF_RETURN_IF_ERROR(w.FinishFile(*offsets_file));
  SKIFF_RETURN_IF_ERROR(w.FinishFile(*neighbors_file));
  progress.Finish();
  return Status::Ok();
}

// Feature rows in new order; each partition's rows start on a 4 KiB boundary.
Status WriteFeatures(const format::Dataset& ds, const Layout& l, uint64_t buffer_bytes,
                     DatasetWriter& w, std::vector<uint64_t>* extent_offsets, bool show_progress) {
  const auto& m = ds.manifest();
  const uint64_t row_bytes = m.feature_row_bytes();
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* in, ds.File(format::kFeaturesFile));
  SKIFF_ASSIGN_OR_RETURN(auto out, w.CreateFile(format::kFeaturesFile));
  extent_offsets->assign(l.k, 0);
  const int64_t rows_per_batch =
      std::max<int64_t>(1, static_cast<int64_t>(buffer_bytes / std::max<uint64_t>(1, row_bytes)));
  std::vector<char> buf;
  OptionalProgress progress(show_progress, "rewrite features", m.num_nodes, "rows");
  for (int p = 0; p < l.k; ++p) {
    SKIFF_RETURN_IF_ERROR(out->PadTo(format::kFileAlignment));
    (*extent_offsets)[p] = out->bytes_written();
    if (row_bytes == 0) continue;
    for (int64_t first = l.boundaries[p]; first < l.boundaries[p + 1]; first += rows_per_batch) {
      const int64_t last = std::min(l.boundaries[p + 1], first + rows_per_batch);
      buf.resize(static_cast<size_t>(last - first) * row_bytes);
      // Runs of old rows that are contiguous in the input file are read in one request.
      int64_t i = first;
      while (i < last) {
        int64_t j = i + 1;
        const uint64_t start = ds.FeatureRowOffset(l.old_id[i]);
        while (j < last && ds.FeatureRowOffset(l.old_id[j]) == start + (j - i) * row_bytes) ++j;
        SKIFF_RETURN_IF_ERROR(
            in->ReadAt(start, (j - i) * row_bytes, buf.data() + (i - first) * row_bytes));
        i = j;
      }
      SKIFF_RETURN_IF_ERROR(out->Append(buf.data(), buf.size()));
      progress.Add(static_cast<uint64_t>(last - first));
    }
  }
  progress.Finish();
  return w.FinishFile(*out);
}

Status WriteSplit(const format::Dataset& ds, const Layout& l, const std::string& name,
                  int64_t expected_count, DatasetWriter& w) {
  SKIFF_ASSIGN_OR_RETURN(std::vector<int64_t> ids, ds.LoadSplit(name));
  const int64_t n = static_cast<int64_t>(l.new_id.size());
  if (static_cast<int64_t>(ids.size()) != expected_count) {
    return Status::Corruption(ds.dir() + "/" + name + ": holds " + std::to_string(ids.size()) +
                              " IDs, manifest says " + std::to_string(expected_count));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= n) {
      return Status::Corruption(ds.dir() + "/" + name + ": byte offset " + std::to_string(i * 8) +
                                ": node ID " + std::to_string(ids[i]) + " is outside [0, " +
                                std::to_string(n) + ")");
    }
    ids[i] = l.new_id[ids[i]];
  }
  std::sort(ids.begin(), ids.end());
  return w.WriteFile(name, ids.data(), ids.size() * 8);
}

// Rewrites the int64 node IDs of edge-split file `name` (pairs, or ranking candidates) with their
// new IDs, streamed in chunks of `chunk_ids`; with `pairs` on an undirected graph each pair is
// stored again as (min, max) of the new IDs. IDs keep their order in the file.
Status RelabelIdFile(const format::Dataset& ds, const Layout& l, const char* name, bool pairs,
                     int64_t chunk_ids, DatasetWriter& w) {
  const auto n = static_cast<int64_t>(l.new_id.size());
  const bool swap = pairs && ds.manifest().undirected;
  SKIFF_ASSIGN_OR_RETURN(const ChecksummedFileReader* in, ds.File(name));
  SKIFF_ASSIGN_OR_RETURN(auto out, w.CreateFile(name));
  const auto total = static_cast<int64_t>(in->info().data_bytes / 8);
  std::vector<int64_t> ids;
  for (int64_t first = 0; first < total; first += chunk_ids) {
    const int64_t count = std::min(chunk_ids, total - first);
    ids.resize(static_cast<size_t>(count));
    SKIFF_RETURN_IF_ERROR(
        in->ReadAt(static_cast<uint64_t>(first) * 8, static_cast<uint64_t>(count) * 8, ids.data()));
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= n) {
        const int64_t at = first + static_cast<int64_t>(i);
        return Status::Corruption(
            in->path() + ": " +
            (pairs ? "pair " + std::to_string(at / 2) : "entry " + std::to_string(at)) +
            " has node ID " + std::to_string(ids[i]) + ", outside [0, " + std::to_string(n) + ")");
      }
      ids[i] = l.new_id[static_cast<size_t>(ids[i])];
    }
    if (swap) {
      for (size_t i = 0; i + 1 < ids.size(); i += 2) {
        if (ids[i] > ids[i + 1]) std::swap(ids[i], ids[i + 1]);
      }
    }
    SKIFF_RETURN_IF_ERROR(out->Append(ids.data(), ids.size() * 8));
  }
  return w.FinishFile(*out);
}

// The files of the edge split (when there is one) with their node IDs relabelled (RelabelIdFile):
// the pair files, and the ranking candidates when the split has them.
Status WriteEdgeSplitFiles(const format::Dataset& ds, const Layout& l, int64_t chunk_pairs,
                           DatasetWriter& w) {
  if (!ds.manifest().link_split) return Status::Ok();
  for (const char* name : {format::kLinkTrainFile, format::kLinkValidFile, format::kLinkTestFile,
                           format::kLinkValidNegFile, format::kLinkTestNegFile}) {
    if (!ds.manifest().files.count(name)) continue;  // an empty non-edge file may be absent
    SKIFF_RETURN_IF_ERROR(RelabelIdFile(ds, l, name, /*pairs=*/true, 2 * chunk_pairs, w));
  }
  if (ds.manifest().link_split->candidates == 0) return Status::Ok();
  for (const char* name : {format::kLinkValidCandFile, format::kLinkTestCandFile}) {
    SKIFF_RETURN_IF_ERROR(RelabelIdFile(ds, l, name, /*pairs=*/false, 2 * chunk_pairs, w));
  }
  return Status::Ok();
}

// The end of the destination window of partition p's buckets that starts at q0: it grows while
// its records fit `buffer_records` (one bucket at least). *records is how many it holds.
int WindowEnd(const std::vector<int64_t>& counts, int k, int p, int q0, uint64_t buffer_records,
              uint64_t* records) {
  const auto count = [&](int q) { return counts[static_cast<size_t>(p) * k + q]; };
  int q1 = q0 + 1;
  *records = count(q0);
  while (q1 < k && *records + count(q1) <= buffer_records) *records += count(q1++);
  return q1;
}

// Writes the edge buckets (p, q0) .. (p, q1 - 1) from the rows of partition p, read back in
// chunks. A window of one bucket is appended in row order; a wider one is sorted into one buffer
// per bucket (sized exactly), appended once the rows are read.
class BucketWindowWriter {
 public:
  BucketWindowWriter(const Layout& l, const std::vector<int64_t>& counts, GraphSource* graph,
                     IdWriter* records, int64_t chunk_vertices, uint64_t buffer_records)
      : l_(l),
        counts_(counts),
        graph_(graph),
        records_(records),
        chunk_vertices_(chunk_vertices),
        buffer_records_(buffer_records) {}

  Status Write(int p, int q0, int q1) {
    const bool direct = (q1 == q0 + 1);
    window_buf_.assign(direct ? 0 : q1 - q0, {});
    for (int q = q0; !direct && q < q1; ++q) {
      window_buf_[q - q0].reserve(2 *
                                  static_cast<size_t>(counts_[static_cast<size_t>(p) * l_.k + q]));
    }
    for (int64_t first = l_.boundaries[p]; first < l_.boundaries[p + 1];) {
      ids_.resize(
          static_cast<size_t>(std::min(l_.boundaries[p + 1], first + chunk_vertices_) - first));
      std::iota(ids_.begin(), ids_.end(), first);
      SKIFF_ASSIGN_OR_RETURN(size_t rows,
                             graph_->RowsWithin(ids_, static_cast<int64_t>(buffer_records_)));
      ids_.resize(rows);
      first += static_cast<int64_t>(rows);
      SKIFF_RETURN_IF_ERROR(graph_->ReadRows(ids_, &chunk_));
      for (size_t i = 0; i < chunk_.size(); ++i) {
        SKIFF_RETURN_IF_ERROR(AddRow(chunk_.vertices[i], chunk_.Row(i), q0, q1, direct));
      }
    }
    for (auto& b : window_buf_) SKIFF_RETURN_IF_ERROR(records_->Append(b.data(), b.size()));
    return Status::Ok();
  }

 private:
  // The edges from `vertex` (its sorted `row`) into partitions q0 .. q1 - 1.
  Status AddRow(int64_t vertex, std::span<const int64_t> row, int q0, int q1, bool direct) {
    auto lo = std::lower_bound(row.begin(), row.end(), l_.boundaries[q0]);
    const auto hi = std::lower_bound(lo, row.end(), l_.boundaries[q1]);
    int q = q0;
    for (; lo != hi; ++lo) {
      const int64_t pair[2] = {vertex, *lo};
      if (direct) {
        SKIFF_RETURN_IF_ERROR(records_->Append(pair, 2));
      } else {
        while (*lo >= l_.boundaries[q + 1]) ++q;
        window_buf_[q - q0].push_back(pair[0]);
        window_buf_[q - q0].push_back(pair[1]);
      }
    }
    return Status::Ok();
  }

  const Layout& l_;
  const std::vector<int64_t>& counts_;
  GraphSource* const graph_;
  IdWriter* const records_;
  const int64_t chunk_vertices_;
  const uint64_t buffer_records_;
  RowChunk chunk_;
  std::vector<int64_t> ids_;
  std::vector<std::vector<int64_t>> window_buf_;
};

// Every edge once, grouped by (source partition, destination partition), p-major. Rows of the new
// CSR are read back from the temporary directory; destination windows are sized to the buffer.
Status WriteEdgeBuckets(const Layout& l, const std::vector<int64_t>& counts, bool wide,
                        int64_t num_edges, int64_t chunk_vertices, uint64_t buffer_records,
                        DatasetWriter& w, bool show_progress) {
  const auto& files = w.manifest().files;
  SKIFF_ASSIGN_OR_RETURN(auto offsets_reader,
                         ChecksummedFileReader::Open(w.temp_dir(), files.at(format::kOffsetsFile)));
  SKIFF_ASSIGN_OR_RETURN(
      auto neighbors_reader,
      ChecksummedFileReader::Open(w.temp_dir(), files.at(format::kNeighborsFile)));
  const int64_t n = static_cast<int64_t>(l.old_id.size());
  auto graph =
      MakeFileGraphSource(offsets_reader.get(), neighbors_reader.get(), n, num_edges, wide);
  SKIFF_ASSIGN_OR_RETURN(auto out, w.CreateFile(kEdgeBucketsFile));
  IdWriter records(out.get(), wide);
  const int k = l.k;
  std::vector<int64_t> index(static_cast<size_t>(k) * k + 1, 0);
  for (size_t b = 0; b < counts.size(); ++b) index[b + 1] = index[b] + counts[b];
  OptionalProgress progress(show_progress, "write edge buckets", k, "partitions");
  BucketWindowWriter window(l, counts, graph.get(), &records, chunk_vertices, buffer_records);
  for (int p = 0; p < k; ++p) {
    for (int q0 = 0; q0 < k;) {
      uint64_t records_in_window = 0;
      const int q1 = WindowEnd(counts, k, p, q0, buffer_records, &records_in_window);
      if (records_in_window > 0) SKIFF_RETURN_IF_ERROR(window.Write(p, q0, q1));
      q0 = q1;
    }
    progress.Add(1);
  }
  const uint64_t expected_bytes = static_cast<uint64_t>(num_edges) * 2 * (wide ? 8 : 4);
  if (out->bytes_written() != expected_bytes) {
    return Status::Internal("edge buckets hold " + std::to_string(out->bytes_written()) +
                            " bytes, expected " + std::to_string(expected_bytes));
  }
  SKIFF_RETURN_IF_ERROR(w.FinishFile(*out));
  progress.Finish();
  return w.WriteFile(kEdgeBucketsIndexFile, index.data(), index.size() * 8);
}

// How the rewrite streams the graph within the budget: node state first, the rest for chunks.
struct ChunkPlan {
  uint64_t chunk_budget = 0;
  int64_t chunk_edges = 0;
  int64_t chunk_vertices = 0;
};

Result<ChunkPlan> PlanChunks(const PartitionOptions& options, const format::Manifest& in) {
  const int64_t n = in.num_nodes;
  const int k = options.partitioner.k;
  if (k < 1 || (n > 0 && k > n)) {
    return Status::InvalidArgument("cannot split " + std::to_string(n) + " nodes into " +
                                   std::to_string(k) + " partitions (need 1 <= k <= nodes)");
  }
  if (static_cast<uint64_t>(k) * k > (uint64_t{1} << 24)) {
    return Status::InvalidArgument("k = " + std::to_string(k) +
                                   " is too large for the k*k edge-bucket index (max 4096)");
  }
  const uint64_t per_node_bytes =
      kStateBytesPerNode + (options.partitioner.order == StreamOrder::kBfs ? 8 : 0);
  const uint64_t state_bytes = static_cast<uint64_t>(n) * per_node_bytes +
                               static_cast<uint64_t>(k) * k * 8 * 2 + (uint64_t{16} << 20);
  if (options.memory_bytes < state_bytes + (uint64_t{8} << 20)) {
    return Status::ResourceExhausted(
        "--memory " + FormatBytes(options.memory_bytes) + " is too small for " + std::to_string(n) +
        " nodes and k = " + std::to_string(k) + ": the node state alone needs " +
        FormatBytes(state_bytes) + "; allow at least " +
        FormatBytes(state_bytes + (uint64_t{8} << 20)));
  }
  ChunkPlan plan;
  plan.chunk_budget = options.memory_bytes - state_bytes;
  plan.chunk_edges = static_cast<int64_t>(
      std::clamp<uint64_t>(plan.chunk_budget / kChunkBytesPerEdge, 4096, uint64_t{1} << 24));
  if (options.max_chunk_edges > 0) {
    plan.chunk_edges = std::min(plan.chunk_edges, options.max_chunk_edges);
  }
  const double avg_degree =
      n > 0 ? std::max(1.0, static_cast<double>(in.num_edges) / static_cast<double>(n)) : 1.0;
  plan.chunk_vertices = std::max<int64_t>(
      1, static_cast<int64_t>(static_cast<double>(plan.chunk_edges) / avg_degree));
  return plan;
}

// One byte per node, 1 for the training nodes (empty when the dataset has none).
Result<std::vector<uint8_t>> TrainMask(const format::Dataset& ds) {
  const int64_t n = ds.manifest().num_nodes;
  std::vector<uint8_t> mask;
  if (ds.manifest().train_count == 0) return mask;
  SKIFF_ASSIGN_OR_RETURN(std::vector<int64_t> train, ds.LoadSplit(format::kTrainFile));
  mask.assign(static_cast<size_t>(n), 0);
  for (size_t i = 0; i < train.size(); ++i) {
    if (train[i] < 0 || train[i] >= n) {
      return Status::Corruption(ds.dir() + "/" + format::kTrainFile + ": byte offset " +
                                std::to_string(i * 8) + ": node ID " + std::to_string(train[i]) +
                                " is outside [0, " + std::to_string(n) + ")");
    }
    mask[train[i]] = 1;
  }
  return mask;
}

// The partitioning's figures (the rewrite adds the output and the boundaries).
PartitionReport ReportOf(const Partitioning& parts, const format::Manifest& in,
                         const PartitionerOptions& popt, double partition_seconds) {
  const int k = popt.k;
  PartitionReport report;
  report.algorithm = AlgorithmName(popt.algorithm);
  report.k = k;
  report.num_nodes = in.num_nodes;
  report.num_edges = in.num_edges;
  report.cut_edges = parts.cut_edges;
  report.edge_cut_fraction = parts.edge_cut_fraction();
  report.imbalance = parts.imbalance();
  if (!parts.train_sizes.empty() && in.train_count > 0) {
    const int64_t ideal = (in.train_count + k - 1) / k;
    report.train_imbalance =
        static_cast<double>(*std::max_element(parts.train_sizes.begin(), parts.train_sizes.end())) /
            static_cast<double>(ideal) -
        1.0;
  }
  report.moves = parts.moves;
  report.partition_seconds = partition_seconds;
  return report;
}

// The labels in the new order, written in batches: only the input labels are held whole.
Status WriteLabels(const format::Dataset& ds, const Layout& layout, int64_t chunk_vertices,
                   DatasetWriter& w) {
  const int64_t n = ds.manifest().num_nodes;
  SKIFF_ASSIGN_OR_RETURN(std::vector<int32_t> labels, ds.LoadLabels());
  SKIFF_ASSIGN_OR_RETURN(auto labels_out, w.CreateFile(format::kLabelsFile));
  std::vector<int32_t> batch;
  for (int64_t first = 0; first < n; first += chunk_vertices) {
    const int64_t last = std::min(n, first + chunk_vertices);
    batch.resize(static_cast<size_t>(last - first));
    for (int64_t v = first; v < last; ++v) batch[v - first] = labels[layout.old_id[v]];
    SKIFF_RETURN_IF_ERROR(labels_out->Append(batch.data(), batch.size() * 4));
  }
  return w.FinishFile(*labels_out);
}

// The new -> converted ID map: layout.old_id, composed with an earlier partitioning's map when
// the dataset has one (in place: the rest of the rewrite uses only the size of old_id).
Status WriteRelabelMap(const format::Dataset& ds, Layout* layout, DatasetWriter& w) {
  const int64_t n = ds.manifest().num_nodes;
  std::vector<int64_t>& old_ids = layout->old_id;
  if (ds.manifest().files.count(kRelabelOldIdsFile)) {
    SKIFF_ASSIGN_OR_RETURN(const std::vector<int64_t> prev_ids, ds.LoadOldIds());
    for (int64_t v = 0; v < n; ++v) old_ids[v] = prev_ids[old_ids[v]];
  }
  return w.WriteFile(kRelabelOldIdsFile, old_ids.data(), old_ids.size() * 8);
}

// Warns about per-node files the rewrite does not know (they are not carried over), and copies
// the raw ID map (RocksDB) as it is: node IDs map to converted IDs, which relabel.old_ids keeps.
Status CarryOtherFiles(const format::Dataset& ds, DatasetWriter& w) {
  for (const auto& [name, info] : ds.manifest().files) {
    if (!w.manifest().files.count(name)) {
      LogWarning("partition: " + ds.dir() + "/" + name +
                 " is not a known per-node file and is not carried over");
    }
  }
  std::error_code ec;
  const std::string idmap = ds.dir() + "/" + format::kIdMapDir;
  if (fs::is_directory(idmap, ec)) {
    fs::copy(idmap, w.temp_dir() + "/" + format::kIdMapDir, fs::copy_options::recursive, ec);
    if (ec) return Status::IOError("copy " + idmap + " into " + w.temp_dir() + ": " + ec.message());
  }
  return Status::Ok();
}

// The cut counted from the written edge buckets must be the partitioner's.
Status CheckCut(const std::vector<int64_t>& bucket_counts, int k, int64_t partitioner_cut) {
  int64_t cut = 0;
  for (int p = 0; p < k; ++p) {
    for (int q = 0; q < k; ++q) {
      if (p != q) cut += bucket_counts[static_cast<size_t>(p) * k + q];
    }
  }
  if (cut != partitioner_cut) {
    return Status::Internal("edge cut after relabelling (" + std::to_string(cut) +
                            ") differs from the partitioner's (" + std::to_string(partitioner_cut) +
                            ")");
  }
  return Status::Ok();
}

// The output's manifest: the input's, with the extents and the partitioning.
void FillManifest(const format::Manifest& in, const PartitionReport& report,
                  std::vector<uint64_t> extent_offsets, format::Manifest* m) {
  m->version = in.version;
  m->name = in.name;
  m->num_nodes = in.num_nodes;
  m->num_edges = in.num_edges;
  m->undirected = in.undirected;
  m->neighbor_dtype = in.neighbor_dtype;
  m->feature_dim = in.feature_dim;
  m->feature_dtype = in.feature_dtype;
  m->num_classes = in.num_classes;
  m->train_count = in.train_count;
  m->valid_count = in.valid_count;
  m->test_count = in.test_count;
  m->link_split = in.link_split;  // its files are rewritten with the new IDs
  m->has_id_map = in.has_id_map;
  m->source = in.source;
  m->feature_extent_offsets = std::move(extent_offsets);
  format::PartitionInfo info;
  info.num_partitions = static_cast<uint32_t>(report.k);
  info.algorithm = report.algorithm;
  info.boundaries = report.boundaries;
  info.edge_cut_fraction = report.edge_cut_fraction;
  info.imbalance = report.imbalance;
  info.edge_buckets_file = kEdgeBucketsFile;
  info.edge_buckets_index_file = kEdgeBucketsIndexFile;
  info.seconds = report.seconds;
  info.peak_memory_bytes = report.peak_memory_bytes;
  m->partitions = info;
}

}  // namespace

namespace {

// Partitions the dataset's graph with the streaming chunks of `chunks`; *popt is the options it
// ran with (balance_train is dropped where the dataset has no training nodes).
Result<Partitioning> RunPartitioner(const format::Dataset& ds, GraphSource& graph,
                                    const PartitionOptions& options, const ChunkPlan& chunks,
                                    PartitionerOptions* popt) {
  *popt = options.partitioner;
  popt->chunk_edges = chunks.chunk_edges;
  // The cluster graph gets half the chunk budget; clustering holds no rewrite buffers.
  popt->cluster_graph_entries = static_cast<int64_t>(chunks.chunk_budget / 2 / 16);
  popt->show_progress = options.show_progress;
  SKIFF_ASSIGN_OR_RETURN(std::vector<uint8_t> train_mask, TrainMask(ds));
  if (train_mask.empty()) {
    popt->balance_train = false;
  } else {
    popt->train_mask = &train_mask;
  }
  Result<Partitioning> parts = PartitionGraph(graph, *popt);
  popt->train_mask = nullptr;
  return parts;
}

// Writes every file of the partitioned dataset into `w`, in partition order: the graph, features,
// labels, splits, the edge split, the relabel map, the edge buckets and the files carried over as
// they are.
// *bucket_counts and *extent_offsets are what the manifest and the cut check need.
Status WriteLayoutFiles(const format::Dataset& ds, GraphSource& graph, Layout& layout,
                        const ChunkPlan& chunks, bool show_progress, DatasetWriter& w,
                        std::vector<int64_t>* bucket_counts,
                        std::vector<uint64_t>* extent_offsets) {
  const format::Manifest& in = ds.manifest();
  const bool wide = in.neighbor_dtype == DType::kInt64;
  SKIFF_RETURN_IF_ERROR(WriteGraph(graph, layout, wide, chunks.chunk_vertices, chunks.chunk_edges,
                                   w, bucket_counts, show_progress));
  SKIFF_RETURN_IF_ERROR(WriteFeatures(ds, layout, static_cast<uint64_t>(chunks.chunk_edges) * 16, w,
                                      extent_offsets, show_progress));
  SKIFF_RETURN_IF_ERROR(WriteLabels(ds, layout, chunks.chunk_vertices, w));
  SKIFF_RETURN_IF_ERROR(WriteSplit(ds, layout, format::kTrainFile, in.train_count, w));
  SKIFF_RETURN_IF_ERROR(WriteSplit(ds, layout, format::kValidFile, in.valid_count, w));
  SKIFF_RETURN_IF_ERROR(WriteSplit(ds, layout, format::kTestFile, in.test_count, w));
  SKIFF_RETURN_IF_ERROR(WriteEdgeSplitFiles(ds, layout, chunks.chunk_vertices, w));
  // The old -> new map is no longer needed; free it before composing the new -> old map.
  std::vector<int64_t>().swap(layout.new_id);
  SKIFF_RETURN_IF_ERROR(WriteRelabelMap(ds, &layout, w));
  // Window records are 16 bytes (two int64); half a chunk's worth keeps the window, the rows
  // being read and the writer's buffers within the chunk budget.
  const uint64_t buffer_records =
      std::max<uint64_t>(1, static_cast<uint64_t>(chunks.chunk_edges) / 2);
  SKIFF_RETURN_IF_ERROR(WriteEdgeBuckets(layout, *bucket_counts, wide, in.num_edges,
                                         chunks.chunk_vertices, buffer_records, w, show_progress));
  return CarryOtherFiles(ds, w);
}

}  // namespace

Result<PartitionReport> PartitionDataset(const PartitionOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  SKIFF_ASSIGN_OR_RETURN(auto ds, format::Dataset::Open(options.dataset_dir));
  const format::Manifest& in = ds->manifest();
  SKIFF_ASSIGN_OR_RETURN(const ChunkPlan chunks, PlanChunks(options, in));
  SKIFF_ASSIGN_OR_RETURN(auto graph, OpenDatasetGraphSource(*ds));
  // The output is claimed before partitioning, so that one it may not replace is refused at once.
  const std::string output_dir =
      options.output_dir.empty() ? options.dataset_dir : options.output_dir;
  std::unique_ptr<DatasetWriter> w;
  if (options.write_layout) {
    const bool in_place =
        options.output_dir.empty() ||
        fs::weakly_canonical(options.output_dir) == fs::weakly_canonical(options.dataset_dir);
    SKIFF_ASSIGN_OR_RETURN(w, DatasetWriter::Create(output_dir, in_place || options.overwrite));
  }
  PartitionerOptions popt;
  SKIFF_ASSIGN_OR_RETURN(Partitioning parts, RunPartitioner(*ds, *graph, options, chunks, &popt));
  PartitionReport report = ReportOf(parts, in, popt, elapsed());
  if (!options.write_layout) {
    report.seconds = elapsed();
    report.peak_memory_bytes = PeakRssBytes();
    return report;
  }

  // The partitioner's buffers are freed; hand the pages back so the rewrite's buffers are not
  // counted on top of them (glibc keeps freed heap pages resident otherwise).
  ::malloc_trim(0);
  Layout layout = MakeLayout(parts.part, popt.k);
  std::vector<int32_t>().swap(parts.part);

  report.output_dir = output_dir;
  std::vector<int64_t> bucket_counts;
  std::vector<uint64_t> extent_offsets;
  SKIFF_RETURN_IF_ERROR(WriteLayoutFiles(*ds, *graph, layout, chunks, options.show_progress, *w,
                                         &bucket_counts, &extent_offsets));
  SKIFF_RETURN_IF_ERROR(CheckCut(bucket_counts, popt.k, parts.cut_edges));
  report.boundaries = layout.boundaries;
  report.seconds = elapsed();
  report.peak_memory_bytes = PeakRssBytes();
  FillManifest(in, report, std::move(extent_offsets), &w->manifest());
  ds.reset();
  graph.reset();
  SKIFF_RETURN_IF_ERROR(w->Commit());
  return report;
}

Result<PartitionReport> EvaluatePartition(const std::string& dataset_dir,
                                          const std::vector<int32_t>& part, int k) {
  SKIFF_ASSIGN_OR_RETURN(auto ds, format::Dataset::Open(dataset_dir));
  SKIFF_ASSIGN_OR_RETURN(auto graph, OpenDatasetGraphSource(*ds));
  const int64_t n = graph->num_nodes();
  if (static_cast<int64_t>(part.size()) != n) {
    return Status::InvalidArgument("partition has " + std::to_string(part.size()) +
                                   " entries for " + std::to_string(n) + " nodes");
  }
  PartitionReport r;
  r.k = k;
  r.num_nodes = n;
  r.num_edges = graph->num_edges();
  std::vector<int64_t> sizes(k, 0);
  for (size_t v = 0; v < part.size(); ++v) {
    if (part[v] < 0 || part[v] >= k) {
      return Status::InvalidArgument("partition entry " + std::to_string(v) + " is " +
                                     std::to_string(part[v]) + ", outside [0, " +
                                     std::to_string(k) + ")");
    }
    ++sizes[part[v]];
  }
  SKIFF_ASSIGN_OR_RETURN(r.cut_edges, CountCutEdges(*graph, part));
  r.edge_cut_fraction =
      r.num_edges ? static_cast<double>(r.cut_edges) / static_cast<double>(r.num_edges) : 0.0;
  const int64_t ideal = (n + k - 1) / k;
  r.imbalance = n ? static_cast<double>(*std::max_element(sizes.begin(), sizes.end())) /
                            static_cast<double>(ideal) -
                        1.0
                  : 0.0;
  return r;
}

}  // namespace skiff::partition
