// The CPU model: a stack of SAGE, GCN or GAT layers over the blocks of a MiniBatch, with dropout
// on every layer's input, and on hidden layers optional LayerNorm then ReLU/ELU:
//   h_0 = x;  for l < L-1: h_{l+1} = act(norm(layer_l(dropout(h_l))));  logits =
//   layer_{L-1}(dropout(h_{L-1}))
#include <cstring>
#include <random>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/layer_norm.h"
#include "skiff/model/model.h"
#include "src/model/layer.h"

namespace skiff::model {
namespace {

constexpr float kLayerNormEps = 1e-5f;
constexpr float kEluAlpha = 1.0f;

// Dropout seed of layer `layer`'s input (stream 0) or of its attention (stream 1).
uint64_t LayerSeed(uint64_t seed, int layer, int stream) {
  return cpu::DropoutHash(seed, static_cast<uint64_t>(2 * layer + stream));
}

// InvalidArgument, prefixed "mini-batch: " + `where`, unless `b` has `expected_src` sources, at
// most as many destinations, and a consistent CSR whose sources are in range.
Status ValidateBlock(const sampler::Block& b, int64_t expected_src, const std::string& where) {
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument("mini-batch: " + where + what);
  };
  if (b.num_src != expected_src) {
    return bad("num_src " + std::to_string(b.num_src) + ", expected " +
               std::to_string(expected_src));
  }
  if (b.num_dst < 0 || b.num_dst > b.num_src) {
    return bad("num_dst " + std::to_string(b.num_dst) + " not in [0, num_src]");
  }
  if (static_cast<int64_t>(b.indptr.size()) != b.num_dst + 1 || b.indptr[0] != 0) {
    return bad("indptr must have num_dst + 1 entries starting at 0");
  }
  for (int64_t d = 0; d < b.num_dst; ++d) {
    if (b.indptr[static_cast<size_t>(d + 1)] < b.indptr[static_cast<size_t>(d)]) {
      return bad("indptr decreases at row " + std::to_string(d));
    }
  }
  if (static_cast<int64_t>(b.indices.size()) != b.indptr.back()) {
    return bad("indices has " + std::to_string(b.indices.size()) + " entries, indptr says " +
               std::to_string(b.indptr.back()));
  }
  for (size_t e = 0; e < b.indices.size(); ++e) {
    if (b.indices[e] < 0 || b.indices[e] >= b.num_src) {
      return bad("edge " + std::to_string(e) + " has source " + std::to_string(b.indices[e]) +
                 " outside [0, " + std::to_string(b.num_src) + ")");
    }
  }
  return Status::Ok();
}

Status ValidateConfig(const ModelConfig& c) {
  auto bad = [](const std::string& what) {
    return Status::InvalidArgument("model config: " + what);
  };
  if (c.in_dim <= 0) return bad("in_dim must be positive (got " + std::to_string(c.in_dim) + ")");
  if (c.num_classes <= 0) {
    return bad("num_classes must be positive (got " + std::to_string(c.num_classes) + ")");
  }
  if (c.hidden_dim <= 0) {
    return bad("hidden_dim must be positive (got " + std::to_string(c.hidden_dim) + ")");
  }
  if (c.num_layers < 1)
    return bad("num_layers must be >= 1 (got " + std::to_string(c.num_layers) + ")");
  if (!(c.dropout >= 0.0f && c.dropout < 1.0f)) {
    return bad("dropout must lie in [0, 1) (got " + std::to_string(c.dropout) + ")");
  }
  if (!(c.input_dropout == -1.0f || (c.input_dropout >= 0.0f && c.input_dropout < 1.0f))) {
    return bad("input_dropout must lie in [0, 1), or be -1 for the same as dropout (got " +
               std::to_string(c.input_dropout) + ")");
  }
  if (c.heads < 1) return bad("heads must be >= 1 (got " + std::to_string(c.heads) + ")");
  return Status::Ok();
}

class CpuModel final : public Model {
 public:
  explicit CpuModel(ModelConfig config) : Model(std::move(config)) {
    std::mt19937_64 rng(config_.seed);
    const int num_layers = config_.num_layers;
    int64_t in_dim = config_.in_dim;
    for (int l = 0; l < num_layers; ++l) {
      const bool last = l == num_layers - 1;
      const int64_t out_per_head = last ? config_.num_classes : config_.hidden_dim;
      switch (config_.kind) {
        case ModelKind::kSage:
          layers_.push_back(MakeSageLayer(l, in_dim, out_per_head, rng));
          break;
        case ModelKind::kGcn:
          layers_.push_back(MakeGcnLayer(l, in_dim, out_per_head, rng));
          break;
        case ModelKind::kGat:
          layers_.push_back(MakeGatLayer(l, in_dim, last ? 1 : config_.heads, out_per_head,
                                         config_.dropout, rng));
          break;
      }
      const int64_t out_dim = layers_.back()->out_dim();
      LayerState state;
      if (!last && config_.norm == Norm::kLayer) {
        state.gamma = std::make_unique<Tensor>("layer" + std::to_string(l) + ".norm_gamma",
                                               std::vector<int64_t>{out_dim}, 1.0f);
        state.beta = std::make_unique<Tensor>("layer" + std::to_string(l) + ".norm_beta",
                                              std::vector<int64_t>{out_dim}, 0.0f);
      }
      states_.push_back(std::move(state));
      in_dim = out_dim;
    }
  }

