// GNN node-classification models (GraphSAGE-mean, GCN, GAT) over sampled mini-batches.
//
// A Model runs forward over a MiniBatch (one block per layer, see train/minibatch.h) from the input
// features of batch.input_nodes, keeps what its backward needs, and accumulates parameter gradients
// in Backward(). Parameters() exposes every parameter tensor (with its gradient) so optimisers and
// checkpoints treat all models alike. A training loop drives a model through TrainStep, EvalStep
// and TakeLossTotals (loss, backward and update included), which a device model runs without
// waiting for the device. The CPU implementation runs on kernels/cpu; a CUDA implementation of
// the same interface (src/model/cuda/) runs on kernels/cuda.
//
// Thread safety: a Model is used by one thread at a time (the compute stage). Forward must be
// followed by at most one Backward before the next Forward.
//
// Architecture (CPU and CUDA alike): every layer's input goes through dropout (when training;
// the first layer's with probability input_dropout);
// hidden layers are followed by optional LayerNorm (Norm::kLayer) and then the activation.
//   sage: h_dst = x_dst W_self + mean_{s in N(d)} x_s W_neigh + b
//   gcn:  h_dst = (x_d / (deg_d + 1) + (deg_d / k_d) sum_s x_s / sqrt((deg_d + 1)(deg_s + 1))) W +
//   b
//         over d's k_d sampled edges, with whole-graph degrees (Block::src_degree, which the
//         sampler records for GCN; cpu::GcnEdgeWeights); within the block when a batch has none
//   gat:  `heads` heads of hidden_dim features each, concatenated on hidden layers (width
//         heads * hidden_dim), 1 head on the last layer; a self-loop is added to every destination
//         row; attention coefficients also go through dropout (same probability) when training.
// Parameters are Glorot-uniform initialised from config.seed (biases 0, LayerNorm gain 1).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "skiff/enum_names.h"
#include "skiff/sampler/batch_slice.h"
#include "skiff/sampler/csr_source.h"
#include "skiff/sampler/feature_source.h"
#include "skiff/sampler/minibatch.h"
#include "skiff/status.h"

namespace skiff::model {

enum class ModelKind { kSage, kGcn, kGat };
inline constexpr EnumName<ModelKind> kModelKindNames[] = {
    {ModelKind::kSage, "sage"}, {ModelKind::kGcn, "gcn"}, {ModelKind::kGat, "gat"}};
const char* ModelKindName(ModelKind kind);
Result<ModelKind> ParseModelKind(const std::string& name);  // "sage", "gcn", "gat"
// Whether the model's layers read sampler::Block::src_degree (GCN's normalisation), so the sampler
// must record whole-graph degrees.
inline bool NeedsNodeDegrees(ModelKind kind) { return kind == ModelKind::kGcn; }

// The non-linearity after each hidden layer.
enum class Activation { kRelu, kElu };
inline constexpr EnumName<Activation> kActivationNames[] = {{Activation::kRelu, "relu"},
                                                            {Activation::kElu, "elu"}};
// The normalisation of hidden layers' outputs (before the activation).
enum class Norm { kNone, kLayer };
inline constexpr EnumName<Norm> kNormNames[] = {{Norm::kNone, "none"}, {Norm::kLayer, "layer"}};
// CUDA only: dense products on TF32 tensor cores (inputs rounded to 10 mantissa bits, fp32
// accumulation) or as exact fp32 (bit-for-bit the CPU model's arithmetic where the kernels allow;
// docs/cuda.md).
enum class CudaMatmul { kTf32, kFp32 };
inline constexpr EnumName<CudaMatmul> kCudaMatmulNames[] = {{CudaMatmul::kTf32, "tf32"},
                                                            {CudaMatmul::kFp32, "fp32"}};
enum class OptimizerKind { kAdam, kSgd };
inline constexpr EnumName<OptimizerKind> kOptimizerKindNames[] = {{OptimizerKind::kAdam, "adam"},
                                                                  {OptimizerKind::kSgd, "sgd"}};
// Which parameters weight decay applies to: all, or the first layer's (those named "layer0.*";
// Kipf & Welling's GCN recipe regularises only the first layer).
enum class DecayScope { kAll, kFirstLayer };
inline constexpr EnumName<DecayScope> kDecayScopeNames[] = {
    {DecayScope::kAll, "all"}, {DecayScope::kFirstLayer, "first-layer"}};

// How a model's first layer combines the rows of its input when that is a fixed linear map of the
// (dropped-out) rows, involving no parameter -- so whoever gathers the rows can apply it while
// reading them, and hand the model num_dst rows instead of num_src (out of core:
// pipeline/input_aggregator.h):
//   kNone  the first layer needs every source row (GCN and GAT: not offered);
//   kMean  GraphSAGE: each destination's own row, and the mean of its sampled neighbours' rows.
enum class InputAggregation { kNone, kMean };

struct ModelConfig {
  ModelKind kind = ModelKind::kSage;
  int64_t in_dim = 0;
  int64_t hidden_dim = 256;
  int64_t num_classes = 0;
  int num_layers = 2;
  float dropout = 0.5f;
  // Dropout on the first layer's input (the raw features); < 0 means "same as dropout". GCN/GAT
  // on small citation graphs want it (Kipf & Welling, Velickovic et al.); DGL's sampled GraphSAGE
  // recipe uses 0, which also skips a pass over the largest tensor of a sampled batch.
  float input_dropout = -1.0f;
  int heads = 4;  // GAT only: attention heads of hidden layers (last layer: 1 head)
  Activation activation = Activation::kRelu;
  Norm norm = Norm::kNone;  // kLayer: LayerNorm on hidden layers
  uint64_t seed = 0;        // parameter initialisation (Glorot uniform) and dropout
  // CUDA only, not part of the model's definition.
  CudaMatmul cuda_matmul = CudaMatmul::kTf32;
};

// Adam or SGD settings (Optimizer below).
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  float lr = 0.01f;
  float weight_decay = 5e-4f;
  float momentum = 0.0f;  // SGD only
  DecayScope decay_scope = DecayScope::kAll;
};

