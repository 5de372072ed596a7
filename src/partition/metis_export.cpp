#include "skiff/partition/metis_export.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <numeric>
#include <utility>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/interrupt.h"
#include "skiff/partition/graph_source.h"

namespace skiff::partition {
namespace {

constexpr int64_t kChunkRows = 1 << 16;

// PATH.tmp-<pid>, written with stdio, renamed to PATH by Commit and removed otherwise (also by an
// interrupted run).
class MetisFile {
 public:
  explicit MetisFile(std::string path)
      : path_(std::move(path)),
        tmp_(path_ + ".tmp-" + std::to_string(::getpid())),
        remove_if_interrupted_(tmp_) {}
  ~MetisFile() {
    if (f_) std::fclose(f_);
    if (!committed_) std::remove(tmp_.c_str());
  }
  MetisFile(const MetisFile&) = delete;
  MetisFile& operator=(const MetisFile&) = delete;

  Status Open() {
    f_ = std::fopen(tmp_.c_str(), "w");
    return f_ ? Status::Ok() : Status::FromErrno(errno, "create " + tmp_);
  }
  void Header(int64_t nodes, int64_t edges) {
    std::fprintf(f_, "%lld %lld\n", static_cast<long long>(nodes), static_cast<long long>(edges));
  }
  // One row: 0-based neighbours, written 1-based.
  template <typename It>
  void Row(It begin, It end) {
    for (It it = begin; it != end; ++it) {
      std::fprintf(f_, it != begin ? " %lld" : "%lld", static_cast<long long>(*it + 1));
    }
    std::fputc('\n', f_);
  }
  Status Commit() {
    const int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) return Status::IOError("write " + tmp_ + " failed (disk full?)");
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      return Status::FromErrno(errno, "rename " + tmp_);
    }
    committed_ = true;
    return Status::Ok();
  }

 private:
  const std::string path_;
  const std::string tmp_;
  const RemoveOnInterrupt remove_if_interrupted_;
  FILE* f_ = nullptr;
  bool committed_ = false;
};

// Calls fn(v, row) for every node, in order, chunk by chunk.
template <typename Fn>
Status ForEachRow(GraphSource& graph, Fn fn) {
  const int64_t n = graph.num_nodes();
  RowChunk chunk;
  std::vector<int64_t> ids;
  for (int64_t first = 0; first < n; first += kChunkRows) {
    ids.resize(static_cast<size_t>(std::min(n, first + kChunkRows) - first));
    std::iota(ids.begin(), ids.end(), first);
    SKIFF_RETURN_IF_ERROR(graph.ReadRows(ids, &chunk));
    for (size_t i = 0; i < chunk.size(); ++i) fn(chunk.vertices[i], chunk.Row(i));
  }
  return Status::Ok();
}

// A directed graph: its distinct (min, max) pairs, sorted, become both directions of every edge.
Status WriteSymmetrised(GraphSource& graph, MetisFile& out) {
  const int64_t n = graph.num_nodes();
  std::vector<std::pair<int64_t, int64_t>> pairs;
  SKIFF_RETURN_IF_ERROR(ForEachRow(graph, [&](int64_t v, const auto& row) {
    for (int64_t u : row) {
      if (u != v) pairs.push_back({std::min(u, v), std::max(u, v)});
    }
  }));
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  std::vector<int64_t> degree(static_cast<size_t>(n) + 1, 0);
  for (const auto& [a, b] : pairs) {
    ++degree[a + 1];
    ++degree[b + 1];
  }
  for (int64_t v = 0; v < n; ++v) degree[v + 1] += degree[v];
  std::vector<int64_t> adj(static_cast<size_t>(degree[n]));
  std::vector<int64_t> fill(degree.begin(), degree.end() - 1);
  for (const auto& [a, b] : pairs) {
    adj[fill[a]++] = b;
    adj[fill[b]++] = a;
  }
  out.Header(n, static_cast<int64_t>(pairs.size()));
  pairs.clear();
  pairs.shrink_to_fit();
  for (int64_t v = 0; v < n; ++v) {
    std::sort(adj.begin() + degree[v], adj.begin() + degree[v + 1]);
    out.Row(adj.begin() + degree[v], adj.begin() + degree[v + 1]);
  }
  return Status::Ok();
}

// A graph stored with both directions: pass 0 counts the distinct directed edges (each row sorted,
// de-duplicated, without its self-loop), pass 1 writes the rows.
Status WriteSymmetric(GraphSource& graph, const std::string& dataset_dir, MetisFile& out) {
  int64_t directed = 0;
  std::vector<int64_t> row;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      if (directed % 2 != 0) {
        return Status::InvalidArgument(dataset_dir + ": the graph is not symmetric (" +
                                       std::to_string(directed) +
                                       " distinct directed edges); METIS needs both directions of "
                                       "every edge");
      }
      out.Header(graph.num_nodes(), directed / 2);
    }
    SKIFF_RETURN_IF_ERROR(ForEachRow(graph, [&](int64_t v, const auto& r) {
      row.assign(r.begin(), r.end());
      std::sort(row.begin(), row.end());
      row.erase(std::unique(row.begin(), row.end()), row.end());
      row.erase(std::remove(row.begin(), row.end(), v), row.end());
      if (pass == 0) {
        directed += static_cast<int64_t>(row.size());
      } else {
        out.Row(row.begin(), row.end());
      }
    }));
  }
  return Status::Ok();
}

}  // namespace

Status ExportMetisGraph(const std::string& dataset_dir, const std::string& path) {
  SKIFF_ASSIGN_OR_RETURN(auto ds, format::Dataset::Open(dataset_dir));
  SKIFF_ASSIGN_OR_RETURN(auto graph, OpenDatasetGraphSource(*ds));
  MetisFile out(path);
  SKIFF_RETURN_IF_ERROR(out.Open());
  if (ds->manifest().undirected) {
    SKIFF_RETURN_IF_ERROR(WriteSymmetric(*graph, dataset_dir, out));
  } else {
    SKIFF_RETURN_IF_ERROR(WriteSymmetrised(*graph, out));
  }
  return out.Commit();
}

}  // namespace skiff::partition