  Status Forward(const sampler::MiniBatch& batch, const float* x, bool training,
                 uint64_t dropout_seed, std::vector<float>* logits,
                 std::vector<float>* embeddings) override {
    ready_for_backward_ = false;
    SKIFF_RETURN_IF_ERROR(ValidateBatch(batch, x));
    return Run(batch, {x, nullptr}, training, dropout_seed, logits, embeddings);
  }

  Status ForwardAggregated(const sampler::MiniBatch& batch, const float* dst_rows,
                           const float* aggregated, bool training, uint64_t dropout_seed,
                           std::vector<float>* logits, std::vector<float>* embeddings) override {
    ready_for_backward_ = false;
    if (!accepts_aggregated_input()) {
      return Model::ForwardAggregated(batch, dst_rows, aggregated, training, dropout_seed, logits,
                                      embeddings);
    }
    // The first block's sources are not handed over: validate with a stand-in pointer.
    SKIFF_RETURN_IF_ERROR(ValidateBatch(batch, dst_rows != nullptr ? dst_rows : aggregated,
                                        /*aggregated_input=*/true));
    if (batch.blocks[0].num_dst > 0 && (dst_rows == nullptr || aggregated == nullptr)) {
      return Status::InvalidArgument("mini-batch: aggregated input is null");
    }
    return Run(batch, {dst_rows, aggregated}, training, dropout_seed, logits, embeddings);
  }

  bool accepts_aggregated_input() const override {
    return InputAggregationOf(config_) == InputAggregation::kMean;
  }

  Status Backward(const float* grad_logits) override {
    if (!ready_for_backward_) {
      return Status::InvalidArgument("Model::Backward called without a preceding Forward");
    }
    ready_for_backward_ = false;
    const sampler::MiniBatch& batch = *batch_;
    const float* grad_out = grad_logits;
    for (int l = config_.num_layers - 1; l >= 0; --l) {
      const sampler::Block& block = batch.blocks[static_cast<size_t>(l)];
      Layer& layer = *layers_[static_cast<size_t>(l)];
      LayerState& st = states_[static_cast<size_t>(l)];
      if (l == 0) {
        layer.Backward(block, grad_out, nullptr);  // input features are not trained
        break;
      }
      // Gradient of this layer's input = gradient of the previous layer's activated output.
      const int64_t n = block.num_src * layer.in_dim();
      float* grad_in = EnsureSize(st.grad_input, n);
      layer.Backward(block, grad_out, grad_in);
      if (training_ && InputDropout(l) > 0.0f) {  // element-wise: in place is safe
        cpu::DropoutBackward(n, InputDropout(l), LayerSeed(dropout_seed_, l, 0), grad_in, grad_in);
      }
      LayerState& prev = states_[static_cast<size_t>(l - 1)];
      const int64_t prev_rows = block.num_src;  // == previous block's num_dst
      const int64_t prev_dim = layer.in_dim();
      if (config_.activation == Activation::kElu) {
        const float* act_in =
            prev.gamma != nullptr ? prev.normed.data() : prev.pre_activation.data();
        cpu::EluBackward(n, kEluAlpha, act_in, grad_in, grad_in);
      } else {
        cpu::ReluBackward(n, prev.act, grad_in, grad_in);
      }
      if (prev.gamma != nullptr) {
        float* grad_pre = EnsureSize(prev.grad_pre_activation, n);
        cpu::LayerNormBackward(prev_rows, prev_dim, prev.pre_activation.data(),
                               prev.gamma->data.data(), prev.norm_mean.data(),
                               prev.norm_rstd.data(), grad_in, grad_pre, prev.gamma->grad.data(),
                               prev.beta->grad.data());
        grad_out = grad_pre;
      } else {
        grad_out = grad_in;
      }
    }
    return Status::Ok();
  }