// Softmax cross-entropy totals over the batches of a pass (labelled seeds only).
struct LossTotals {
  double loss_sum = 0;   // sum of the per-row losses
  int64_t labelled = 0;  // seeds whose label is not -1
  int64_t correct = 0;   // labelled seeds whose argmax is the label
  // Mean loss and accuracy over the labelled seeds (0 when there are none).
  double mean_loss() const { return labelled > 0 ? loss_sum / static_cast<double>(labelled) : 0; }
  double accuracy() const {
    return labelled > 0 ? static_cast<double>(correct) / static_cast<double>(labelled) : 0;
  }
};

// The first layer's input of one batch, in one of three forms:
//   x = input_nodes x in_dim rows, aggregated = null: Forward's form;
//   x = block 0's destination rows and `aggregated` its aggregated rows: ForwardAggregated's form;
//   x = null, aggregated = null: the model gathers the rows of batch->input_nodes from the features
//     it holds (HoldFeatures returned true).
// With `sample` set, the batch is sampled by the model on its device (samples_on_device()):
// batch->seeds (and batch->labels) are all it holds, x and aggregated are null, and the model
// samples exactly what NeighborSampler(graph, *sample->fanouts, NeedsNodeDegrees(kind))
// .Sample(batch->seeds, sample->seed) would give, then gathers the held features.
struct DeviceSampling {
  const std::vector<int>* fanouts = nullptr;  // per layer, input layer first
  uint64_t seed = 0;                          // the sampler seed (BatchSeed of the batch)
};
struct BatchInput {
  const sampler::MiniBatch* batch = nullptr;
  const float* x = nullptr;
  const float* aggregated = nullptr;
  const DeviceSampling* sample = nullptr;
};

class Optimizer;

