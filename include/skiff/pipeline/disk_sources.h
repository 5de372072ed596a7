// DiskGraphSource / DiskFeatureSource: the training core's GraphSource and FeatureSource over a
// dataset on disk, holding nothing resident: degrees come from the in-memory CSR offsets, and every
// adjacency list and feature row is a fine-grained, checksummed read through the buffer pool
// (BufferedGraph in exact mode with an empty ResidentSet).
//
// They let code written against the interfaces -- prediction/export, a Trainer's validation of its
// data -- run out of core without loading the graph. Training epochs do not use them: the
// EpochRunner serves batches from resident partitions (ResidentGraphSource), which reads far less.
//
// Thread safety: const calls from many threads at once (BufferedGraph is thread-safe).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "skiff/pipeline/buffered_graph.h"
#include "skiff/sampler/feature_source.h"
#include "skiff/sampler/graph_source.h"

namespace skiff::pipeline {

class DiskGraphSource final : public sampler::GraphSource {
 public:
  // `graph` must outlive this object; its mode must be exact.
  explicit DiskGraphSource(const BufferedGraph& graph);
  int64_t num_nodes() const override { return graph_.num_nodes(); }
  int64_t Degree(int64_t v) const override { return graph_.source().degree(v); }
  Status NeighborsAt(int64_t v, std::span<const int64_t> positions, int64_t* out) const override;
  Status Neighbors(int64_t v, std::vector<int64_t>* out) const override;

 private:
  const BufferedGraph& graph_;
  const ResidentSet none_;
};

class DiskFeatureSource final : public sampler::FeatureSource {
 public:
  explicit DiskFeatureSource(const BufferedGraph& graph);
  int64_t num_nodes() const override { return graph_.num_nodes(); }
  int64_t dim() const override { return graph_.feature_dim(); }
  Status Gather(std::span<const int64_t> nodes, float* out) const override;

 private:
  const BufferedGraph& graph_;
  const ResidentSet none_;
};

}  // namespace skiff::pipeline
