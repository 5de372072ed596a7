// OwnedData: what one rank of an owned-partition run loads (docs/distributed.md, "Owned
// partitions"): the node ranges of the job (the dataset's partitions cut into one range per rank,
// balanced by training nodes), the adjacency lists and feature rows of its own range only
// (ExchangeGraph, ExchangeFeatures, which fetch the rest from the other ranks), and every node's
// label and the node splits (4 bytes per node and 8 per split node: every rank plans every batch).
//
// Thread safety: built once; the sources are then driven by the communicator's thread.
#pragma once

#include <memory>

#include "skiff/dist/communicator.h"
#include "skiff/format/dataset.h"
#include "skiff/status.h"
#include "skiff/train/exchange_features.h"
#include "skiff/train/exchange_graph.h"
#include "skiff/train/node_ranges.h"
#include "skiff/train/trainer.h"

namespace skiff::train {

struct OwnedData {
  std::unique_ptr<NodeRanges> ranges;
  std::unique_ptr<ExchangeGraph> graph;
  std::unique_ptr<ExchangeFeatures> features;
  TrainData data;  // graph and features point at the above; csr null
};

// Loads `comm`'s rank's share of `dataset` (its sources keep `comm`, which must outlive them).
// InvalidArgument for an unpartitioned dataset or one with fewer partitions than ranks; the
// dataset's read errors (Corruption naming the file).
Result<std::unique_ptr<OwnedData>> LoadOwned(const format::Dataset& dataset,
                                             dist::Communicator* comm);

}  // namespace skiff::train