InputAggregation InputAggregationOf(const ModelConfig& config);
// Whether the CPU model computes its hidden layers' activations in place (a ReLU without a norm:
// its backward needs only its output), so that they need no buffer beside the layer's output.
bool ActivatesInPlace(const ModelConfig& config);
// The dropout probability on the first layer's input (input_dropout, or dropout when < 0).
float FirstLayerDropout(const ModelConfig& config);
// The seed of the first layer's input dropout mask for a Forward given `dropout_seed`: element
// (s, j) of the num_src x in_dim input is kept iff
// cpu::DropoutKeep(FirstLayerDropoutSeed(dropout_seed), s * in_dim + j, p), as on the GPU.
uint64_t FirstLayerDropoutSeed(uint64_t dropout_seed);
// The aggregated first-layer input of kMean, computed from every source row (`rows`: block.num_src
// x dim): dst_rows[d] = drop(rows)[d] and aggregated[d] = sum over d's edges e, in CSR order, of
// drop(rows)[indices[e]] / deg(d) (0 for a row without edges), where drop applies the first
// layer's dropout (probability `dropout`, mask seed FirstLayerDropoutSeed(dropout_seed)) when
// `training`. Both outputs are num_dst x dim. The reference for what a streaming gatherer must
// produce (it may add the terms in another order).
void AggregateFirstLayerInput(const sampler::Block& block, const float* rows, int64_t dim,
                              float dropout, bool training, uint64_t dropout_seed, float* dst_rows,
                              float* aggregated);

// One parameter tensor. `data` and `grad` point into storage owned by the model.
struct Parameter {
  std::string name;  // e.g. "layer0.weight_neigh"
  std::vector<int64_t> shape;
  float* data = nullptr;
  float* grad = nullptr;
  int64_t size() const {
    int64_t s = 1;
    for (int64_t d : shape) s *= d;
    return s;
  }
};

class Model {
 public:
  virtual ~Model() = default;
  // Creates a CPU model with freshly initialised parameters. InvalidArgument on a bad config.
  static Result<std::unique_ptr<Model>> CreateCpu(const ModelConfig& config);
  // Creates a CUDA model on GPU `slot` mod the number of visible GPUs (0: the first; a
  // data-parallel rank passes its rank on its machine, so the ranks of a machine spread over its
  // GPUs). InvalidArgument on a bad config (checked first, as CreateCpu does); Unavailable, with
  // the reason, when Skiff was built without CUDA, or when no CUDA device is usable. A CUDA model
  // trains in device memory; its Parameters() are host copies brought up to date when asked for
  // (src/model/cuda/cuda_model.h and docs/cuda.md, "GPU compute stage").
  static Result<std::unique_ptr<Model>> CreateCuda(const ModelConfig& config, int slot = 0);
  // A model::ReplicaGroup of CUDA models (model/replica_group.h): one per GPU of `devices`, their
  // step sums added by NCCL, one optimiser step per `accumulate` global batches of
  // devices.size() batches; with no devices, one CUDA model on the first device that sums a step's
  // `accumulate` batches on the device. Errors as CreateCuda, and InvalidArgument for a bad GPU
  // list (naming it), Unavailable without NCCL.
  static Result<std::unique_ptr<Model>> CreateCudaReplicas(const ModelConfig& config,
                                                           const std::vector<int>& devices,
                                                           int accumulate);
  // Where a CUDA model would keep a dataset's features and graph, asked before any model exists:
  // the memory plan needs to know. `feature_memory`: the device memory HoldFeatures gives the
  // features for `device_bytes` (TrainOptions::device_memory_bytes; 0: the device's free memory
  // less a margin); `features`: whether they fit there (HoldFeatures' rule); `graph`: whether
  // HoldGraph would then take the graph for `num_layers` layers and fanouts up to `max_fanout`.
  // Unavailable as CreateCuda.
  struct CudaPlacement {
    uint64_t feature_memory = 0;
    bool features = false;
    bool graph = false;
  };
  static Result<CudaPlacement> CudaPlacementFor(uint64_t device_bytes, int64_t num_nodes,
                                                int64_t feature_dim, int64_t num_edges,
                                                int num_layers, int max_fanout);

  const ModelConfig& config() const { return config_; }

