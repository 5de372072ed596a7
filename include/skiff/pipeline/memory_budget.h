// MemoryBudget: splits one `--memory` budget among everything out-of-core training holds, at
// start-up, from the *expected* size of a batch on this dataset -- not from worst cases -- and
// refuses a budget only when one batch of the requested configuration cannot fit alone, naming
// the option to change.
//
// Start-up terms (MemoryPlan::items):
//   resident metadata   CSR offsets (8 B/node: of the nodes it holds), labels (4 B/node) and split
//                       node lists (8 B/node) when the run holds them (node classification), the
//                       run's further IDs; and what else the caller holds (extra_items);
//   model               parameters, gradients and optimiser moments (4 floats per parameter),
//                       and the sums of a step over several batches (1 or 2 floats more);
//   activations         the model's forward/backward buffers for one expected batch (or for one
//                       part of it, with micro-batches, and the part's copy of its input); for a
//                       model on a device (device_compute, features_on_device), its pinned staging
//                       of two batches instead (and, with the rows on the host, the pinned chunks
//                       they are uploaded through and a device row cache's host index);
//   batches in flight   n x the expected batch: sampled structure, float32 feature staging and the
//                       sampler's scratch; n = the pipeline's in-flight capacity when the budget
//                       allows, fewer when it is tight (never fewer than one);
//   hot row cache       when not every partition fits (exact sampling): half of what the batches
//                       leave, as long as two partition slots remain -- extra slots barely cut
//                       fine reads (seeds come from resident partitions either way), cached
//                       high-degree rows do (hot_row_cache.h);
//   buffer pool         what is left, as whole partition slots plus the pool's fixed scratch.
// Aggregated input (MemoryBudgetInputs::aggregated_input, a kMean first layer on the CPU) when not
// every partition fits: a batch holds two rows per block-0 destination instead of a row per input
// node (input_aggregator.h), one thread samples each group (its scratch is counted once), the
// batches may take all that the minimum leaves, and they are gathered in groups of gather_group
// that share one read: as many batches as fit with their rows, plus as many sampled-only batches
// (the next group, sampled while this one computes), at most kMaxGatherGroup. One read of the file
// per group is the dominant cost, so one large group at a time beats two half-size groups
// overlapped. Evaluation batches get their own group size under the same allowance. The batches
// keep all that the minimum leaves (the groups are re-sized at run time from the batches sampled,
// and a partition slot more saves nothing when a group reads most of the file) unless their group
// reaches kMaxGatherGroup; then the rest goes to partition slots (a hot row cache saves nothing
// either). An aggregated plan needs no slot (min_resident_partitions does not apply): its groups
// stream every row they read through the pool's fine-read scratch.
// Run time: the batches' term is not a count but a byte allowance. The EpochRunner admits a batch
// only while the bytes of the batches in flight -- each counted at its actual size once sampled --
// stay within it (backpressure: fewer batches in flight, never a failure); one batch is always
// admitted when nothing else is in flight, so a batch larger than expected slows the pipeline
// instead of stopping it.
//
// The expected batch (EstimateBatch) follows the sampler's structure (neighbor_sampler.h): block l
// has the nodes of hops 0 .. L-1-l as destinations, each drawing min(fanout, degree) neighbours;
// degrees come from the dataset's own distribution (DegreeProfile: seeds are uniform nodes,
// neighbours are reached along edges, so their degrees are edge-biased), and the new nodes of a hop
// are the distinct ones among its draws over N nodes (N (1 - exp(-draws / N))). It is an
// expectation for uniformly random neighbours, which over-estimates clustered graphs (more
// duplicates), so it errs on the side of the budget.
//
// Not counted, and documented as the fixed overhead (kFixedOverheadBytes): the executable and its
// shared libraries (OpenBLAS, RocksDB code -- no RocksDB database is opened during training), the
// thread stacks actually touched, allocator slack (large buffers are returned to the system
// when freed: tools/skiff/main.cpp), and the 1 MiB chunk buffer of each kept evaluation pass
// (pass_cache.h; a replay's batches are checked against the batch allowance). The CUDA library is
// loaded only with --device cuda (docs/cuda.md); its resident pages and the host side of the device
// context are outside this promise: `skiff train` measures them as the model is created and prints
// them beside the peak. The promise is
//   peak RSS <= budget_bytes + kFixedOverheadBytes (+ that measured CUDA runtime).
//
// Thread safety: plain functions over values; DegreeProfile is immutable once built.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "skiff/sampler/minibatch.h"
#include "skiff/status.h"

