#include "skiff/pipeline/disk_owned_rows.h"

#include <algorithm>
#include <cmath>

#include "skiff/model/model.h"
#include "skiff/pipeline/out_of_core.h"
#include "skiff/pipeline/trainer_passes.h"
#include "skiff/train/exchange_features.h"
#include "skiff/train/exchange_graph.h"
#include "skiff/units.h"

namespace skiff::pipeline {
namespace {

// The share of `nodes` (ascending) in [begin, end); 1 for an empty set.
double ShareOf(const std::vector<int64_t>& nodes, int64_t begin, int64_t end) {
  if (nodes.empty()) return 1.0;
  const auto lo = std::lower_bound(nodes.begin(), nodes.end(), begin);
  const auto hi = std::lower_bound(nodes.begin(), nodes.end(), end);
  return static_cast<double>(hi - lo) / static_cast<double>(nodes.size());
}

// The expected seeds of a rank's part of a plan batch of `batch` seeds.
int64_t PartSeeds(int64_t batch, double share) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(static_cast<double>(batch) * share)));
}

// The range's partitions of the dataset: [*first, *end) whose nodes are exactly [begin, end).
Status RangePartitions(const format::Dataset& dataset, int rank, int64_t begin, int64_t end,
                       uint32_t* first, uint32_t* last) {
  const format::Manifest& m = dataset.manifest();
  const std::string what = "rank " + std::to_string(rank) + "'s nodes [" + std::to_string(begin) +
                           ", " + std::to_string(end) + ")";
  if (!m.partitions || m.partitions->boundaries.size() < 2) {
    return Status::InvalidArgument(what + ": " + dataset.dir() + " is not partitioned");
  }
  const std::vector<int64_t>& b = m.partitions->boundaries;
  const auto p0 = std::lower_bound(b.begin(), b.end(), begin);
  const auto p1 = std::lower_bound(b.begin(), b.end(), end);
  if (begin >= end || p0 == b.end() || p1 == b.end() || *p0 != begin || *p1 != end) {
    return Status::InvalidArgument(what + " are not a run of whole partitions of " + dataset.dir());
  }
  *first = static_cast<uint32_t>(p0 - b.begin());
  *last = static_cast<uint32_t>(p1 - b.begin());
  return Status::Ok();
}