  // x: batch.input_nodes.size() x in_dim features (row-major). Writes logits (seeds x num_classes).
  // When `embeddings` is non-null, also writes the final layer's input representation
  // (seeds x EmbeddingDim()). `training` enables dropout, seeded by `dropout_seed` (the same seed
  // gives the same masks). Returns InvalidArgument for a malformed batch (block count != layers,
  // num_src/num_dst chain broken, indptr/indices inconsistent or out of range).
  // `batch` and `x` are referenced, not copied: both must stay alive and unchanged until Backward
  // (or the next Forward). Logits/embeddings vectors are resized; reusing them avoids allocation.
  virtual Status Forward(const sampler::MiniBatch& batch, const float* x, bool training,
                         uint64_t dropout_seed, std::vector<float>* logits,
                         std::vector<float>* embeddings = nullptr) = 0;
  // Forward from aggregated first-layer input (InputAggregationOf(config()) != kNone):
  // `dst_rows` and `aggregated` hold block 0's num_dst x in_dim rows as AggregateFirstLayerInput
  // computes them for the same `training` and `dropout_seed` (the first layer's input dropout is
  // already applied; later layers' dropout is applied here). Otherwise as Forward; with one layer,
  // `embeddings` are the (dropped-out when training) seed rows. Unavailable when the model does not
  // take aggregated input (accepts_aggregated_input()).
  virtual Status ForwardAggregated(const sampler::MiniBatch& batch, const float* dst_rows,
                                   const float* aggregated, bool training, uint64_t dropout_seed,
                                   std::vector<float>* logits,
                                   std::vector<float>* embeddings = nullptr);
  virtual bool accepts_aggregated_input() const { return false; }
  // Forward over a batch the model samples on its device (BatchInput::sample; seeds only in
  // `batch`). InvalidArgument unless samples_on_device().
  virtual Status ForwardDeviceSampled(const sampler::MiniBatch& batch, const DeviceSampling& sample,
                                      bool training, uint64_t dropout_seed,
                                      std::vector<float>* logits,
                                      std::vector<float>* embeddings = nullptr);
  // One layer in inference mode (no dropout), for layer-wise inference over a whole graph
  // (train/layerwise_inference.h): layer `layer` of the stack over `block` (a block as
  // MiniBatch::blocks[layer] would hold it, src_degree recorded for GCN) from its source rows
  // `x_src` (block.num_src x LayerInputDim(layer)), writing block.num_dst x LayerOutputDim(layer)
  // rows to *out (resized): for a hidden layer after its norm and activation -- what the next
  // layer's Forward takes as input -- and for the last layer the logits. Running every layer this
  // way over blocks whose sources carry the previous layer's output computes what Forward computes
  // without training. Unavailable when the model does not run layer by layer (runs_by_layer();
  // the CUDA model); InvalidArgument for a layer out of range or a malformed block. Invalidates a
  // pending Backward.
  virtual Status ForwardLayer(int layer, const sampler::Block& block, const float* x_src,
                              std::vector<float>* out);
  virtual bool runs_by_layer() const { return false; }
  // The width of layer `layer`'s input (in_dim for the first, then the hidden layers' outputs:
  // hidden_dim, times heads for GAT) and of its output (num_classes for the last layer).
  int64_t LayerInputDim(int layer) const;
  int64_t LayerOutputDim(int layer) const;
  // grad_logits: seeds x num_classes. Accumulates into every Parameter::grad. Returns
  // InvalidArgument when not preceded by a Forward (or called twice for one Forward).
  virtual Status Backward(const float* grad_logits) = 0;

  // Forward, ForwardAggregated or ForwardDeviceSampled, as the form of `input` says (BatchInput).
  Status ForwardInput(const BatchInput& input, bool training, uint64_t dropout_seed,
                      std::vector<float>* logits, std::vector<float>* embeddings = nullptr);