namespace skiff::pipeline {

inline constexpr uint64_t kFixedOverheadBytes = 96ull << 20;
inline constexpr int kMaxGatherGroup = 128;

// The degree distribution of a graph, as the batch estimate needs it.
class DegreeProfile {
 public:
  // `degree(v)` for v in [0, num_nodes).
  static DegreeProfile Build(int64_t num_nodes, const std::function<int64_t(int64_t)>& degree);
  // A profile where every node has degree `degree` (tests, and callers without a graph).
  static DegreeProfile Uniform(int64_t num_nodes, int64_t degree);

  int64_t num_nodes() const { return num_nodes_; }
  // E[min(fanout, deg)] over nodes (fanout < 0: E[deg]).
  double NodeMean(int fanout) const;
  // The same over edge endpoints, i.e. weighted by degree: the nodes a sampler reaches.
  double EdgeMean(int fanout) const;
  // Expected sum of the degrees of the distinct nodes that `draws` uniform edge endpoints reach.
  double ReachedDegreeSum(double draws) const;

 private:
  static constexpr int64_t kExactDegrees = 4096;  // degrees above share one bucket
  double Mean(int fanout, bool edge_weighted) const;
  int64_t num_nodes_ = 0;
  std::vector<int64_t> count_;  // count_[d]: nodes of degree d < kExactDegrees
  int64_t big_count_ = 0;       // nodes of degree >= kExactDegrees, their degree sum and squares
  double big_sum_ = 0, big_sum_sq_ = 0;
};

// Expected shape of one sampled batch.
struct BatchShape {
  int64_t seeds = 0;
  int64_t input_nodes = 0;     // block 0's sources
  std::vector<int64_t> dst;    // per block (input layer first)
  std::vector<int64_t> src;    // per block
  std::vector<int64_t> edges;  // per block
  bool src_degrees = true;     // blocks carry Block::src_degree (the model needs node degrees)
};

// `fanouts` input layer first (the sampler's order); `src_degrees`: the sampler records degrees.
BatchShape EstimateBatch(const DegreeProfile& degrees, int64_t batch_size,
                         const std::vector<int>& fanouts, bool src_degrees = true);

// The shape of a sampled batch (the run time's view of what EstimateBatch predicts).
BatchShape ShapeOf(const sampler::MiniBatch& batch);
// The element-wise larger of two shapes (per block; a shorter one counts as zeros).
BatchShape LargerShape(const BatchShape& a, const BatchShape& b);

// A gather group of aggregated batches: `group` batches gathered (their rows) while as many of the
// next group are sampled (structure and lists, `sampled_batch_bytes` each), within an allowance.
struct GatherGroupSize {
  int group = 1;
  uint64_t sampled_batch_bytes = 0;
};
// The group for batches of `shape` (the plan's, from EstimateBatch; the runner's, from the largest
// batch sampled so far): as large as fits in `allowance`, at least 1, at most kMaxGatherGroup.
GatherGroupSize AggregatedGatherGroup(uint64_t allowance, const BatchShape& shape,
                                      const DegreeProfile& degrees, int64_t feature_dim);

// Model widths, for the activation estimate.
struct ModelShape {
  int64_t in_dim = 0, hidden = 0, num_classes = 0;
  int heads = 1;           // GAT attention heads (1 otherwise)
  bool attention = false;  // GAT: per-edge attention buffers
  // Hidden layers activate in place (the CPU model's ReLU without a norm): no separate activation.
  bool activation_in_place = false;
  int64_t num_parameters = 0;
  // Further float copies of the parameters a step over several batches keeps (train/
  // step_accumulator.h: the step's sum, and a data-parallel rank's round): 0, 1 or 2.
  int gradient_sums = 0;
};

// Bytes a batch of `shape` holds from sampling to compute: its MiniBatch (node lists, CSR blocks,
// degrees when recorded: BatchShape::src_degrees) and the float32 features of its input nodes.
uint64_t BatchBytes(const BatchShape& shape, int64_t feature_dim);
// Bytes of a batch of `shape` before its features are gathered: its MiniBatch and, while its group
// of `group` batches is sampled, its share of the lists of the group's expanded nodes (read once
// for the group and cached); or, once sampled, its condensed MiniBatch and its share of the
// group's read schedule, if that is more (aggregated batches wait so for their gather).
uint64_t SampledBatchBytes(const BatchShape& shape, const DegreeProfile& degrees, int group);
// The sampler's transient scratch for a batch of `shape` (ID map, per-node samples).
uint64_t SamplerScratchBytes(const BatchShape& shape);
// Bytes per seed of the neighbour lists a group reads ahead for the next group's seeds
// (ListsReadAhead, MemoryPlan::lists_ahead_seeds).
uint64_t ListsAheadBytesPerSeed(const DegreeProfile& degrees);
// Bytes of a batch whose first layer's input is gathered aggregated: its MiniBatch condensed
// (CondenseAggregated), two float32 rows per block-0 destination, and the aggregation's transient
// state per input row.
uint64_t AggregatedBatchBytes(const BatchShape& shape, int64_t feature_dim);
// The model's forward and backward buffers for a batch of `shape` (with EnsureSize's headroom);
// `aggregated_input`: the first layer gets its input aggregated (no dropped-out copy of the input
// rows, no aggregation buffer).
uint64_t ActivationBytes(const BatchShape& shape, const ModelShape& model,
                         bool aggregated_input = false);

// What a caller's own model (MemoryBudgetInputs::external_model) is assumed to need when it does
// not say: twice the float32 input rows of a batch of `shape` (a message-passing layer gathers
// about a row per sampled edge and keeps it for its backward), at least 16 MiB.
uint64_t DefaultConsumerBytes(const BatchShape& shape, int64_t feature_dim);
// The name of that reservation among MemoryPlan::items.
inline constexpr const char* kConsumerModelItem = "the caller's model and its working memory";

struct MemoryItem {
  std::string name;
  uint64_t bytes = 0;
};

struct MemoryBudgetInputs {
  uint64_t budget_bytes = 0;  // 0: no budget (every partition resident)
  // Dataset.
  int64_t num_nodes = 0;
  int64_t split_nodes = 0;  // train + valid + test node ids held in memory
  // Nodes whose CSR offsets are held (8 B each); -1: num_nodes. An owned-partition rank holds
  // its range's (pipeline/disk_owned_rows.h).
  int64_t offset_nodes = -1;
  // Further fixed terms the caller holds (an owned-partition rank's exchange messages), counted
  // as items of the plan.
  std::vector<MemoryItem> extra_items;
  bool node_labels = true;  // the labels are held (4 B/node); link prediction holds none
  int64_t feature_dim = 0;
  // Buffer pool: bytes one partition slot takes, bytes of the pool's own fixed scratch, number of
  // partitions and the least number of slots training needs (2: one in use, one loading).
  uint64_t partition_slot_bytes = 0;
  uint64_t pool_fixed_bytes = 0;
  // Every partition at its own size (a packed pool: storage::BufferPool::PackedBudgetFor less
  // pool_fixed_bytes); 0: not offered. When it fits, the plan keeps every partition resident.
  uint64_t packed_pool_bytes = 0;
  uint32_t num_partitions = 0;
  uint32_t min_resident_partitions = 2;
  // Model and batches.
  ModelShape model;
  int64_t batch_size = 0;
  std::vector<int> fanouts;       // per layer, input layer first; < 0 means every neighbour
  int64_t eval_batch_size = 0;    // 0: no evaluation passes to plan for
  std::vector<int> eval_fanouts;  // per layer
  int max_in_flight_batches = 1;  // the pipeline's capacity (EpochRunnerOptions::InFlightBatches)
  // The sampler records each block's source degrees (model::NeedsNodeDegrees: GCN).
  bool record_degrees = true;
  // A hot row cache (exact sampling): bytes per cached row, including its index; 0: no cache.
  uint64_t cache_row_bytes = 0;
  // The model's first layer can take aggregated input (see above).
  bool aggregated_input = false;
  // The model keeps every feature row in device memory (Model::HoldFeatures, --device cuda):
  // batches carry no feature rows on the host, activations live on the device, and the host holds
  // the batches' pinned staging and the transient upload buffer instead (kDeviceUploadBytes).
  bool features_on_device = false;
  // The model computes on a device with the feature rows on the host (the CUDA model when they do
  // not fit in device memory): activations live on the device; each batch's structure and its
  // inputs' cache slots are packed into one of two pinned slots (BatchStaging; a slot grows by a
  // quarter over the largest batch), and its rows go up through kDeviceRowChunkBytes of pinned
  // chunks. `device_cache_rows` > 0: its device row cache, whose host index (model::RowSlots) is
  // 4 bytes per node and 8 per cached row. features_on_device implies device compute.
  bool device_compute = false;
  int64_t device_cache_rows = 0;
  // With device compute: the model replicas it runs (--gpus: one per GPU), each with its own
  // pinned staging, row upload chunks and row cache index, all counted once per replica.
  int device_replicas = 1;
  // With features_on_device: the model also keeps the graph there and samples on the device
  // (Model::HoldGraph, --sampler device). The host then samples nothing and holds no adjacency:
  // a batch is its seeds and labels (in pinned staging), and the pool keeps no partition slot --
  // only its fine-read scratch, which the one-time upload of the features reads through.
  bool graph_on_device = false;
  // The batches go to a caller's own model (the Python loader): `consumer_bytes` is reserved for
  // that model and its working memory in place of the model terms above (model.num_parameters is
  // then 0; 0 bytes: DefaultConsumerBytes), and the caller may keep `consumer_batches` batches
  // while it asks for the next (a loop holds its previous batch): they are counted with the batches
  // in flight (EpochRunnerOptions::admit_past_consumer), so the allowance grows by as many batches.
  bool external_model = false;
  uint64_t consumer_bytes = 0;
  int consumer_batches = 0;
  // Parts each training batch's compute is cut into (micro-batches: Model::ComputeGradientsInParts)
  // for a model on the host whose trainer runs them; the activations term is then one part's, plus
  // the part's copy of its input rows and blocks. 0: chosen here (kMicroBatchChoices: the fewest
  // parts that give the largest aggregated gather group, or that let a too-small budget accept one
  // batch); callers that cannot split their batches (the link trainer, a caller's own model)
  // keep 1.
  int micro_batches = 1;
};

// The part counts MemoryBudgetInputs::micro_batches = 0 chooses among.
inline constexpr int kMicroBatchChoices[] = {1, 2, 4, 8};

// The host buffer through which features are uploaded to the device once, before training
// (src/model/cuda: HoldFeatures' chunk size).
inline constexpr uint64_t kDeviceUploadBytes = uint64_t{2} << 20;
// The most the pinned chunks take through which a device model with the rows on the host uploads
// each batch's rows (src/model/cuda: two of BatchStaging::kRowChunkBytes; smaller when two chunks
// a quarter over a batch's rows are smaller).
inline constexpr uint64_t kDeviceRowChunkBytes = uint64_t{8} << 20;

struct MemoryPlan {
  uint64_t budget_bytes = 0;      // as asked; 0: no budget
  std::vector<MemoryItem> items;  // everything except the buffer pool
  uint64_t fixed_bytes = 0;       // sum of items
  uint32_t pool_slots = 0;        // partition slots the pool gets (<= num_partitions)
  // pool_slots * slot + pool_fixed_bytes, or packed_pool_bytes + pool_fixed_bytes when every
  // partition fits at its own size
  uint64_t pool_bytes = 0;
  bool fully_resident = false;    // pool_slots == num_partitions
  BatchShape train_batch;         // expected shapes
  uint64_t batch_bytes = 0;       // expected bytes of one training batch in flight
  uint64_t batch_held_bytes = 0;  // of which held once sampled (rows: its structure and rows)
  uint64_t batch_allowance = 0;   // bytes the batches in flight may hold together (run time)
  int planned_in_flight = 0;      // batch_allowance / batch_bytes
  int64_t eval_batch_size = 0;    // evaluation batches no larger than a training batch
  uint64_t row_cache_bytes = 0;   // for HotRowCache (0 when every partition is resident)
  bool aggregated_input = false;  // batches gathered aggregated, in groups of gather_group
  int gather_group = 1;
  // Aggregated: bytes of a batch before it is gathered (admission), and the same for evaluation
  // batches with their group size under the same allowance.
  uint64_t sampled_batch_bytes = 0;
  uint64_t eval_sampled_batch_bytes = 0;
  int eval_gather_group = 1;
  // Aggregated: the first group of the first pass of each kind, sized before any batch is
  // sampled -- from the estimate, within four fifths of the allowance: a group is admitted whole,
  // and batches larger than estimated (the 10m preset's training batches by 8%) would otherwise
  // take it past the allowance. Later groups are sized from the batches sampled.
  GatherGroupSize first_gather_group;
  GatherGroupSize eval_first_gather_group;
  // Aggregated: seeds of the next group whose neighbour lists a training group's sampling reads
  // ahead (EpochRunnerOptions::lists_ahead_seeds; the plan's group of training batches), 0: none,
  // and the bytes they take (an item of the plan; evaluation passes give them to their batches).
  int64_t lists_ahead_seeds = 0;
  uint64_t lists_ahead_bytes = 0;
  int micro_batches = 1;  // parts each training batch is computed in (MemoryBudgetInputs)
  // With micro_batches > 1: evaluation batches are computed in parts of at most this many seeds
  // (Model::EvalStepInParts), each within a training part's activations; 0: whole.
  int64_t eval_part_seeds = 0;

  // A table, one line per item, for the start-up log.
  std::string Describe() const;
};

// Splits the budget. ResourceExhausted -- "--memory 64MiB is too small for one batch of this
// configuration: ... needs at least 212MiB; raise --memory or lower --batch-size or --fanouts" --
// when metadata, the model, one expected batch and min_resident_partitions slots (none when
// aggregated) do not fit;
// InvalidArgument for inconsistent inputs.
Result<MemoryPlan> PlanMemory(const MemoryBudgetInputs& in, const DegreeProfile& degrees);

}  // namespace skiff::pipeline
