// The OGB node-property prediction raw layout (as downloaded by ogb for ogbn-arxiv, -products,
// -papers100M, ...), read without Python:
//
//   DIR/raw/edge.csv.gz            "src,dst" per line, 0-based node IDs, no header
//   DIR/raw/num-node-list.csv.gz   optional: the number of nodes (one line)
//   DIR/raw/node-feat.csv.gz       optional: one comma-separated float row per node
//   DIR/raw/node-label.csv.gz      optional: one label per node (an integer; "nan" or an empty
//                                  field = unlabelled)
//   DIR/split/<name>/{train,valid,test}.csv.gz   optional: one node ID per line
//
// and the link-prediction layout (ogbl-collab, -ppa, -ddi, -citation2, ...): the same raw/ files,
// with the edge split in split/<name>/{train,valid,test}.npz instead -- OGB ships them as torch
// pickles (.pt), which tools/ogb/link_splits_to_npz.py rewrites as .npz with the same keys:
//   "edge" [E, 2] (or "source_node" [E] and "target_node" [E]): the split's positive pairs;
//   "edge_neg" [M, 2] (valid, test): the split's negative pairs, shared by its positives;
//   "target_node_neg" [E, K]: K ranking candidates per positive (directed datasets: imported as
//   the split's candidates; undirected: not imported, noted);
//   other keys ("weight", "year") are ignored.
//
// Every error names the file and line and says what was expected; a missing required file names
// the directory and the layout.
//
// Thread safety: functions are reentrant; a feature reader is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "skiff/convert/line_reader.h"
#include "skiff/status.h"

namespace skiff::convert {

struct OgbLayout {
  std::string root;
  std::string edge_file;
  std::string num_nodes_file;   // "" when absent
  std::string node_feat_file;   // "" when absent
  std::string node_label_file;  // "" when absent
  std::string split_name;       // "" when the dataset has no split directory
  std::string train_file, valid_file, test_file;
  // The link-prediction layout: the split files are .npz edge splits (ReadOgbEdgeSplitFile), not
  // node lists.
  bool link = false;
};

// True if `dir` looks like an OGB raw layout (has a raw/ subdirectory).
bool IsOgbDirectory(const std::string& dir);

// Finds the files of the layout. `split_name` picks split/<split_name>; "" picks the only split
// directory (InvalidArgument listing them when there are several). NotFound names a missing file.
Result<OgbLayout> FindOgbLayout(const std::string& dir, const std::string& split_name);

// Reads the node count from num-node-list.csv.gz.
Result<int64_t> ReadOgbNumNodes(const std::string& path);

// Reads one node ID per line, each in [0, num_nodes); returns them sorted ascending. Corruption on
// a malformed line, an out-of-range ID or a repeated ID.
Result<std::vector<int64_t>> ReadOgbIndexFile(const std::string& path, int64_t num_nodes);

// One file of an OGB link-prediction split (the .npz layout above).
struct OgbEdgeSplitFile {
  std::vector<int64_t> pairs;          // positives, (src, dst) interleaved
  std::vector<int64_t> negatives;      // "edge_neg", interleaved (empty when absent)
  int64_t negatives_per_positive = 0;  // "target_node_neg"'s columns, 0 when absent
  std::vector<int64_t> candidates;     // "target_node_neg", [E x K] row-major, when read
};
// Reads one split file; every ID must lie in [0, num_nodes). With `read_candidates`,
// "target_node_neg" too (its rows must match the positives). Corruption naming the file, the key
// and the index on a malformed array or an ID out of range; InvalidArgument naming the keys found
// when neither "edge" nor "source_node"/"target_node" is there.
Result<OgbEdgeSplitFile> ReadOgbEdgeSplitFile(const std::string& path, int64_t num_nodes,
                                              bool read_candidates = false);

// Reads one label per line; exactly `num_nodes` lines. Unlabelled ("nan", "") -> -1.
Result<std::vector<int32_t>> ReadOgbLabels(const std::string& path, int64_t num_nodes);

// Streams node-feat.csv.gz row by row; the first row fixes the dimension.
class CsvFloatRowReader {
 public:
  static Result<std::unique_ptr<CsvFloatRowReader>> Open(const std::string& path);
  // Dimension (columns of the first row); 0 for an empty file.
  int64_t dim() const { return dim_; }
  // Reads the next row into row[0..dim). False at the end or on an error (status()).
  bool NextRow(float* row);
  const Status& status() const { return status_; }
  int64_t rows_read() const { return rows_read_; }
  const LineReader& lines() const { return *lines_; }

 private:
  explicit CsvFloatRowReader(std::unique_ptr<LineReader> lines) : lines_(std::move(lines)) {}
  bool ParseRow(std::string_view line, float* row);

  std::unique_ptr<LineReader> lines_;
  int64_t dim_ = 0;
  std::string first_line_;
  bool have_first_ = false;
  int64_t rows_read_ = 0;
  std::vector<std::string_view> fields_;
  Status status_;
};

}  // namespace skiff::convert
