// A small partitioned dataset for the tests of owned-partition ranks and their shards: 3000 nodes
// (average degree 8, 4 classes, 16 float32 features) generated into dir/plain and partitioned by
// GREM into `k` partitions in dir/parts; and the node ranges of a job of W ranks over it. Fails the
// test (REQUIRE) when a step fails.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "skiff/format/dataset.h"
#include "skiff/generate/generator.h"
#include "skiff/partition/partition_dataset.h"
#include "skiff/train/node_ranges.h"

namespace skiff::testing {

inline std::unique_ptr<format::Dataset> MakePartitioned(const std::string& dir, uint32_t k = 8) {
  generate::GenerateOptions g;
  g.output = dir + "/plain";
  g.num_nodes = 3000;
  g.avg_degree = 8;
  g.num_classes = 4;
  g.feature_dim = 16;
  g.threads = 1;
  REQUIRE(generate::GenerateDataset(g).ok());
  partition::PartitionOptions p;
  p.dataset_dir = dir + "/plain";
  p.output_dir = dir + "/parts";
  p.partitioner.k = k;
  REQUIRE(partition::PartitionDataset(p).ok());
  return std::move(format::Dataset::Open(dir + "/parts")).value();
}

// The dataset, its node splits and the ranges of `ranks` ranks (train::NodeRanges::ForDataset).
struct OwnedFixture {
  std::unique_ptr<format::Dataset> dataset;
  format::Dataset::NodeSplits splits;
  std::unique_ptr<train::NodeRanges> ranges;
};

inline OwnedFixture MakeOwnedFixture(const std::string& dir, int ranks) {
  OwnedFixture o;
  o.dataset = MakePartitioned(dir);
  o.splits = std::move(o.dataset->LoadSplits()).value();
  o.ranges = std::make_unique<train::NodeRanges>(
      std::move(train::NodeRanges::ForDataset(*o.dataset, o.splits.train, ranks)).value());
  return o;
}

}  // namespace skiff::testing