// The most seeds (at most in.eval_batch_size, at least `planned`: PlanMemory's) of an evaluation
// part whose batch, sampler scratch, activations and exchanges need no more than a training part's
// and what the plan leaves `spare`: a rank holds one part at a time, so an evaluation part takes
// the training part's place.
int64_t EvalPartSeeds(const MemoryBudgetInputs& in, const DegreeProfile& degrees, double remote,
                      uint64_t spare, int64_t planned) {
  auto need = [&](int64_t seeds, const std::vector<int>& fanouts) {
    const BatchShape s = EstimateBatch(degrees, seeds, fanouts, in.record_degrees);
    return BatchBytes(s, in.feature_dim) + SamplerScratchBytes(s) + ActivationBytes(s, in.model) +
           OwnedExchangeBytes(s, degrees, in.feature_dim, remote);
  };
  const uint64_t have = need(in.batch_size, in.fanouts) + spare;
  auto fits = [&](int64_t seeds) { return need(seeds, in.eval_fanouts) <= have; };
  int64_t lo = std::max<int64_t>(planned, 1), hi = in.eval_batch_size;
  if (lo >= hi || fits(hi)) return std::max(lo, hi);
  if (!fits(lo)) return lo;
  while (hi - lo > 1) {  // fits(lo), !fits(hi)
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

double RemoteInputFraction(const format::Manifest& m, int ranks, int layers) {
  if (ranks <= 1) return 0.0;
  const double by_chance = 1.0 - 1.0 / ranks;
  const uint32_t k = m.partitions ? m.partitions->num_partitions : 0;
  const double cut = m.partitions ? m.partitions->edge_cut_fraction : 0.0;
  if (k <= 1 || cut <= 0.0) return by_chance;
  // The edges that cross ranks: the cut's, in proportion to the pairs of partitions on two ranks.
  const double across = std::min(1.0, cut * by_chance / (1.0 - 1.0 / k));
  return 1.0 - std::pow(1.0 - across, std::max(layers, 1));
}

uint64_t OwnedExchangeBytes(const BatchShape& shape, const DegreeProfile& degrees,
                            int64_t feature_dim, double remote_fraction) {
  const auto inputs = static_cast<double>(std::max<int64_t>(shape.input_nodes, 0));
  const auto expanded = static_cast<uint64_t>(shape.dst.empty() ? 0 : shape.dst.front());
  uint64_t edges = 0;
  for (int64_t e : shape.edges) edges += static_cast<uint64_t>(std::max<int64_t>(e, 0));
  const uint64_t row_bytes = static_cast<uint64_t>(std::max<int64_t>(feature_dim, 0)) * 4;
  // Remote feature rows received for the part and about as many served to the others, with their
  // requests; the own rows are read in place, with a destination pointer and ID per row read.
  const auto remote = static_cast<uint64_t>(std::ceil(inputs * remote_fraction));
  const uint64_t rows = 2 * remote * (row_bytes + sizeof(int64_t)) +
                        static_cast<uint64_t>(inputs + static_cast<double>(remote)) * 16;
  // Picks sent and received (positions and neighbours), and the batch's kept samples (a map entry
  // and two vectors per node, ~160 bytes, and the picks).
  const auto inputs_count = static_cast<uint64_t>(inputs);
  const uint64_t picks = 2 * edges * 16 + (expanded + inputs_count) * 160 + edges * 16;
  // Own lists read at a time, as read and as a CSR.
  const double list_ids = static_cast<double>(expanded) * degrees.EdgeMean(-1);
  const auto lists = static_cast<uint64_t>(
      std::min(list_ids, static_cast<double>(train::ExchangeGraph::kListChunkIds)));
  return rows + picks + 2 * lists * sizeof(int64_t);
}

DiskOwnedRows::~DiskOwnedRows() = default;

Result<std::unique_ptr<DiskOwnedRows>> DiskOwnedRows::Open(
    const format::Dataset* dataset, const train::NodeRanges& ranges, int rank,
    const format::Dataset::NodeSplits& splits, const train::TrainOptions& options,
    const DiskOwnedRowsOptions& io) {
  SKIFF_CHECK(io.memory_bytes > 0);
  const format::Manifest& m = dataset->manifest();
  const int64_t begin = ranges.begin(rank), end = ranges.end(rank);
  std::unique_ptr<DiskOwnedRows> rows(new DiskOwnedRows());
  uint32_t first = 0, last = 0;
  SKIFF_RETURN_IF_ERROR(RangePartitions(*dataset, rank, begin, end, &first, &last));
  rows->first_partition_ = first;
  SKIFF_ASSIGN_OR_RETURN(
      rows->source_,
      storage::DatasetPartitionSource::Open(
          dataset, {.direct = io.direct_io, .first_partition = first, .end_partition = last}));
  const storage::DatasetPartitionSource& source = *rows->source_;
  storage::BufferPoolOptions pool_options;
  pool_options.min_resident_partitions = 0;  // every list and row can be read at fine grain
  pool_options.prefetch = false;             // the pins are taken once, at the start
  pool_options.fine_read_scratch_bytes = OutOfCore::FineReadScratchBytes(m, io.memory_bytes);
  pool_options.engine.kind = io.io_engine;
  pool_options.engine.faults = io.faults;
  SKIFF_RETURN_IF_ERROR(rows->PlanBudget(*dataset, ranges.size(), rank, splits, options,
                                         pool_options, io.memory_bytes));
  pool_options.budget_bytes =
      storage::BufferPool::BudgetFor(source, rows->plan_.pool_slots, pool_options);
  SKIFF_ASSIGN_OR_RETURN(rows->pool_,
                         storage::BufferPool::Create(rows->source_.get(), pool_options));
  rows->graph_ =
      std::make_unique<BufferedGraph>(rows->source_.get(), rows->pool_.get(), SamplingMode::kExact);
  SKIFF_RETURN_IF_ERROR(rows->PinResident());
  return rows;
}

Status DiskOwnedRows::PlanBudget(const format::Dataset& dataset, int ranks, int rank,
                                 const format::Dataset::NodeSplits& splits,
                                 const train::TrainOptions& options,
                                 const storage::BufferPoolOptions& pool, uint64_t memory_bytes) {
  const format::Manifest& m = dataset.manifest();
  const storage::DatasetPartitionSource& source = *source_;
  const int64_t b = begin(), e = end(), count = e - b;
  // The range's degrees stand for the graph's, over all N nodes (a part samples across the
  // whole graph, so its expected distinct nodes are counted among N).
  const DegreeProfile degrees = DegreeProfile::Build(
      m.num_nodes, [&source, b, count](int64_t v) { return source.degree(b + v % count); });
  const double train_share = ShareOf(splits.train, b, e);
  const double eval_share = std::max(ShareOf(splits.valid, b, e), ShareOf(splits.test, b, e));
  MemoryBudgetInputs in;
  in.budget_bytes = memory_bytes;
  in.num_nodes = m.num_nodes;
  in.offset_nodes = count;
  in.split_nodes =
      static_cast<int64_t>(splits.train.size() + splits.valid.size() + splits.test.size());
  in.feature_dim = m.feature_dim;
  in.pool_fixed_bytes = storage::BufferPool::BudgetFor(source, 0, pool);
  in.partition_slot_bytes = storage::BufferPool::BudgetFor(source, 1, pool) - in.pool_fixed_bytes;
  in.packed_pool_bytes = storage::BufferPool::PackedBudgetFor(source, pool) - in.pool_fixed_bytes;
  in.num_partitions = source.num_partitions();
  in.min_resident_partitions = 0;
  SKIFF_ASSIGN_OR_RETURN(in.model, HostModelShape(dataset, options));
  in.batch_size = PartSeeds(options.batch_size, train_share);
  in.fanouts = options.fanouts;
  in.eval_batch_size = PartSeeds(options.eval_batch_size, eval_share);
  in.eval_fanouts = EffectiveEvalFanouts(options);
  in.record_degrees = model::NeedsNodeDegrees(options.model.kind);
  in.max_in_flight_batches = 1;  // one part at a time, on the training thread
  in.micro_batches = 1;
  const BatchShape part = EstimateBatch(degrees, in.batch_size, in.fanouts, in.record_degrees);
  const double remote = RemoteInputFraction(m, ranks, static_cast<int>(in.fanouts.size()));
  in.extra_items = {{"exchanges of one part (messages, samples kept, own lists read at a time)",
                     OwnedExchangeBytes(part, degrees, m.feature_dim, remote)}};
  Result<MemoryPlan> plan = PlanMemory(in, degrees);
  if (!plan.ok()) {
    return plan.status().WithContext("rank " + std::to_string(rank) + " (its part of a batch: ~" +
                                     std::to_string(in.batch_size) + " of --batch-size " +
                                     std::to_string(options.batch_size) + " seeds)");
  }
  plan_ = std::move(*plan);
  const uint64_t used = plan_.fixed_bytes + plan_.pool_bytes;
  const int64_t eval_part = EvalPartSeeds(
      in, degrees, remote, memory_bytes > used ? memory_bytes - used : 0, plan_.eval_batch_size);
  if (eval_part < in.eval_batch_size) {
    eval_batch_limit_ =
        std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(eval_part) / eval_share));
  }
  // The plan's description speaks of plan batches, as --eval-batch-size does.
  plan_.eval_batch_size = eval_batch_limit_ > 0 ? eval_batch_limit_ : options.eval_batch_size;
  return Status::Ok();
}