  // The steps a training loop runs. A device model queues them without waiting for the device, so
  // the host prepares the next batch meanwhile; their loss statistics are complete only when
  // TakeLossTotals() returns them. Both return InvalidArgument for a malformed batch.
  // One optimisation step: Forward (training, masks from `dropout_seed`), softmax cross-entropy
  // against batch->labels (mean over labelled seeds), the gradients of this batch alone, and
  // optimizer.Step(); adds the batch's loss statistics to the totals.
  virtual Status TrainStep(const BatchInput& input, uint64_t dropout_seed, Optimizer& optimizer);
  // TrainStep without the update, for a step over several batches (gradient accumulation, or a
  // data-parallel step): Forward, the loss (mean over the batch's labelled seeds), and this
  // batch's gradients alone in every Parameters() grad (zeroed first); adds the batch's loss
  // statistics to the totals. The grads are the host tensors: a device model computes on its
  // device and copies the gradients into them.
  virtual Status ComputeGradients(const BatchInput& input, uint64_t dropout_seed);
  // ComputeGradients with the batch's seeds cut into `parts` contiguous runs of nearly equal size
  // (micro-batches), each sliced out of the batch (sampler/batch_slice.h) and run forward and
  // backward before the next, so that only one part's activations are alive at once. Each part's
  // loss is weighted by its share of the batch's labelled seeds, so the summed gradients are the
  // batch's up to the order of floating-point sums -- with no dropout after the first layer's
  // input; dropout masks above it are drawn per part (from `dropout_seed` and the part's index),
  // the same in distribution. The first layer's input dropout of an aggregated input was applied
  // for the whole batch and stays as it was. `parts` <= 1, or a batch sampled on the device:
  // ComputeGradients. For a model on the host, as ComputeGradients.
  Status ComputeGradientsInParts(const BatchInput& input, int parts, uint64_t dropout_seed);
  // Steps whose gradients stay where the model computes (model/replica_group.h: a model replica
  // per GPU, or one CUDA model's --accumulate). AccumulateGradients is ComputeGradients with this
  // batch's gradients added to the model's step sum instead of left in Parameters() (sum = g0,
  // then sum += g1, ... in call order: GradientSum's arithmetic). LoadStepGradients(scale) makes
  // the model's gradients sum * scale (exactly the sum when scale is 1) for the next ApplyUpdate
  // (Optimizer::Step), and zeroes the sum. The CPU model keeps the sum on the host, in Parameters()
  // order (host_step_sum(), the reference); the CUDA model keeps the batch's gradients and the sum
  // in device memory (src/model/cuda/replicas.cpp sums replicas there).
  virtual Status AccumulateGradients(const BatchInput& input, uint64_t dropout_seed);
  virtual Status LoadStepGradients(float scale);
  // The host step sum (zeros until a batch is added; NumParameters() floats), which a host sum
  // across replicas reads and replaces.
  std::span<float> host_step_sum();
  // Whether the model sums the batches of a step itself (a ReplicaGroup): the trainer then gives
  // every batch to TrainStep, which updates when a step is complete, and calls EndTrainingPass
  // after a pass's last batch to take a last, shorter step.
  virtual bool accumulates_steps() const { return false; }
  virtual Status EndTrainingPass(Optimizer& /*optimizer*/) { return Status::Ok(); }
  // Forward without dropout over the batch cut into `parts` parts as above: the logits (and, when
  // `embeddings` is non-null, the embeddings) of every seed in the batch's order, as Forward writes
  // them up to float order, with one part's activations alive at once. `parts` <= 1 or a batch
  // sampled on the device: ForwardInput. For a model on the host.
  Status ForwardInParts(const BatchInput& input, int parts, std::vector<float>* logits,
                        std::vector<float>* embeddings = nullptr);
  // EvalStep over ForwardInParts (EvalStep when `parts` <= 1).
  Status EvalStepInParts(const BatchInput& input, int parts);
  // Forward without dropout and the batch's loss statistics added to the totals.
  virtual Status EvalStep(const BatchInput& input);
  // The totals of the steps since the last call, which resets them.
  virtual Result<LossTotals> TakeLossTotals();

  // Keeps all of `features` on the model's device so that batches can be given as node IDs
  // (BatchInput::x null), when they fit in `device_bytes` (0: the device's free memory less a
  // margin). Returns whether it holds them; a CPU model never does. When they do not fit, the CUDA
  // model keeps a cache of rows within `device_bytes` instead: batches then carry their rows, and
  // only the rows the cache misses cross to the device.
  virtual Result<bool> HoldFeatures(const sampler::FeatureSource& features, uint64_t device_bytes);
  virtual bool holds_features() const { return false; }
  // Keeps the whole graph (`graph`, read range by range) on the model's device and samples there
  // (BatchInput::sample), when the model holds the features, the graph fits in `device_bytes`
  // besides them (0: the device's free memory less a margin) and the device sampler takes fanouts
  // up to `max_fanout` (the largest any pass will ask for). Returns whether it samples on the
  // device, logging why not; a CPU model never does. Corruption from an inconsistent graph.
  virtual Result<bool> HoldGraph(const sampler::CsrSource& graph, uint64_t device_bytes,
                                 int max_fanout);
  virtual bool samples_on_device() const { return false; }
  // One line on where the model runs and what it holds ("" for the CPU model).
  virtual std::string DeviceDescription() const { return ""; }

