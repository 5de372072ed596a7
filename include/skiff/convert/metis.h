// MetisReader: reads a graph in the METIS format (METIS 5 manual, section 4.1.1), plain or .gz:
//
//   % comment lines anywhere
//   n m [fmt [ncon]]          header: n vertices, m undirected edges
//   line i (1..n)             the neighbours of vertex i, 1-based; an empty line is a vertex with
//                             no neighbours
//
// fmt is up to three digits "xyz": x = vertex sizes present, y = vertex weights present (ncon of
// them, default 1), z = edge weights present (one after every neighbour). Sizes and weights are
// validated as integers and skipped.
//
// Validation (each error names the file and line): a malformed header; a non-integer field; a
// neighbour outside [1, n]; a vertex line with a dangling edge weight; more or fewer than n vertex
// lines; a total number of adjacency entries other than 2*m.
//
// Thread safety: a reader is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "skiff/convert/line_reader.h"
#include "skiff/status.h"

namespace skiff::convert {

struct MetisHeader {
  int64_t num_nodes = 0;
  int64_t num_edges = 0;  // undirected edges (each listed twice)
  bool has_vertex_sizes = false;
  bool has_vertex_weights = false;
  bool has_edge_weights = false;
  int64_t num_constraints = 0;  // vertex weights per vertex
};

class MetisReader {
 public:
  // Opens `path` and parses its header.
  static Result<std::unique_ptr<MetisReader>> Open(const std::string& path);

  const MetisHeader& header() const { return header_; }

  // Reads the next vertex: *vertex is its 0-based ID, *neighbors its 0-based neighbours in file
  // order. Returns false after the last vertex (once the rest of the file and the edge count are
  // validated) or on an error; status() tells which.
  bool NextVertex(int64_t* vertex, std::vector<int64_t>* neighbors);
  const Status& status() const { return status_; }
  const LineReader& lines() const { return *lines_; }

 private:
  explicit MetisReader(std::unique_ptr<LineReader> lines) : lines_(std::move(lines)) {}
  Status ParseHeader();
  Status Error(const std::string& what) const;
  bool Finish();
  // The next vertex line (comments skipped), or why there is none.
  Status NextVertexLine(std::string_view* line);
  // One vertex line's neighbours (0-based), checked against the header's format.
  Status ParseVertexLine(std::string_view line, std::vector<int64_t>* neighbors);

  std::unique_ptr<LineReader> lines_;
  MetisHeader header_;
  int64_t next_vertex_ = 0;
  int64_t entries_total_ = 0;
  std::vector<std::string_view> fields_;
  Status status_;
  bool done_ = false;
};

}  // namespace skiff::convert