  Status ForwardLayer(int l, const sampler::Block& block, const float* x_src,
                      std::vector<float>* out) override {
    SKIFF_CHECK(out != nullptr);
    ready_for_backward_ = false;
    if (l < 0 || l >= config_.num_layers) {
      return Status::InvalidArgument("layer " + std::to_string(l) + " is not in [0, " +
                                     std::to_string(config_.num_layers) + ")");
    }
    SKIFF_RETURN_IF_ERROR(
        ValidateBlock(block, block.num_src, "block of layer " + std::to_string(l) + ": "));
    if (block.num_src > 0 && x_src == nullptr) {
      return Status::InvalidArgument("mini-batch: features are null");
    }
    Layer& layer = *layers_[static_cast<size_t>(l)];
    const int64_t n = block.num_dst * layer.out_dim();
    out->resize(static_cast<size_t>(n));
    if (l == config_.num_layers - 1) {
      layer.Forward(block, x_src, /*training=*/false, 0, out->data());
      return Status::Ok();
    }
    float* raw = EnsureSize(states_[static_cast<size_t>(l)].pre_activation, n);
    layer.Forward(block, x_src, /*training=*/false, 0, raw);
    Activate(l, block.num_dst, raw, out->data());
    return Status::Ok();
  }

  bool runs_by_layer() const override { return true; }

  std::vector<Parameter> Parameters() override {
    std::vector<Parameter> params;
    for (size_t l = 0; l < layers_.size(); ++l) {
      layers_[l]->AppendParameters(&params);
      if (states_[l].gamma != nullptr) {
        params.push_back(states_[l].gamma->AsParameter());
        params.push_back(states_[l].beta->AsParameter());
      }
    }
    return params;
  }

 private:
  // The first layer's input: every source row (`rows`), or aggregated (`aggregated` non-null:
  // `rows` are then block 0's destination rows).
  struct FirstInput {
    const float* rows;
    const float* aggregated;
  };

  Status Run(const sampler::MiniBatch& batch, FirstInput input, bool training,
             uint64_t dropout_seed, std::vector<float>* logits, std::vector<float>* embeddings) {
    SKIFF_CHECK(logits != nullptr);
    batch_ = &batch;
    training_ = training;
    dropout_seed_ = dropout_seed;
    const int num_layers = config_.num_layers;
    const float* h = input.rows;
    int64_t h_dim = config_.in_dim;
    for (int l = 0; l < num_layers; ++l) {
      const sampler::Block& block = batch.blocks[static_cast<size_t>(l)];
      Layer& layer = *layers_[static_cast<size_t>(l)];
      LayerState& st = states_[static_cast<size_t>(l)];
      const bool last = l == num_layers - 1;
      if (last && embeddings != nullptr) {
        embeddings->resize(static_cast<size_t>(block.num_dst * h_dim));
        if (block.num_dst > 0) {
          std::memcpy(embeddings->data(), h,
                      sizeof(float) * static_cast<size_t>(block.num_dst * h_dim));
        }
      }
      const float* layer_in = h;
      const float p = InputDropout(l);
      const bool aggregated = l == 0 && input.aggregated != nullptr;  // dropout already applied
      if (training && p > 0.0f && !aggregated) {
        // Above the input layer, h is the previous layer's activation, which nothing reads again
        // but the ReLU's backward, and that gives the same gradient from the dropped-out values
        // (the kept ones keep their sign, the dropped ones get no gradient): in place.
        float* dropped = l > 0 ? states_[static_cast<size_t>(l - 1)].act
                               : EnsureSize(st.input_dropped, block.num_src * h_dim);
        cpu::DropoutForward(block.num_src * h_dim, p, LayerSeed(dropout_seed, l, 0), h, dropped);
        layer_in = dropped;
      }
      const int64_t out_dim = layer.out_dim();
      float* out;
      if (last) {
        logits->resize(static_cast<size_t>(block.num_dst * out_dim));
        out = logits->data();
      } else {
        out = EnsureSize(st.pre_activation, block.num_dst * out_dim);
      }
      if (aggregated) {
        SKIFF_CHECK(layer.ForwardAggregated(block, layer_in, input.aggregated, out));
      } else {
        layer.Forward(block, layer_in, training, LayerSeed(dropout_seed, l, 1), out);
      }
      if (last) break;
      // A ReLU without a norm before it overwrites its input (ActivatesInPlace).
      SKIFF_CHECK(ActivatesInPlace(config_) ==
                  (config_.activation == Activation::kRelu && st.gamma == nullptr));
      st.act = ActivatesInPlace(config_) ? out : EnsureSize(st.activated, block.num_dst * out_dim);
      Activate(l, block.num_dst, out, st.act);
      h = st.act;
      h_dim = out_dim;
    }
    ready_for_backward_ = true;
    return Status::Ok();
  }

