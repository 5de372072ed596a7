// GNN node-classification models (GraphSAGE-mean, GCN, GAT) over sampled mini-batches.
//
// A Model runs forward over a MiniBatch (one block per layer, see train/minibatch.h) from the input
// features of batch.input_nodes, keeps what its backward needs, and accumulates parameter gradients
// in Backward(). Parameters() exposes every parameter tensor (with its gradient) so optimisers and
// checkpoints treat all models alike. The CPU implementation runs on kernels/cpu; a CUDA
// implementation of the same interface runs on kernels/cuda.
//
// Thread safety: a Model is used by one thread at a time (the compute stage). Forward must be
// followed by at most one Backward before the next Forward.
//
// Architecture (CPU and CUDA alike): every layer's input goes through dropout (when training;
// the first layer's with probability input_dropout);
// hidden layers are followed by optional LayerNorm (norm == "layer") and then the activation.
//   sage: h_dst = x_dst W_self + mean_{s in N(d)} x_s W_neigh + b
//   gcn:  h_dst = (x_d / (deg_d + 1) + sum_s x_s / sqrt((deg_d + 1)(deg_s + 1))) W + b,
//         degrees counted within the block
//   gat:  `heads` heads of hidden_dim features each, concatenated on hidden layers (width
//         heads * hidden_dim), 1 head on the last layer; a self-loop is added to every destination
//         row; attention coefficients also go through dropout (same probability) when training.
// Parameters are Glorot-uniform initialised from config.seed (biases 0, LayerNorm gain 1).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "skiff/status.h"
#include "skiff/train/minibatch.h"

namespace skiff::model {

enum class ModelKind { kSage, kGcn, kGat };
const char* ModelKindName(ModelKind kind);
Result<ModelKind> ParseModelKind(const std::string& name);  // "sage", "gcn", "gat"
// Whether the model's layers read train::Block::src_degree (GCN's normalisation), so the sampler
// must record whole-graph degrees.
inline bool NeedsNodeDegrees(ModelKind kind) { return kind == ModelKind::kGcn; }

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
  std::string activation = "relu";  // "relu" or "elu"
  std::string norm = "none";        // "none" or "layer" (LayerNorm on hidden layers)
  uint64_t seed = 0;                // parameter initialisation (Glorot uniform) and dropout
};

InputAggregation InputAggregationOf(const ModelConfig& config);
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
void AggregateFirstLayerInput(const train::Block& block, const float* rows, int64_t dim,
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
  // Creates a CUDA model for the first CUDA device. InvalidArgument on a bad config (checked
  // first, as CreateCpu does); Unavailable, with the reason, when Skiff was built without CUDA,
  // or when no CUDA device is usable. Parameters() of a CUDA model expose host memory (the master
  // copy; see kernels/cuda/cuda_model.cuh and docs/cuda.md, "GPU compute stage").
  static Result<std::unique_ptr<Model>> CreateCuda(const ModelConfig& config);

  const ModelConfig& config() const { return config_; }

  // x: batch.input_nodes.size() x in_dim features (row-major). Writes logits (seeds x num_classes).
  // When `embeddings` is non-null, also writes the final layer's input representation
  // (seeds x EmbeddingDim()). `training` enables dropout, seeded by `dropout_seed` (the same seed
  // gives the same masks). Returns InvalidArgument for a malformed batch (block count != layers,
  // num_src/num_dst chain broken, indptr/indices inconsistent or out of range).
  // `batch` and `x` are referenced, not copied: both must stay alive and unchanged until Backward
  // (or the next Forward). Logits/embeddings vectors are resized; reusing them avoids allocation.
  virtual Status Forward(const train::MiniBatch& batch, const float* x, bool training,
                         uint64_t dropout_seed, std::vector<float>* logits,
                         std::vector<float>* embeddings = nullptr) = 0;
  // Forward from aggregated first-layer input (InputAggregationOf(config()) != kNone):
  // `dst_rows` and `aggregated` hold block 0's num_dst x in_dim rows as AggregateFirstLayerInput
  // computes them for the same `training` and `dropout_seed` (the first layer's input dropout is
  // already applied; later layers' dropout is applied here). Otherwise as Forward; with one layer,
  // `embeddings` are the (dropped-out when training) seed rows. Unavailable when the model does not
  // take aggregated input (accepts_aggregated_input()).
  virtual Status ForwardAggregated(const train::MiniBatch& batch, const float* dst_rows,
                                   const float* aggregated, bool training, uint64_t dropout_seed,
                                   std::vector<float>* logits,
                                   std::vector<float>* embeddings = nullptr);
  virtual bool accepts_aggregated_input() const { return false; }
  // grad_logits: seeds x num_classes. Accumulates into every Parameter::grad. Returns
  // InvalidArgument when not preceded by a Forward (or called twice for one Forward).
  virtual Status Backward(const float* grad_logits) = 0;

  virtual std::vector<Parameter> Parameters() = 0;
  void ZeroGrad();
  int64_t NumParameters();
  int64_t EmbeddingDim() const;  // width of the final layer's input

 protected:
  explicit Model(ModelConfig config) : config_(std::move(config)) {}
  ModelConfig config_;
};

// Adam or SGD over a model's parameters; owns the optimiser state (moments).
class Optimizer {
 public:
  struct Config {
    std::string kind = "adam";  // "adam" or "sgd"
    float lr = 0.01f;
    float weight_decay = 5e-4f;
    float momentum = 0.0f;  // SGD only
    // Which parameters weight decay applies to: "all", or "first-layer" (those named "layer0.*";
    // Kipf & Welling's GCN recipe regularises only the first layer).
    std::string decay_scope = "all";
  };
  // InvalidArgument unless kind is "adam" or "sgd"; lr > 0; weight_decay, momentum >= 0;
  // decay_scope "all" or "first-layer".
  static Status ValidateConfig(const Config& config);
  // The config must be valid (checked: an invalid one is a programmer error).
  Optimizer(Model& model, Config config);
  void Step();  // applies one update from the accumulated gradients
  int64_t steps() const { return step_; }
  // State for checkpoints, in Parameters() order: adam keeps m then v per parameter
  // (state()[2i], state()[2i+1]), sgd one momentum buffer per parameter; and the step count.
  std::vector<std::vector<float>>& state() { return state_; }
  void set_steps(int64_t steps) { step_ = steps; }

 private:
  Model& model_;
  Config config_;
  int64_t step_ = 0;
  std::vector<std::vector<float>> state_;  // adam: m and v per parameter; sgd: momentum buffer
};

}  // namespace skiff::model
