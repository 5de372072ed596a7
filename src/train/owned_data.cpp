#include "skiff/train/owned_data.h"

namespace skiff::train {

Result<std::unique_ptr<OwnedData>> LoadOwned(const format::Dataset& dataset,
                                             dist::Communicator* comm,
                                             const OpenOwnedRows& open_rows) {
  SKIFF_CHECK(comm != nullptr);
  auto out = std::make_unique<OwnedData>();
  TrainData& d = out->data;
  SKIFF_ASSIGN_OR_RETURN(format::Dataset::NodeSplits splits, dataset.LoadSplits());
  SKIFF_ASSIGN_OR_RETURN(NodeRanges ranges,
                         NodeRanges::ForDataset(dataset, splits.train, comm->size()));
  if (dataset.is_shard() && ranges.first() != dataset.manifest().shard->rank_first) {
    return Status::InvalidArgument(
        dataset.dir() + ": the shard's node ranges are not the ones this build cuts for " +
        std::to_string(comm->size()) + " ranks: write the shards again (skiff shard)");
  }
  out->ranges = std::make_unique<NodeRanges>(std::move(ranges));
  const NodeRanges& r = *out->ranges;
  const int rank = comm->rank();
  if (open_rows != nullptr) {
    SKIFF_ASSIGN_OR_RETURN(out->own, open_rows(r, rank, splits));
  } else {
    SKIFF_ASSIGN_OR_RETURN(out->own, InMemoryOwnedRows::Load(dataset, r.begin(rank), r.end(rank)));
  }
  out->graph = std::make_unique<ExchangeGraph>(r, comm, out->own.get());
  out->features = std::make_unique<ExchangeFeatures>(r, comm, out->own.get());
  d.graph = out->graph.get();
  d.features = out->features.get();
  SKIFF_ASSIGN_OR_RETURN(d.labels, dataset.LoadLabels());
  d.num_classes = dataset.manifest().num_classes;
  d.train = std::move(splits.train);
  d.valid = std::move(splits.valid);
  d.test = std::move(splits.test);
  return out;
}

}  // namespace skiff::train
