// DiskOwnedRows: the own lists and rows of one rank of an owned-partition job (train::OwnedRows)
// read through the rank's buffer pool within its --memory budget (docs/distributed.md, "Owned
// partitions within --memory").
//
// Open() plans the budget (PlanMemory) for what the rank holds: its range's CSR offsets (8 B per
// own node; the rest of the graph's are never read), every node's label and the node splits, the
// model, one part of a plan batch (a rank samples and computes one part at a time, expected
// ~batch x the rank's share of the seeds), the part's exchange messages (OwnedExchangeBytes) and
// the lists it reads at a time; what is left becomes partition slots of a pool over the rank's
// partitions alone (DatasetPartitionSource over that range). The first partitions of the range that
// fit are pinned for the whole run; every other list and row is read at fine grain (O_DIRECT,
// checksummed, through the pool's scratch) when the rank's sampling, its gather or another rank's
// request needs it. What a rank reads does not change what it hands out: its batches, and the
// replies it sends, are those of the in-memory rank, bit for bit.
//
// Evaluation parts take a training part's place (a rank holds one part at a time): the plan allows
// evaluation batches (eval_batch_limit) whose part needs no more than a training part plus what
// the plan leaves unused (with every partition resident, often all of --eval-batch-size).
//
// Thread safety: const calls from one thread at a time (train::OwnedRows).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "skiff/format/dataset.h"
#include "skiff/pipeline/buffered_graph.h"
#include "skiff/pipeline/memory_budget.h"
#include "skiff/storage/buffer_pool.h"
#include "skiff/storage/dataset_partition_source.h"
#include "skiff/train/node_ranges.h"
#include "skiff/train/owned_rows.h"
#include "skiff/train/train_options.h"

namespace skiff::pipeline {

struct DiskOwnedRowsOptions {
  uint64_t memory_bytes = 0;  // the rank's --memory (> 0)
  bool direct_io = true;      // O_DIRECT
  storage::IoEngineKind io_engine = storage::IoEngineKind::kAuto;
  std::shared_ptr<storage::FaultInjector> faults;  // tests
};

// The expected fraction of a part's input rows that another of `ranks` ranks owns, from the
// dataset's GREM edge cut: the cut edges that fall between two ranks' ranges (in proportion to the
// pairs of partitions on different ranks), compounded over the model's `layers` hops. Without a
// recorded cut, 1 - 1/ranks (ownership by chance).
double RemoteInputFraction(const format::Manifest& manifest, int ranks, int layers);

// The bytes of one part's exchanges that the plan counts: the remote feature rows of a part of
// `shape` received, and about as many served to the other ranks (`remote_fraction` of its input
// rows each, with their requests), a chunk of own rows copied out, the picks sent, received and
// kept for the batch, and the lists the rank reads at a time to describe its nodes' samples
// (ExchangeGraph::kListChunkIds at most).
uint64_t OwnedExchangeBytes(const BatchShape& shape, const DegreeProfile& degrees,
                            int64_t feature_dim, double remote_fraction);

class DiskOwnedRows final : public train::OwnedRows {
 public:
  // Rank `rank` of `ranges` on `dataset` (partitioned; `ranges` cut at its partition boundaries),
  // training with `options`; `splits` are the dataset's. ResourceExhausted naming the minimum
  // when the budget cannot hold one part; InvalidArgument for a range that is not a run of whole
  // partitions; NotFound / IOError from opening the files. `dataset` must outlive the object.
  static Result<std::unique_ptr<DiskOwnedRows>> Open(const format::Dataset* dataset,
                                                     const train::NodeRanges& ranges, int rank,
                                                     const format::Dataset::NodeSplits& splits,
                                                     const train::TrainOptions& options,
                                                     const DiskOwnedRowsOptions& io);
  ~DiskOwnedRows() override;

  int64_t begin() const override { return source_->begin_node(); }
  int64_t end() const override { return source_->end_node(); }
  int64_t feature_dim() const override { return graph_->feature_dim(); }
  int64_t Degree(int64_t v) const override { return source_->degree(v); }
  bool ListInMemory(int64_t v) const override { return v < resident_end_; }
  void NeighborsAt(int64_t v, std::span<const int64_t> positions, int64_t* out) const override;
  Status Lists(std::span<const int64_t> nodes, std::vector<int64_t>* indptr,
               std::vector<int64_t>* neighbors) const override;
  Status RowsTo(std::span<const int64_t> nodes, std::span<float* const> dst) const override;
  void NormalizeRows() override { graph_->set_normalize_rows(true); }

  const MemoryPlan& memory_plan() const { return plan_; }
  // The largest plan batch of evaluation whose part the budget allows (0: no limit), for
  // Trainer::SetEvalBatchLimit. Every rank of a job must take the smallest of the ranks'.
  int64_t eval_batch_limit() const { return eval_batch_limit_; }
  // "partitions [a, b) of the dataset: s resident (slots of ...), the rest read at fine grain"
  std::string Describe() const;
  // What was read so far: "L lists and R feature rows read at fine grain (B in Q requests), ..."
  std::string ReadReport() const;
  const BufferedGraph& graph() const { return *graph_; }

 private:
  DiskOwnedRows() = default;
  // Plans `memory_bytes` for rank `rank` of `ranks` over the source (plan_, eval_batch_limit_),
  // its pool to be created with `pool`. ResourceExhausted naming the rank and the minimum.
  Status PlanBudget(const format::Dataset& dataset, int ranks, int rank,
                    const format::Dataset::NodeSplits& splits, const train::TrainOptions& options,
                    const storage::BufferPoolOptions& pool, uint64_t memory_bytes);
  // Pins the first pool_slots partitions of the range for the whole run.
  Status PinResident();

  std::unique_ptr<storage::DatasetPartitionSource> source_;
  std::unique_ptr<storage::BufferPool> pool_;
  std::unique_ptr<BufferedGraph> graph_;
  std::unique_ptr<ResidentSet> resident_;  // released before the pool
  // The resident partitions are the range's first: nodes [begin(), resident_end_).
  int64_t resident_end_ = 0;
  MemoryPlan plan_;
  uint32_t first_partition_ = 0;
  int64_t eval_batch_limit_ = 0;
};

}  // namespace skiff::pipeline