Status DiskOwnedRows::PinResident() {
  const uint32_t k = source_->num_partitions();
  std::vector<std::shared_ptr<const storage::PartitionPin>> pins(k);
  const uint32_t pinned = std::min(pool_->num_slots(), k);
  for (uint32_t p = 0; p < pinned; ++p) {
    SKIFF_ASSIGN_OR_RETURN(storage::PartitionPin pin, pool_->Pin(p));
    pins[p] = std::make_shared<const storage::PartitionPin>(std::move(pin));
  }
  resident_end_ = pinned == k ? source_->end_node() : source_->first_node(pinned);
  resident_ = std::make_unique<ResidentSet>(std::move(pins));
  return Status::Ok();
}

void DiskOwnedRows::NeighborsAt(int64_t v, std::span<const int64_t> positions, int64_t* out) const {
  source_->NeighborsAtFromPin(resident_->pin(source_->partition_of(v)), v, positions, out);
}

Status DiskOwnedRows::Lists(std::span<const int64_t> nodes, std::vector<int64_t>* indptr,
                            std::vector<int64_t>* neighbors) const {
  return graph_->Neighbors(*resident_, nodes, indptr, neighbors);
}

Status DiskOwnedRows::RowsTo(std::span<const int64_t> nodes, std::span<float* const> dst) const {
  return graph_->FeaturesTo(*resident_, nodes, dst);
}

std::string DiskOwnedRows::Describe() const {
  const uint32_t k = source_->num_partitions();
  const size_t pinned = resident_->num_resident();
  std::string out = "partitions [" + std::to_string(first_partition_) + ", " +
                    std::to_string(first_partition_ + k) + ") of the dataset: ";
  if (pinned == k) {
    return out + "every one resident (" + FormatBytes(pool_->allocated_bytes()) + ")";
  }
  if (pinned == 0) return out + "none resident, every list and row read at fine grain";
  return out + std::to_string(pinned) + " resident (slots of " + FormatBytes(pool_->slot_bytes()) +
         "), the rest read at fine grain";
}

std::string DiskOwnedRows::ReadReport() const {
  const GraphAccessCounters c = graph_->counters();
  return std::to_string(c.fine_adjacency) + " lists and " + std::to_string(c.fine_rows) +
         " feature rows read at fine grain (" +
         FormatBytes(c.fine_adjacency_bytes + c.fine_row_bytes) + " in " +
         std::to_string(c.fine_requests) + " requests), " + std::to_string(c.resident_adjacency) +
         " lists and " + std::to_string(c.resident_rows) + " rows from resident partitions";
}

}  // namespace skiff::pipeline
