// Internal building blocks of the CPU models: a parameter tensor that owns its storage, Glorot
// initialisation, and the Layer interface that SAGE, GCN and GAT layers implement.
//
// A Layer maps a block's source rows (num_src x in_dim) to its destination rows (num_dst x
// out_dim), using that destination nodes are a prefix of source nodes. Forward keeps pointers to
// its input and its own buffers, so the input must stay valid until Backward. Buffers are members
// resized per batch: once they have grown to the largest batch, no more allocation happens.
// Thread safety: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "skiff/model/model.h"
#include "skiff/sampler/minibatch.h"

namespace skiff::model {

// A parameter tensor and its gradient, owned here.
struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
  std::vector<float> grad;

  Tensor(std::string tensor_name, std::vector<int64_t> tensor_shape, float fill = 0.0f);
  Parameter AsParameter();
  // Fills data from U(-limit, limit), limit = sqrt(6 / (fan_in + fan_out)).
  void GlorotUniform(int64_t fan_in, int64_t fan_out, std::mt19937_64& rng);
};

// Scratch buffers reused across batches: grows `buffer` to at least `size` elements (never shrinks)
// and returns its data. The contents are unspecified after a call that grows it (they are not
// copied over), and growth leaves 1/8 headroom, so that batches slightly larger than any before
// do not each pay a reallocation, zero fill and fresh page faults.
float* EnsureSize(std::vector<float>& buffer, int64_t size);

class Layer {
 public:
  virtual ~Layer() = default;
  virtual int64_t in_dim() const = 0;
  virtual int64_t out_dim() const = 0;
  // x_src: block.num_src x in_dim. Writes out (block.num_dst x out_dim, overwritten). `training`
  // enables the layer's own dropout (GAT attention), seeded by `dropout_seed`.
  virtual void Forward(const sampler::Block& block, const float* x_src, bool training,
                       uint64_t dropout_seed, float* out) = 0;
  // Forward from the first layer's aggregated input (model::AggregateFirstLayerInput: num_dst x
  // in_dim own rows and neighbour means), for layers whose aggregation is kMean. Backward must then
  // get grad_x_src == nullptr (the input is not trained). Returns false when the layer cannot.
  virtual bool ForwardAggregated(const sampler::Block& /*block*/, const float* /*dst_rows*/,
                                 const float* /*aggregated*/, float* /*out*/) {
    return false;
  }
  // grad_out: block.num_dst x out_dim. Accumulates parameter gradients; when grad_x_src is
  // non-null, overwrites it (block.num_src x in_dim) with the gradient of the layer's input.
  virtual void Backward(const sampler::Block& block, const float* grad_out, float* grad_x_src) = 0;
  virtual void AppendParameters(std::vector<Parameter>* params) = 0;
};

// InvalidArgument for a malformed batch for a model of this config (block count != layers,
// num_src/num_dst chain broken, indptr/indices inconsistent or out of range, null features, a
// condensed block 0 unless `aggregated_input`); shared by the CPU and CUDA models.
Status ValidateMiniBatch(const ModelConfig& config, const sampler::MiniBatch& batch, const float* x,
                         bool aggregated_input = false);

std::unique_ptr<Layer> MakeSageLayer(int index, int64_t in_dim, int64_t out_dim,
                                     std::mt19937_64& rng);
std::unique_ptr<Layer> MakeGcnLayer(int index, int64_t in_dim, int64_t out_dim,
                                    std::mt19937_64& rng);
// heads attention heads of out_per_head features each, concatenated (out_dim = heads *
// out_per_head); self-loops are added to every destination row; attention dropout with
// probability attn_dropout when training.
std::unique_ptr<Layer> MakeGatLayer(int index, int64_t in_dim, int64_t heads, int64_t out_per_head,
                                    float attn_dropout, std::mt19937_64& rng);

}  // namespace skiff::model
