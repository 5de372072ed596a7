// CsrSource: a graph's whole CSR, read range by range, for copying it somewhere else (the device
// sampler's device memory) without holding it in host memory at once.
//
// Ranges are checked by the reader as they are read: offsets start at 0, never decrease and end at
// num_edges(); neighbours lie in [0, num_nodes()). A violation is Corruption naming the array and
// the entry (a dataset that passed its checksums may still be inconsistent).
//
// Thread safety: implementations allow concurrent const calls.
#pragma once

#include <cstdint>
#include <string>

#include "skiff/format/dataset.h"
#include "skiff/status.h"

namespace skiff::sampler {

class CsrSource {
 public:
  virtual ~CsrSource() = default;
  virtual int64_t num_nodes() const = 0;
  virtual int64_t num_edges() const = 0;
  // offsets[first .. first + count) into out; first + count <= num_nodes() + 1.
  virtual Status ReadOffsets(int64_t first, int64_t count, int64_t* out) const = 0;
  // neighbors[first .. first + count) into out; first + count <= num_edges().
  virtual Status ReadNeighbors(int64_t first, int64_t count, int64_t* out) const = 0;
  // Where the CSR comes from, for messages ("dataset DIR").
  virtual std::string Describe() const = 0;
};

// The CSR of an opened dataset, read from graph.offsets and graph.neighbors (checksums verified
// per block read; neighbours widened to int64).
class DatasetCsr final : public CsrSource {
 public:
  // `dataset` must outlive this.
  explicit DatasetCsr(const format::Dataset& dataset) : dataset_(dataset) {}
  int64_t num_nodes() const override { return dataset_.manifest().num_nodes; }
  int64_t num_edges() const override { return dataset_.manifest().num_edges; }
  Status ReadOffsets(int64_t first, int64_t count, int64_t* out) const override;
  Status ReadNeighbors(int64_t first, int64_t count, int64_t* out) const override;
  std::string Describe() const override { return "dataset " + dataset_.dir(); }

 private:
  const format::Dataset& dataset_;
};

// Checks a range of offsets read from `source` (see above); `previous` is offsets[first - 1]
// (0 for first == 0).
Status CheckOffsetsRange(const CsrSource& source, int64_t first, int64_t count,
                         const int64_t* offsets, int64_t previous);
// Checks a range of neighbours read from `source`.
Status CheckNeighborsRange(const CsrSource& source, int64_t first, int64_t count,
                           const int64_t* neighbors);

}  // namespace skiff::sampler
