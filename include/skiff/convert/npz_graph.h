// Converts a graph stored as a NumPy .npz archive in the layout of Shchur et al.'s datasets
// (cora.npz, citeseer.npz, ...) into a Skiff dataset:
//   adj_data / adj_indices / adj_indptr / adj_shape    CSR adjacency (edges i -> indices[...])
//   attr_data / attr_indices / attr_indptr / attr_shape  CSR attributes  -- or --  attr_matrix
//   (dense) labels (int, one per node)                          -- or --  labels_data/... (CSR
//   one-hot) optional: idx_train / idx_val / idx_test             (splits; else drawn from `split`)
// Streaming: features are written row by row; adjacency rows are sorted and de-duplicated.
#pragma once

#include <string>

#include "skiff/convert/splits.h"
#include "skiff/format/dataset.h"
#include "skiff/status.h"

namespace skiff::convert {

struct NpzGraphOptions {
  std::string input;   // path to the .npz
  std::string output;  // dataset directory to create
  bool overwrite = false;
  bool undirected = false;  // add reverse edges (then de-duplicate)
  bool keep_self_loops = false;
  format::DType feature_dtype = format::DType::kFloat32;
  SplitSpec split;  // used when the archive has no idx_* arrays
};

Status ConvertNpzGraph(const NpzGraphOptions& options);

}  // namespace skiff::convert
