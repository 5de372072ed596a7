// What the Python objects of the extension own, and the rule that turns a Status into a Python
// exception.
//
// Ownership: a Dataset is shared by the loaders opened on it (node or link loaders); a loader by
// its passes; a pass by the batches it handed over. Each holds the one above it, so a batch Python
// still references keeps its pass's stream (its memory accounting) alive, and releases itself to it
// when dropped.
//
// Errors: a non-OK Status raises, with the C++ message unchanged, ValueError (InvalidArgument),
// FileNotFoundError (NotFound), MemoryError (ResourceExhausted) or skiff.Error (everything else; a
// RuntimeError). A signal that arrives while a call waits (Ctrl-C) raises what its Python handler
// raises (KeyboardInterrupt) once the wait is cancelled.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "batch_arrays.h"
#include "skiff/format/dataset.h"
#include "skiff/pipeline/link_loader.h"
#include "skiff/pipeline/node_loader.h"
#include "skiff/status.h"

namespace skiff::python {

// Raises the Python exception for `status` (no-op when OK). The GIL must be held.
void ThrowIfError(const Status& status);

template <typename T>
T ValueOrThrow(Result<T> result) {
  ThrowIfError(result.status());
  return std::move(result).value();
}

// The process that created an object: engines (threads, io_uring rings) do not survive fork.
// Raises RuntimeError naming `what` when called in another process.
void CheckSameProcess(pid_t creator, const char* what);

struct DatasetHandle {
  std::unique_ptr<format::Dataset> dataset;
  pid_t pid = 0;
};

struct LoaderHandle {
  std::shared_ptr<DatasetHandle> dataset;
  std::unique_ptr<pipeline::NodeLoader> loader;
  pid_t pid = 0;
};

struct LinkLoaderHandle {
  std::shared_ptr<DatasetHandle> dataset;
  std::unique_ptr<pipeline::LinkLoader> loader;
  std::vector<float> labels;  // per pair of the loader: its edge_label
  pid_t pid = 0;
};

// What a link pass's batches need besides the stream: their edges (PreparedBatch::index b is
// edges.batches[b]), the loader's labels, and how many negative pairs a batch of n pairs lists
// in binary mode (ceil(n x negative_ratio), at most n x negatives; 0: none).
struct LinkPassData {
  train::EdgePass edges;
  const std::vector<float>* labels = nullptr;
  double negative_ratio = 0;
};

struct PassHandle {
  std::shared_ptr<void> loader;  // the LoaderHandle or LinkLoaderHandle the pass is from
  std::unique_ptr<pipeline::PassStream> stream;
  int64_t feature_dim = 0;
  std::unique_ptr<LinkPassData> link;  // link passes only
  pid_t pid = 0;
  ~PassHandle();
};

// A batch handed to Python. Its arrays are views of these vectors; the batch releases itself to
// its pass when the last of them (and the batch object) is gone.
struct BatchHandle {
  std::shared_ptr<PassHandle> pass;
  pipeline::PreparedBatch prepared;
  std::vector<int64_t> y;           // node batches: labels as int64 (the loss functions' type)
  std::vector<int64_t> edge_index;  // 2 x E, PyG's convention (see batch_arrays.cpp)
  LinkLabelArrays link;             // link batches
  ~BatchHandle();
};

}  // namespace skiff::python