  // A hidden layer's output `rows` x out_dim (`out`) through its norm, when it has one, and the
  // activation, into `act` (the next layer's input).
  void Activate(int l, int64_t rows, const float* out, float* act) {
    LayerState& st = states_[static_cast<size_t>(l)];
    const int64_t out_dim = layers_[static_cast<size_t>(l)]->out_dim();
    const int64_t n = rows * out_dim;
    const float* act_in = out;
    if (st.gamma != nullptr) {
      float* normed = EnsureSize(st.normed, n);
      cpu::LayerNormForward(rows, out_dim, out, st.gamma->data.data(), st.beta->data.data(),
                            kLayerNormEps, normed, EnsureSize(st.norm_mean, rows),
                            EnsureSize(st.norm_rstd, rows));
      act_in = normed;
    }
    if (config_.activation == Activation::kElu) {
      cpu::EluForward(n, kEluAlpha, act_in, act);
    } else {
      cpu::ReluForward(n, act_in, act);
    }
  }

  // Per-layer normalisation parameters and activation buffers (reused across batches).
  struct LayerState {
    std::unique_ptr<Tensor> gamma, beta;  // LayerNorm on hidden layers when config.norm is kLayer
    std::vector<float> input_dropped;     // dropout(h_l), num_src x in_dim
    std::vector<float> pre_activation;    // layer output, num_dst x out_dim
    std::vector<float> normed, norm_mean, norm_rstd;
    std::vector<float> activated;  // h_{l+1}, unless it is computed in place (act)
    float* act = nullptr;          // h_{l+1} of the last Forward: `activated` or `pre_activation`
    std::vector<float> grad_input, grad_pre_activation;
  };

  // Dropout probability on layer l's input.
  float InputDropout(int l) const {
    return l == 0 && config_.input_dropout >= 0.0f ? config_.input_dropout : config_.dropout;
  }

  Status ValidateBatch(const sampler::MiniBatch& batch, const float* x,
                       bool aggregated_input = false) const {
    return ValidateMiniBatch(config_, batch, x, aggregated_input);
  }

  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<LayerState> states_;
  // Per-batch state between Forward and Backward.
  const sampler::MiniBatch* batch_ = nullptr;
  bool training_ = false;
  uint64_t dropout_seed_ = 0;
  bool ready_for_backward_ = false;
};

}  // namespace

Status ValidateMiniBatch(const ModelConfig& config, const sampler::MiniBatch& batch, const float* x,
                         bool aggregated_input) {
  auto bad = [](const std::string& what) { return Status::InvalidArgument("mini-batch: " + what); };
  if (static_cast<int>(batch.blocks.size()) != config.num_layers) {
    return bad("has " + std::to_string(batch.blocks.size()) + " blocks, the model has " +
               std::to_string(config.num_layers) + " layers");
  }
  int64_t expected_src = static_cast<int64_t>(batch.input_nodes.size());
  if (expected_src > 0 && x == nullptr) return bad("features are null");
  for (size_t l = 0; l < batch.blocks.size(); ++l) {
    const sampler::Block& b = batch.blocks[l];
    const std::string where = "block " + std::to_string(l) + ": ";
    if (l == 0 && b.condensed()) {
      // Aggregated input: block 0 keeps its sizes and input_nodes its destinations (minibatch.h).
      if (!aggregated_input) return bad("block 0 is condensed, but the input is not aggregated");
      if (b.num_dst < 0 || b.num_dst > b.num_src || b.num_dst != expected_src) {
        return bad("condensed block 0: num_dst " + std::to_string(b.num_dst) + ", num_src " +
                   std::to_string(b.num_src) + ", " + std::to_string(expected_src) +
                   " input nodes");
      }
      continue;  // the next block's sources are these destinations: expected_src already
    }
    SKIFF_RETURN_IF_ERROR(ValidateBlock(b, expected_src, where));
    expected_src = b.num_dst;
  }
  if (batch.blocks.back().num_dst != static_cast<int64_t>(batch.seeds.size())) {
    return bad("last block has " + std::to_string(batch.blocks.back().num_dst) +
               " destination rows but there are " + std::to_string(batch.seeds.size()) + " seeds");
  }
  return Status::Ok();
}

Result<std::unique_ptr<Model>> Model::CreateCpu(const ModelConfig& config) {
  SKIFF_RETURN_IF_ERROR(ValidateConfig(config));
  return std::unique_ptr<Model>(std::make_unique<CpuModel>(config));
}

}  // namespace skiff::model
