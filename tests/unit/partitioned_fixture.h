// A small partitioned dataset for the tests of owned-partition ranks and their shards: 3000 nodes
// (average degree 8, 4 classes, 16 float32 features) generated into dir/plain and partitioned by
// GREM into `k` partitions in dir/parts. Fails the test (REQUIRE) when either step fails.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "skiff/format/dataset.h"
#include "skiff/generate/generator.h"
#include "skiff/partition/partition_dataset.h"

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

}  // namespace skiff::testing
