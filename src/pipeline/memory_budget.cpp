#include "skiff/pipeline/memory_budget.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "skiff/log.h"
#include "skiff/model/row_slots.h"
#include "skiff/pipeline/input_aggregator.h"
#include "skiff/pipeline/resident_graph_source.h"
#include "skiff/sampler/batch_slice.h"
#include "skiff/units.h"

namespace skiff::pipeline {
namespace {

// Bytes per sampled node / edge of the sampler's transient structures: the ID map (open addressing
// at <= 50% load: 2 slots of 16 B), the per-node degree and ordered sample offsets, and per edge
// the drawn position and the global id before deduplication.
constexpr uint64_t kSamplerBytesPerNode = 32 + 8 + 8;
constexpr uint64_t kSamplerBytesPerEdge = 8 + 8;
// A list cached while a group is sampled (ResidentGraphSource): its entries in the row cache's and
// the hop tracker's hash maps (~40 B each) and its offset in the batched read.
constexpr uint64_t kListCacheBytesPerNode = 96;
// EnsureSize grows model buffers with 1/8 headroom.
constexpr double kActivationHeadroom = 9.0 / 8.0;

// Distinct nodes among `draws` uniform draws over `n` nodes.
double Distinct(double draws, double n) {
  if (n <= 0) return 0;
  return n * (1.0 - std::exp(-draws / n));
}

}  // namespace

DegreeProfile DegreeProfile::Build(int64_t num_nodes,
                                   const std::function<int64_t(int64_t)>& degree) {
  DegreeProfile p;
  p.num_nodes_ = num_nodes;
  p.count_.assign(kExactDegrees, 0);
  for (int64_t v = 0; v < num_nodes; ++v) {
    const int64_t d = std::max<int64_t>(degree(v), 0);
    if (d < kExactDegrees) {
      ++p.count_[static_cast<size_t>(d)];
    } else {
      ++p.big_count_;
      p.big_sum_ += static_cast<double>(d);
      p.big_sum_sq_ += static_cast<double>(d) * static_cast<double>(d);
    }
  }
  return p;
}

DegreeProfile DegreeProfile::Uniform(int64_t num_nodes, int64_t degree) {
  DegreeProfile p;
  p.num_nodes_ = num_nodes;
  p.count_.assign(kExactDegrees, 0);
  if (degree < kExactDegrees) {
    p.count_[static_cast<size_t>(std::max<int64_t>(degree, 0))] = num_nodes;
  } else {
    p.big_count_ = num_nodes;
    p.big_sum_ = static_cast<double>(num_nodes) * static_cast<double>(degree);
    p.big_sum_sq_ = p.big_sum_ * static_cast<double>(degree);
  }
  return p;
}

double DegreeProfile::Mean(int fanout, bool edge_weighted) const {
  double weight = 0, sum = 0;
  for (int64_t d = 0; d < kExactDegrees; ++d) {
    const auto c = static_cast<double>(count_[static_cast<size_t>(d)]);
    if (c == 0) continue;
    const double w = edge_weighted ? c * static_cast<double>(d) : c;
    const double picks = fanout < 0 ? static_cast<double>(d) : std::min<double>(fanout, d);
    weight += w;
    sum += w * picks;
  }
  if (big_count_ > 0) {
    // Every degree here is >= kExactDegrees: min(fanout, d) is the fanout unless it is larger.
    const bool all = fanout < 0 || fanout >= kExactDegrees;
    if (edge_weighted) {
      weight += big_sum_;
      sum += all ? big_sum_sq_ : static_cast<double>(fanout) * big_sum_;
    } else {
      weight += static_cast<double>(big_count_);
      sum += all ? big_sum_ : static_cast<double>(fanout) * static_cast<double>(big_count_);
    }
  }
  return weight > 0 ? sum / weight : 0.0;
}

double DegreeProfile::ReachedDegreeSum(double draws) const {
  double total = big_sum_;  // edge endpoints
  for (int64_t d = 0; d < kExactDegrees; ++d) {
    total += static_cast<double>(count_[static_cast<size_t>(d)]) * static_cast<double>(d);
  }
  if (total <= 0 || draws <= 0) return 0;
  // A node of degree d is reached by one draw with probability d / total.
  double sum = 0;
  for (int64_t d = 1; d < kExactDegrees; ++d) {
    const auto c = static_cast<double>(count_[static_cast<size_t>(d)]);
    if (c == 0) continue;
    const auto dd = static_cast<double>(d);
    sum += c * dd * -std::expm1(-draws * dd / total);
  }
  if (big_count_ > 0) {
    const double mean_big = big_sum_ / static_cast<double>(big_count_);
    sum += big_sum_ * -std::expm1(-draws * mean_big / total);
  }
  return sum;
}

double DegreeProfile::NodeMean(int fanout) const { return Mean(fanout, false); }
double DegreeProfile::EdgeMean(int fanout) const { return Mean(fanout, true); }

BatchShape EstimateBatch(const DegreeProfile& degrees, int64_t batch_size,
                         const std::vector<int>& fanouts, bool src_degrees) {
  const auto n = static_cast<double>(degrees.num_nodes());
  const int layers = static_cast<int>(fanouts.size());
  BatchShape shape;
  shape.src_degrees = src_degrees;
  shape.seeds = std::min<int64_t>(batch_size, degrees.num_nodes());
  shape.dst.assign(layers, 0);
  shape.src.assign(layers, 0);
  shape.edges.assign(layers, 0);
  const auto seeds = static_cast<double>(shape.seeds);
  double known = seeds;       // nodes of hops 0 .. h
  double previous_draws = 0;  // draws of the block built by the previous hop (nested in this one)
  for (int hop = 0; hop < layers; ++hop) {
    const int block = layers - 1 - hop;
    const int fanout = fanouts[static_cast<size_t>(block)];
    // Seeds are uniform nodes; every other node was reached along an edge.
    const double draws =
        seeds * degrees.NodeMean(fanout) + (known - seeds) * degrees.EdgeMean(fanout);
    // Picks nest across blocks, so only the draws beyond the previous block's can be new nodes;
    // those that land on the `known` nodes are not new either.
    const double fresh = std::max(0.0, draws - previous_draws);
    const double added = std::min(n - known, Distinct(fresh, n) * (1.0 - known / n));
    shape.dst[static_cast<size_t>(block)] = static_cast<int64_t>(std::ceil(known));
    shape.edges[static_cast<size_t>(block)] = static_cast<int64_t>(std::ceil(draws));
    known += std::max(0.0, added);
    shape.src[static_cast<size_t>(block)] = static_cast<int64_t>(std::ceil(known));
    previous_draws = draws;
  }
  shape.input_nodes = layers > 0 ? shape.src[0] : shape.seeds;
  return shape;
}

uint64_t BatchBytes(const BatchShape& shape, int64_t feature_dim) {
  uint64_t bytes = static_cast<uint64_t>(shape.input_nodes) * 8 +  // input_nodes
                   static_cast<uint64_t>(shape.seeds) * (8 + 4);   // seeds, labels
  for (size_t l = 0; l < shape.dst.size(); ++l) {
    bytes += static_cast<uint64_t>(shape.dst[l] + 1) * 8 +                       // indptr
             static_cast<uint64_t>(shape.edges[l]) * 4 +                         // indices
             (shape.src_degrees ? static_cast<uint64_t>(shape.src[l]) * 8 : 0);  // src_degree
  }
  bytes += static_cast<uint64_t>(shape.input_nodes) * static_cast<uint64_t>(feature_dim) * 4;
  return bytes;
}

uint64_t AggregatedBatchBytes(const BatchShape& shape, int64_t feature_dim) {
  if (shape.dst.empty()) return BatchBytes(shape, feature_dim);
  const auto dst = static_cast<uint64_t>(shape.dst[0]);
  const auto input = static_cast<uint64_t>(shape.input_nodes);
  // Condensed (CondenseAggregated): no input rows staged, no block-0 CSR, and the ids of block 0's
  // destinations only; the group's plan holds the rest.
  const uint64_t rows_staging = input * static_cast<uint64_t>(feature_dim) * 4;
  const uint64_t ids_dropped = (input - std::min(input, dst)) * 8;
  const uint64_t block0_csr = (dst + 1) * 8 + static_cast<uint64_t>(shape.edges[0]) * 4 +
                              (shape.src_degrees ? static_cast<uint64_t>(shape.src[0]) * 8 : 0);
  return BatchBytes(shape, feature_dim) - rows_staging - ids_dropped - block0_csr +
         dst * 2 * static_cast<uint64_t>(feature_dim) * 4 + input * kAggregationBytesPerRow;
}

uint64_t SampledBatchBytes(const BatchShape& shape, const DegreeProfile& degrees, int group) {
  // Every node of hops 0 .. L-1 is expanded (block 0's destinations): its whole list is read and
  // cached for the group. Those beyond the seeds were reached by the draws of blocks L-1 .. 1; a
  // hub drawn many times in the group is one list, so the lists are the degrees of the distinct
  // nodes the group's draws reach, shared among its batches.
  double reaching = 0;
  for (size_t l = 1; l < shape.edges.size(); ++l) reaching += static_cast<double>(shape.edges[l]);
  const double g = std::max(group, 1);
  const double entries = static_cast<double>(shape.seeds) * degrees.NodeMean(-1) +
                         degrees.ReachedDegreeSum(g * reaching) / g;
  const uint64_t expanded = shape.dst.empty() ? 0 : static_cast<uint64_t>(shape.dst[0]);
  // The cached lists hold 32-bit ids when the graph allows (ResidentGraphSource).
  const uint64_t id_bytes = degrees.num_nodes() <= INT32_MAX ? 4 : 8;
  const uint64_t sampling = BatchBytes(shape, 0) +
                            static_cast<uint64_t>(std::ceil(entries)) * id_bytes +
                            expanded * kListCacheBytesPerNode;
  // Once sampled, until its group is gathered: condensed, with its share of the group's read
  // schedule (AggregatedBatchBytes without the rows), which is the larger where lists are short.
  return std::max(sampling, AggregatedBatchBytes(shape, 0));
}

uint64_t ListsAheadBytesPerSeed(const DegreeProfile& degrees) {
  // Held: the node, its offset and its ids (ListsReadAhead); while they are read, also in the
  // reading group's list cache (ids and a map entry each).
  const uint64_t id_bytes = degrees.num_nodes() <= INT32_MAX ? 4 : 8;
  return ListsReadAhead::kBytesPerList + kListCacheBytesPerNode / 2 +
         static_cast<uint64_t>(std::ceil(degrees.NodeMean(-1) * 2 * id_bytes));
}

uint64_t SamplerScratchBytes(const BatchShape& shape) {
  uint64_t edges = 0;
  for (int64_t e : shape.edges) edges += static_cast<uint64_t>(e);
  return static_cast<uint64_t>(shape.input_nodes) * kSamplerBytesPerNode +
         edges * kSamplerBytesPerEdge;
}

uint64_t ActivationBytes(const BatchShape& shape, const ModelShape& model, bool aggregated_input) {
  const size_t layers = shape.dst.size();
  double floats = 0;
  for (size_t l = 0; l < layers; ++l) {
    const double in = l == 0 ? static_cast<double>(model.in_dim)
                             : static_cast<double>(model.hidden * std::max(model.heads, 1));
    const double out = l + 1 == layers
                           ? static_cast<double>(model.num_classes)
                           : static_cast<double>(model.hidden * std::max(model.heads, 1));
    const auto src = static_cast<double>(shape.src[l]);
    const auto dst = static_cast<double>(shape.dst[l]);
    const auto edges = static_cast<double>(shape.edges[l]);
    // A hidden layer's activation has a buffer of its own unless it is computed in place.
    const double activation = l + 1 < layers && model.activation_in_place ? 0 : 1;
    if (l == 0 && aggregated_input) {
      // The input arrives dropped out and aggregated (counted with the batch); the layer projects
      // it into the pre-activation, then the activation (their gradients are counted under the
      // next layer; one more dst x out covers buffers not modelled here: GEMM packing, logits).
      floats += (2 + activation) * dst * out;
      continue;
    }
    // The input layer's input after dropout; above it, the gradient of the input (dropout there
    // overwrites the previous layer's activation in place).
    floats += src * in;
    // Projected-then-aggregated or aggregated-then-projected, forward and backward: the layer
    // picks the cheaper order, so the smaller of the two.
    floats += 2 * std::min(src * out, dst * in);
    // Pre-activation, activation, their gradients. (Counting the gradients under the next layer
    // only, 2 * dst * out, left peak RSS within 1 MiB of the promise at 25% of the 2M-node
    // benchmark: buffers not modelled here -- GEMM packing, logits -- need the slack.)
    floats += (3 + activation) * dst * out;
    if (model.attention) floats += 2 * src * out + 5 * (edges + dst) * std::max(model.heads, 1);
  }
  return static_cast<uint64_t>(floats * 4 * kActivationHeadroom);
}

namespace {

// Batches per aggregated group when `bytes` hold one gathered group (`batch` bytes a batch of
// `shape`) and the next group sampled (SampledBatchBytes, written to *sampled): at least one, at
// most kMaxGatherGroup. A larger group shares more lists per batch, so the size is raised until it
// settles (each step only grows it, and keeps group x (batch + sampled) within `bytes`).
int GroupFor(uint64_t bytes, uint64_t batch, const BatchShape& shape, const DegreeProfile& degrees,
             uint64_t* sampled) {
  int group = 1;
  *sampled = SampledBatchBytes(shape, degrees, group);
  for (int step = 0; step < 8; ++step) {
    const auto fit =
        static_cast<int>(std::clamp<uint64_t>(bytes / std::max<uint64_t>(batch + *sampled, 1), 1,
                                              static_cast<uint64_t>(kMaxGatherGroup)));
    if (fit <= group) break;
    group = fit;
    *sampled = SampledBatchBytes(shape, degrees, group);
  }
  return group;
}

}  // namespace

GatherGroupSize AggregatedGatherGroup(uint64_t allowance, const BatchShape& shape,
                                      const DegreeProfile& degrees, int64_t feature_dim) {
  GatherGroupSize size;
  size.group = GroupFor(allowance, AggregatedBatchBytes(shape, feature_dim), shape, degrees,
                        &size.sampled_batch_bytes);
  return size;
}

namespace {

// Feature columns a batch holds on the host: none when the model holds the rows on its device.
int64_t HostFeatureDim(const MemoryBudgetInputs& in) {
  return in.features_on_device ? 0 : in.feature_dim;
}

// Whether the model's activations live on a device rather than in the host's budget.
bool ComputesOnDevice(const MemoryBudgetInputs& in) {
  return in.device_compute || in.features_on_device;
}

// The largest evaluation batch size <= `requested` whose batch and activations are no larger than
// a training batch's (binary search; the sizes grow with the batch size).
int64_t EvalBatchSize(const MemoryBudgetInputs& in, const DegreeProfile& degrees, bool aggregated,
                      uint64_t train_batch, uint64_t train_activations) {
  auto fits = [&](int64_t b) {
    const BatchShape s = EstimateBatch(degrees, b, in.eval_fanouts, in.record_degrees);
    const uint64_t bytes = aggregated ? AggregatedBatchBytes(s, in.feature_dim)
                                      : BatchBytes(s, HostFeatureDim(in)) + SamplerScratchBytes(s);
    // Activations on the device are not the host's to plan.
    return bytes <= train_batch &&
           (ComputesOnDevice(in) || ActivationBytes(s, in.model, aggregated) <= train_activations);
  };
  if (fits(in.eval_batch_size)) return in.eval_batch_size;
  int64_t lo = 1, hi = in.eval_batch_size;  // fits(lo) assumed; !fits(hi)
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

// Bytes a micro-batch of `part`'s shape keeps beside its activations: its copy of its first-layer
// input (two rows per block-0 destination when aggregated, else a row per input node) and its
// blocks (sampler::SliceStructureBytes).
uint64_t PartInputBytes(const BatchShape& part, int64_t feature_dim, bool aggregated) {
  if (part.dst.empty()) return 0;
  const auto row = static_cast<uint64_t>(feature_dim) * 4;
  const uint64_t rows = aggregated ? 2 * static_cast<uint64_t>(part.dst[0]) * row
                                   : static_cast<uint64_t>(part.input_nodes) * row;
  return rows + sampler::SliceStructureBytes(part.dst, part.src, part.edges, part.src_degrees);
}

// The largest number of seeds <= `most` whose part of an evaluation batch needs no more than
// `part_limit` bytes of activations and input copy (at least 1; binary search, as above).
int64_t EvalPartSeeds(const MemoryBudgetInputs& in, const DegreeProfile& degrees, bool aggregated,
                      int64_t most, uint64_t part_limit) {
  auto fits = [&](int64_t b) {
    const BatchShape s = EstimateBatch(degrees, b, in.eval_fanouts, in.record_degrees);
    return ActivationBytes(s, in.model, aggregated) +
               PartInputBytes(s, in.feature_dim, aggregated) <=
           part_limit;
  };
  if (fits(most)) return most;
  int64_t lo = 1, hi = most;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

// The items every plan starts with: what stays resident whatever the batches (metadata, model).
void AddResidentItems(const MemoryBudgetInputs& in, MemoryPlan* plan) {
  const auto n = static_cast<uint64_t>(in.num_nodes);
  const auto offsets = static_cast<uint64_t>(in.offset_nodes >= 0 ? in.offset_nodes : in.num_nodes);
  plan->items.push_back({in.node_labels ? "CSR offsets + labels + splits" : "CSR offsets + splits",
                         8 * (offsets + 1) + (in.node_labels ? 4 * n : 0) +
                             8 * static_cast<uint64_t>(in.split_nodes)});
  plan->items.insert(plan->items.end(), in.extra_items.begin(), in.extra_items.end());
  plan->items.push_back({"model parameters, gradients, optimiser moments",
                         16 * static_cast<uint64_t>(in.model.num_parameters)});
  if (in.model.gradient_sums > 0) {
    plan->items.push_back({"gradient sums of steps over several batches",
                           4 * static_cast<uint64_t>(in.model.gradient_sums) *
                               static_cast<uint64_t>(in.model.num_parameters)});
  }
}

// Bytes a batch of `seeds` seeds holds on the host when the model samples it on its device: the
// seed IDs and labels, once in the batch and once packed in pinned staging.
uint64_t DeviceSampledBatchBytes(int64_t seeds) {
  return 2 * static_cast<uint64_t>(seeds) * (sizeof(int64_t) + sizeof(int32_t));
}

// The plan when the model holds the features and the graph and samples on its device
// (MemoryBudgetInputs::graph_on_device): metadata, the model's host copy, the batches' seeds and
// labels, the upload buffer; no partition slot.
Result<MemoryPlan> DevicePlan(const MemoryBudgetInputs& in) {
  MemoryPlan plan;
  plan.budget_bytes = in.budget_bytes;
  plan.eval_batch_size = in.eval_batch_size > 0 ? in.eval_batch_size : in.batch_size;
  plan.batch_bytes = DeviceSampledBatchBytes(std::max(in.batch_size, plan.eval_batch_size));
  plan.batch_held_bytes = plan.batch_bytes;
  plan.planned_in_flight = in.max_in_flight_batches;
  plan.batch_allowance = plan.batch_bytes * static_cast<uint64_t>(in.max_in_flight_batches);
  AddResidentItems(in, &plan);
  plan.items.push_back({"feature and graph upload to the device", kDeviceUploadBytes});
  plan.items.push_back({"batches in flight (seeds, labels: device-sampled)", plan.batch_allowance});
  for (const MemoryItem& item : plan.items) plan.fixed_bytes += item.bytes;
  plan.pool_bytes = in.pool_fixed_bytes;
  const uint64_t minimum = plan.fixed_bytes + plan.pool_bytes;
  if (in.budget_bytes > 0 && in.budget_bytes < minimum) {
    return Status::ResourceExhausted("--memory " + FormatBytes(in.budget_bytes) +
                                     " is too small even with the graph and features on the "
                                     "device: it needs at least " +
                                     FormatBytesAtLeast(minimum) + "; raise --memory");
  }
  return plan;
}

// What the compute stage keeps per batch besides the batch itself: the device model's pinned
// staging and uploads, or the activations of the batch in compute; aggregated, the sampler's
// scratch and the aggregation window.
void AddComputeItems(const MemoryBudgetInputs& in, bool aggregated, uint64_t activations,
                     uint64_t part_bytes, MemoryPlan* plan) {
  const auto replicas = static_cast<uint64_t>(std::max(in.device_replicas, 1));
  const std::string each =
      replicas > 1 ? " (each of " + std::to_string(replicas) + " device replicas)" : "";
  if (in.features_on_device) {
    // The device model packs each batch's structure into one of two pinned slots.
    plan->items.push_back({"pinned staging of two batches for the device" + each,
                           replicas * 2 * BatchBytes(plan->train_batch, 0)});
    plan->items.push_back(
        {"feature upload to the device (before training)",
         std::min(kDeviceUploadBytes, static_cast<uint64_t>(in.num_nodes) *
                                          static_cast<uint64_t>(in.feature_dim) * 4)});
  } else if (in.device_compute) {
    // The device model packs each batch's structure and its inputs' cache slots into one of two
    // pinned slots (grown by a quarter over the largest batch), and uploads the rows (all, or what
    // its row cache misses) through two pinned chunks, keeping three int64 per input to choose
    // them.
    const auto inputs = static_cast<uint64_t>(plan->train_batch.input_nodes);
    plan->items.push_back(
        {"pinned staging of 2 batches (structure, row slots)" + each,
         replicas * 2 * (BatchBytes(plan->train_batch, 0) + 16 * inputs) * 5 / 4});
    const uint64_t rows = 2 * inputs * static_cast<uint64_t>(in.feature_dim) * 4 * 5 / 4;
    plan->items.push_back({"row upload: pinned chunks, per-input scratch" + each,
                           replicas * (std::min(kDeviceRowChunkBytes, rows) + 24 * inputs)});
    if (in.device_cache_rows > 0) {
      plan->items.push_back(
          {"device row cache index" + each,
           replicas * model::RowSlots::HostBytes(in.num_nodes, in.device_cache_rows)});
    }
  } else if (in.external_model) {
    plan->items.push_back(
        {kConsumerModelItem, in.consumer_bytes > 0
                                 ? in.consumer_bytes
                                 : DefaultConsumerBytes(plan->train_batch, in.feature_dim)});
    if (in.consumer_batches > 0) {
      plan->items.push_back({"batches the caller keeps (" + std::to_string(in.consumer_batches) +
                                 " x ~" + std::to_string(plan->train_batch.input_nodes) + " nodes)",
                             static_cast<uint64_t>(in.consumer_batches) * plan->batch_held_bytes});
    }
  } else if (plan->micro_batches > 1) {
    plan->items.push_back(
        {"activations, 1 of " + std::to_string(plan->micro_batches) + " micro-batches (expected)",
         activations});
    plan->items.push_back({"micro-batch input rows and blocks", part_bytes});
  } else {
    plan->items.push_back({"activations of the batch in compute (expected)", activations});
  }
  if (aggregated) {
    // One thread samples each group (its lists are counted with the group's batches).
    plan->items.push_back({"sampler scratch (1 thread)", SamplerScratchBytes(plan->train_batch)});
    // A window holds at most every node once.
    plan->items.push_back(
        {"aggregation stream window",
         std::min<uint64_t>(static_cast<uint64_t>(in.num_nodes), kStreamWindowRows) *
             kStreamWindowBytesPerRow});
  }
}

// The refusal of a budget below `minimum`: what one batch, the slots and each item take.
Status TooSmall(const MemoryBudgetInputs& in, const MemoryPlan& plan, uint64_t minimum,
                uint64_t one_batch, uint32_t min_slots) {
  std::string detail;
  for (const MemoryItem& item : plan.items) {
    detail += "; " + item.name + " " + FormatBytes(item.bytes);
  }
  // A caller's own model is a loader's (the Python package): its options' names.
  const char* budget = in.external_model ? "memory=" : "--memory ";
  const char* advice = in.external_model
                           ? "); raise memory=, or lower batch_size, num_neighbors or model_memory"
                           : "); raise --memory, or lower --batch-size or --fanouts";
  return Status::ResourceExhausted(
      budget + FormatBytes(in.budget_bytes) +
      " is too small for one batch of this configuration: it needs at least " +
      FormatBytesAtLeast(minimum) + " (one batch of ~" +
      std::to_string(plan.train_batch.input_nodes) + " sampled nodes " + FormatBytes(one_batch) +
      "; " + std::to_string(min_slots) + " partition slots of " +
      FormatBytes(in.partition_slot_bytes) + " + pool scratch " + FormatBytes(in.pool_fixed_bytes) +
      detail + advice);
}

// Aggregated batches: out of `discretionary` bytes, the gather groups (training and evaluation),
// the lists read ahead for the next group (added to *fixed when they fit) and the allowance.
void PlanAggregatedBatches(const MemoryBudgetInputs& in, const DegreeProfile& degrees,
                           uint64_t one_batch, uint64_t discretionary, uint64_t* fixed,
                           MemoryPlan* plan) {
  // Aggregated groups read most of the file whatever is resident: the batches take it all, as
  // one group as large as fits (each read of the file then serves as many batches as possible)
  // plus the next group's sampled structure.
  GatherGroupSize train =
      AggregatedGatherGroup(discretionary, plan->train_batch, degrees, in.feature_dim);
  // Each group's sampling reads the lists of the next group's seeds with its own
  // (ResidentGraphSource): held from then until the next group samples, beside the batches,
  // so out of what they get -- unless that leaves less than one batch.
  const auto ahead_seeds = static_cast<uint64_t>(train.group) * in.batch_size;
  const uint64_t ahead = ahead_seeds * ListsAheadBytesPerSeed(degrees);
  if (discretionary >= one_batch + ahead) {
    plan->lists_ahead_seeds = static_cast<int64_t>(ahead_seeds);
    plan->lists_ahead_bytes = ahead;
    plan->items.push_back({"neighbour lists read ahead (the next group's seeds)", ahead});
    *fixed += ahead;
    discretionary -= ahead;
    train = AggregatedGatherGroup(discretionary, plan->train_batch, degrees, in.feature_dim);
  }
  plan->gather_group = train.group;
  plan->sampled_batch_bytes = train.sampled_batch_bytes;
  plan->planned_in_flight = 2 * plan->gather_group;
  // The batches keep all of it: the groups are re-sized at run time from the batches sampled,
  // and what the estimate leaves over (less than a batch) would buy at most one partition slot,
  // which saves nothing when a group reads most of the file. Only groups at kMaxGatherGroup
  // leave the rest to the slots, keeping a quarter more than the estimate for them: the first
  // group is cut from the estimate, and batches larger than estimated (the 10m preset's are)
  // otherwise overran the allowance. (A group of one that does not fit with the next batch's
  // sampling runs one batch at a time.)
  plan->batch_allowance =
      plan->gather_group < kMaxGatherGroup
          ? discretionary
          : std::min(discretionary, static_cast<uint64_t>(plan->gather_group) *
                                        (plan->batch_bytes + plan->sampled_batch_bytes) * 5 / 4);
  const BatchShape eval =
      EstimateBatch(degrees, plan->eval_batch_size, in.eval_fanouts, in.record_degrees);
  const GatherGroupSize eval_group = AggregatedGatherGroup(
      plan->batch_allowance + plan->lists_ahead_bytes, eval, degrees, in.feature_dim);
  plan->eval_gather_group = eval_group.group;
  plan->eval_sampled_batch_bytes = eval_group.sampled_batch_bytes;
  // A group is admitted whole, and the first of each kind is cut from the estimate alone (the
  // later ones from the batches sampled): it gets a fifth of its allowance to spare.
  plan->first_gather_group = AggregatedGatherGroup(plan->batch_allowance * 4 / 5, plan->train_batch,
                                                   degrees, in.feature_dim);
  plan->eval_first_gather_group = AggregatedGatherGroup(
      (plan->batch_allowance + plan->lists_ahead_bytes) * 4 / 5, eval, degrees, in.feature_dim);
}

// Partition slots (or every partition packed) and the hot row cache out of what the items and
// batches leave of `budget`.
MemoryPlan PlanSlots(const MemoryBudgetInputs& in, bool aggregated, uint32_t min_slots,
                     uint64_t budget, MemoryPlan plan) {
  uint64_t for_slots = budget - plan.fixed_bytes - in.pool_fixed_bytes;
  if (in.packed_pool_bytes > 0 && for_slots >= in.packed_pool_bytes) {
    // Every partition at its own size: all resident, nothing read fine-grained.
    plan.pool_slots = in.num_partitions;
    plan.pool_bytes = in.packed_pool_bytes + in.pool_fixed_bytes;
    plan.fully_resident = true;
    return plan;
  }
  const uint64_t all_slots = uint64_t{in.num_partitions} * in.partition_slot_bytes;
  if (in.cache_row_bytes > 0 && !aggregated && for_slots < all_slots) {
    const uint64_t spare = for_slots - uint64_t{min_slots} * in.partition_slot_bytes;
    const uint64_t all_rows = static_cast<uint64_t>(in.num_nodes) * in.cache_row_bytes;
    plan.row_cache_bytes = std::min({for_slots / 2, spare, all_rows});
    if (plan.row_cache_bytes < in.cache_row_bytes) plan.row_cache_bytes = 0;
    if (plan.row_cache_bytes > 0) {
      plan.items.push_back({"hot row cache (~" +
                                std::to_string(plan.row_cache_bytes / in.cache_row_bytes) +
                                " highest-degree rows)",
                            plan.row_cache_bytes});
      plan.fixed_bytes += plan.row_cache_bytes;
      for_slots -= plan.row_cache_bytes;
    }
  }
  plan.pool_slots = static_cast<uint32_t>(
      std::min<uint64_t>(for_slots / in.partition_slot_bytes, in.num_partitions));
  plan.pool_bytes = uint64_t{plan.pool_slots} * in.partition_slot_bytes + in.pool_fixed_bytes;
  plan.fully_resident = plan.pool_slots == in.num_partitions;
  return plan;
}

// The plan with batches gathered as rows, or aggregated (see the header), and a host model's
// batches computed in `parts` micro-batches.
Result<MemoryPlan> Plan(const MemoryBudgetInputs& in, const DegreeProfile& degrees, bool aggregated,
                        int parts) {
  MemoryPlan plan;
  plan.aggregated_input = aggregated;
  plan.budget_bytes = in.budget_bytes;
  // No budget: room for everything (every partition resident, the pipeline's full capacity).
  const uint64_t budget = in.budget_bytes > 0 ? in.budget_bytes : ~uint64_t{0} / 4;
  plan.train_batch = EstimateBatch(degrees, in.batch_size, in.fanouts, in.record_degrees);
  plan.batch_held_bytes = aggregated ? 0 : BatchBytes(plan.train_batch, HostFeatureDim(in));
  plan.batch_bytes = aggregated ? AggregatedBatchBytes(plan.train_batch, in.feature_dim)
                                : BatchBytes(plan.train_batch, HostFeatureDim(in)) +
                                      SamplerScratchBytes(plan.train_batch);
  const bool host_model = !ComputesOnDevice(in) && !in.external_model;
  plan.micro_batches = host_model ? static_cast<int>(std::min<int64_t>(parts, in.batch_size)) : 1;
  uint64_t activations = 0, part_bytes = 0;
  if (host_model) {
    const BatchShape part =
        plan.micro_batches > 1
            ? EstimateBatch(degrees, (in.batch_size + plan.micro_batches - 1) / plan.micro_batches,
                            in.fanouts, in.record_degrees)
            : plan.train_batch;
    activations = ActivationBytes(part, in.model, aggregated);
    if (plan.micro_batches > 1) part_bytes = PartInputBytes(part, in.feature_dim, aggregated);
  }
  // Evaluation batches are no larger than a training batch, and their activations no larger than
  // a training batch's -- or, in parts, each part's activations and input copy no larger than a
  // training part's (and the batch only as large as its bytes allow).
  const bool eval_planned = in.eval_batch_size > 0 && !in.eval_fanouts.empty();
  if (plan.micro_batches > 1 && eval_planned) {
    plan.eval_batch_size = EvalBatchSize(in, degrees, aggregated, plan.batch_bytes, ~uint64_t{0});
    plan.eval_part_seeds =
        EvalPartSeeds(in, degrees, aggregated, plan.eval_batch_size, activations + part_bytes);
  } else {
    plan.eval_batch_size =
        eval_planned ? EvalBatchSize(in, degrees, aggregated, plan.batch_bytes, activations)
                     : in.batch_size;
  }
  AddResidentItems(in, &plan);
  AddComputeItems(in, aggregated, activations, part_bytes, &plan);
  uint64_t fixed = 0;
  for (const MemoryItem& item : plan.items) fixed += item.bytes;

  // Aggregated groups stream every row they read through the pool's fine-read scratch: they need no
  // slot, and at a small budget the batches make better use of one (the 2M-node benchmark at 10%:
  // groups of 2 instead of 1, half the reads).
  const uint32_t min_slots =
      aggregated ? 0 : std::min(in.min_resident_partitions, in.num_partitions);
  const uint64_t pool_minimum = in.pool_fixed_bytes + uint64_t{min_slots} * in.partition_slot_bytes;
  // Aggregated: a batch's rows are reserved when it is gathered; before that it holds only its
  // sampled structure, and the next group is sampled (structure only) while one is gathered and
  // computed.
  // The minimum has one batch in flight: aggregated, it holds its cached lists while sampled and
  // its rows (freeing the lists) once gathered, so the larger of the two.
  const uint64_t one_batch =
      aggregated ? std::max(plan.batch_bytes, SampledBatchBytes(plan.train_batch, degrees, 1))
                 : plan.batch_bytes;
  const uint64_t minimum = fixed + one_batch + pool_minimum;
  if (budget < minimum) return TooSmall(in, plan, minimum, one_batch, min_slots);
  // Batches in flight get at most half of what the minimum leaves (aggregated: all; at least one
  // batch); the rest, and what the batches do not use, goes to partition slots.
  const uint64_t discretionary = budget - minimum + one_batch;
  if (aggregated) {
    PlanAggregatedBatches(in, degrees, one_batch, discretionary, &fixed, &plan);
  } else {
    const uint64_t fit = discretionary / 2 / std::max<uint64_t>(plan.batch_bytes, 1);
    plan.planned_in_flight = static_cast<int>(
        std::clamp<uint64_t>(fit, 1, static_cast<uint64_t>(in.max_in_flight_batches)));
    plan.batch_allowance = plan.batch_bytes * static_cast<uint64_t>(plan.planned_in_flight);
    if (in.external_model && in.consumer_batches > 0) {
      // The caller's batches count against the same allowance (their item above, in `fixed`).
      const uint64_t kept = static_cast<uint64_t>(in.consumer_batches) * plan.batch_held_bytes;
      plan.batch_allowance += kept;
      fixed -= kept;
    }
  }
  plan.items.push_back({aggregated
                            ? "batches in flight (groups of " + std::to_string(plan.gather_group) +
                                  " x ~" + std::to_string(plan.train_batch.input_nodes) +
                                  " nodes, aggregated, + the next group sampled)"
                            : "batches in flight (" + std::to_string(plan.planned_in_flight) +
                                  " x ~" + std::to_string(plan.train_batch.input_nodes) + " nodes)",
                        plan.batch_allowance});
  plan.fixed_bytes = fixed + plan.batch_allowance;
  return PlanSlots(in, aggregated, min_slots, budget, std::move(plan));
}

// MemoryBudgetInputs::micro_batches = 0: the plan in whole batches unless parts pay -- for
// aggregated batches, the fewest parts whose gather groups are the largest (a group's batches share
// one read of the feature file, and a part's activations leave the rest to the group); for rows,
// only when a budget refuses whole batches. `rows` is the rows plan in whole batches. A budget
// every choice refuses gets the refusal of the most parts (the smallest minimum).
Result<MemoryPlan> PlanWithParts(const MemoryBudgetInputs& in, const DegreeProfile& degrees,
                                 bool aggregated, Result<MemoryPlan> rows) {
  Result<MemoryPlan> best = aggregated ? Plan(in, degrees, true, 1) : std::move(rows);
  for (int parts : kMicroBatchChoices) {
    if (parts == 1) continue;
    if (best.ok() && (!aggregated || best->gather_group >= kMaxGatherGroup)) break;
    if (parts > in.batch_size) break;
    Result<MemoryPlan> next = Plan(in, degrees, aggregated, parts);
    if (!best.ok() || (next.ok() && next->gather_group > best->gather_group)) {
      best = std::move(next);
    }
  }
  return best;
}

}  // namespace

uint64_t DefaultConsumerBytes(const BatchShape& shape, int64_t feature_dim) {
  const uint64_t rows = static_cast<uint64_t>(std::max<int64_t>(shape.input_nodes, 0)) *
                        static_cast<uint64_t>(std::max<int64_t>(feature_dim, 0)) * 4;
  return std::max<uint64_t>(2 * rows, uint64_t{16} << 20);
}

BatchShape ShapeOf(const sampler::MiniBatch& batch) {
  BatchShape shape;
  shape.seeds = static_cast<int64_t>(batch.seeds.size());
  shape.input_nodes = static_cast<int64_t>(batch.input_nodes.size());
  shape.src_degrees = false;
  for (const sampler::Block& block : batch.blocks) {
    shape.src_degrees = shape.src_degrees || !block.src_degree.empty();
    shape.dst.push_back(block.num_dst);
    shape.src.push_back(block.num_src);
    shape.edges.push_back(block.num_edges());
  }
  return shape;
}

BatchShape LargerShape(const BatchShape& a, const BatchShape& b) {
  auto larger = [](const std::vector<int64_t>& x, const std::vector<int64_t>& y) {
    std::vector<int64_t> out(std::max(x.size(), y.size()), 0);
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = std::max(i < x.size() ? x[i] : 0, i < y.size() ? y[i] : 0);
    }
    return out;
  };
  BatchShape out;
  out.seeds = std::max(a.seeds, b.seeds);
  out.input_nodes = std::max(a.input_nodes, b.input_nodes);
  out.dst = larger(a.dst, b.dst);
  out.src = larger(a.src, b.src);
  out.edges = larger(a.edges, b.edges);
  // A shape without blocks (nothing seen yet) says nothing about degrees.
  out.src_degrees = (!a.dst.empty() && a.src_degrees) || (!b.dst.empty() && b.src_degrees);
  return out;
}

Result<MemoryPlan> PlanMemory(const MemoryBudgetInputs& in, const DegreeProfile& degrees) {
  if (in.num_nodes <= 0 || in.num_partitions == 0 || in.partition_slot_bytes == 0 ||
      in.batch_size <= 0 || in.max_in_flight_batches <= 0) {
    return Status::InvalidArgument("memory plan: empty dataset, batch or partition layout");
  }
  // Rows while every partition fits (the in-memory run's batches, bit for bit); otherwise
  // aggregated when the model allows, which may then accept a budget the rows plan refuses.
  if (in.graph_on_device) {
    if (!in.features_on_device) {
      return Status::InvalidArgument(
          "memory plan: the graph on the device needs the features there");
    }
    return DevicePlan(in);
  }
  if (in.features_on_device) return Plan(in, degrees, false, 1);  // IDs only, never aggregated
  if (in.micro_batches > 0) {
    Result<MemoryPlan> rows = Plan(in, degrees, false, in.micro_batches);
    if (!in.aggregated_input || (rows.ok() && rows->fully_resident)) return rows;
    return Plan(in, degrees, true, in.micro_batches);
  }
  Result<MemoryPlan> rows = Plan(in, degrees, false, 1);
  if (rows.ok() && rows->fully_resident) return rows;
  return PlanWithParts(in, degrees, in.aggregated_input, std::move(rows));
}

std::string MemoryPlan::Describe() const {
  std::string out = budget_bytes > 0 ? "memory budget " + FormatBytes(budget_bytes) + ":\n"
                                     : std::string("memory (no budget):\n");
  char line[256];
  for (const MemoryItem& item : items) {
    std::snprintf(line, sizeof(line), "  %-52s %12s\n", item.name.c_str(),
                  FormatBytes(item.bytes).c_str());
    out += line;
  }
  std::snprintf(line, sizeof(line), "  %-52s %12s\n",
                (fully_resident ? "buffer pool: all " + std::to_string(pool_slots) + " partitions"
                                : "buffer pool: " + std::to_string(pool_slots) + " partition slots")
                    .c_str(),
                FormatBytes(pool_bytes).c_str());
  out += line;
  std::snprintf(line, sizeof(line), "  %-52s %12s\n", "fixed overhead outside the budget",
                FormatBytes(kFixedOverheadBytes).c_str());
  out += line;
  std::snprintf(line, sizeof(line), "  evaluation batches of at most %lld seeds\n",
                static_cast<long long>(eval_batch_size));
  out += line;
  return out;
}

}  // namespace skiff::pipeline
