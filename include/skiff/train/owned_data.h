// OwnedData: what one rank of an owned-partition run loads (docs/distributed.md, "Owned
// partitions"): the node ranges of the job (the dataset's partitions cut into one range per rank,
// balanced by training nodes), the adjacency lists and feature rows of its own range only
// (ExchangeGraph, ExchangeFeatures, which fetch the rest from the other ranks), and every node's
// label and the node splits (4 bytes per node and 8 per split node: every rank plans every batch).
// Its own rows are an OwnedRows: in memory, or what the caller opens (pipeline::DiskOwnedRows
// within a --memory budget).
//
// Thread safety: built once; the sources are then driven by the communicator's thread.
#pragma once

#include <functional>
#include <memory>

#include "skiff/dist/communicator.h"
#include "skiff/format/dataset.h"
#include "skiff/status.h"
#include "skiff/train/exchange_features.h"
#include "skiff/train/exchange_graph.h"
#include "skiff/train/node_ranges.h"
#include "skiff/train/owned_rows.h"
#include "skiff/train/trainer.h"

namespace skiff::train {

struct OwnedData {
  std::unique_ptr<NodeRanges> ranges;
  std::unique_ptr<OwnedRows> own;  // the rank's range
  std::unique_ptr<ExchangeGraph> graph;
  std::unique_ptr<ExchangeFeatures> features;
  TrainData data;  // graph and features point at the above; csr null
};

// Opens rank `rank`'s own rows (its range of `ranges`); `splits` are the dataset's node splits.
using OpenOwnedRows = std::function<Result<std::unique_ptr<OwnedRows>>(
    const NodeRanges& ranges, int rank, const format::Dataset::NodeSplits& splits)>;

// Loads `comm`'s rank's share of `dataset` (its sources keep `comm`, which must outlive them), its
// own rows from `open_rows` (null: InMemoryOwnedRows::Load). InvalidArgument for an unpartitioned
// dataset or one with fewer partitions than ranks; the dataset's read errors (Corruption naming
// the file) and open_rows'.
Result<std::unique_ptr<OwnedData>> LoadOwned(const format::Dataset& dataset,
                                             dist::Communicator* comm,
                                             const OpenOwnedRows& open_rows = nullptr);

}  // namespace skiff::train