  // Applies one optimiser update with the accumulated gradients (Optimizer::Step calls it).
  // `state` is the optimiser's state in Parameters() order (Optimizer::state()); a device model
  // may keep it on the device until ReadOptimizerState.
  virtual Status ApplyUpdate(const OptimizerConfig& config, int64_t step,
                             std::vector<std::vector<float>>& state);
  // Whether ApplyUpdate keeps the optimiser state on the model's device, reading `state` only to
  // take it up after ReadOptimizerState (a device model), rather than updating it in place.
  virtual bool optimizer_state_on_device() const { return false; }
  // Makes `state` (and Parameters()) current on the host, for checkpoints or for changing them:
  // the next update takes them from the host again. No-op for a model on the host.
  virtual Status ReadOptimizerState(std::vector<std::vector<float>>& state);

  // Host tensors of every parameter. A device model copies its parameters back first, and takes
  // them (changed or not) from the host again before its next use of them.
  virtual std::vector<Parameter> Parameters() = 0;
  void ZeroGrad();
  int64_t NumParameters();
  int64_t EmbeddingDim() const;  // width of the final layer's input

 protected:
  explicit Model(ModelConfig config) : config_(std::move(config)) {}
  ModelConfig config_;

 private:
  LossTotals totals_;                           // TrainStep / EvalStep on the host
  std::vector<float> step_sum_;                 // AccumulateGradients on the host
  bool step_empty_ = true;                      // no batch added since LoadStepGradients
  std::vector<float> step_logits_, step_grad_;  // reused across steps
  // Forward (training: masks from `dropout_seed`) of seeds [first, first + count) of `whole`,
  // sliced out with their first-layer input rows (ComputeGradientsInParts, ForwardInParts).
  Status ForwardPart(const BatchInput& whole, int64_t first, int64_t count, bool training,
                     uint64_t dropout_seed, std::vector<float>* logits,
                     std::vector<float>* embeddings);
  // The parts' batch and first-layer input rows, and a part's outputs, reused.
  sampler::BatchSlice part_;
  std::vector<float> part_x_, part_aggregated_, part_logits_, part_embeddings_;
};

// Adam or SGD over a model's parameters; owns the optimiser state (moments).
class Optimizer {
 public:
  using Config = OptimizerConfig;
  // InvalidArgument unless lr > 0 and weight_decay, momentum >= 0 (all finite).
  static Status ValidateConfig(const Config& config);
  // The config must be valid (checked: an invalid one is a programmer error).
  Optimizer(Model& model, Config config);
  // Applies one update from the accumulated gradients (on the model's device: Model::ApplyUpdate).
  Status Step();
  int64_t steps() const { return step_; }
  const Config& config() const { return config_; }
  // State for checkpoints, in Parameters() order: adam keeps m then v per parameter
  // (state()[2i], state()[2i+1]), sgd one momentum buffer per parameter; and the step count.
  // Copied back from the model's device first (Model::ReadOptimizerState).
  Result<std::vector<std::vector<float>>*> state();
  void set_steps(int64_t steps) { step_ = steps; }

 private:
  Model& model_;
  Config config_;
  int64_t step_ = 0;
  std::vector<std::vector<float>> state_;  // adam: m and v per parameter; sgd: momentum buffer
};

// State vectors the optimiser keeps per parameter: 2 for adam (m, v), 1 for sgd (momentum).
int OptimizerStateSlots(const OptimizerConfig& config);
// The weight decay `config` applies to `param` (its decay_scope), on the host and the device alike.
float WeightDecayOf(const OptimizerConfig& config, const Parameter& param);

// The optimiser update on host tensors (kernels/cpu/optimizer.h): step `step` (>= 1) of `config`
// over `params` with their gradients, and `state` as Optimizer::state() describes it.
void UpdateOnHost(const OptimizerConfig& config, int64_t step, const std::vector<Parameter>& params,
                  std::vector<std::vector<float>>& state);

}  // namespace skiff::model
