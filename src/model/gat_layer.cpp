// GAT layer (Velickovic et al.), multi-head:
//   z = x_src W  (num_src x heads x F);  el = <z_s, a_l>, er = <z_d, a_r> per head;
//   alpha = edge softmax over LeakyReLU(el_s + er_d) (slope 0.2) per destination and head;
//   h_dst[d, h, :] = sum_e dropout(alpha)[e, h] z[s, h, :] + b   (heads concatenated)
// Every destination row gets a self-loop (edge d -> d, first in its row), as in the original GAT,
// so rows without sampled neighbours still see themselves.
#include <algorithm>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gat.h"
#include "kernels/cpu/gemm.h"
#include "src/model/layer.h"

namespace skiff::model {
namespace {

constexpr float kNegativeSlope = 0.2f;

class GatLayer final : public Layer {
 public:
  GatLayer(int index, int64_t in_dim, int64_t heads, int64_t out_per_head, float attn_dropout,
           std::mt19937_64& rng)
      : in_dim_(in_dim),
        heads_(heads),
        per_head_(out_per_head),
        attn_dropout_(attn_dropout),
        weight_("layer" + std::to_string(index) + ".weight", {in_dim, heads * out_per_head}),
        attn_l_("layer" + std::to_string(index) + ".attn_l", {heads, out_per_head}),
        attn_r_("layer" + std::to_string(index) + ".attn_r", {heads, out_per_head}),
        bias_("layer" + std::to_string(index) + ".bias", {heads * out_per_head}) {
    weight_.GlorotUniform(in_dim, heads * out_per_head, rng);
    attn_l_.GlorotUniform(out_per_head, 1, rng);
    attn_r_.GlorotUniform(out_per_head, 1, rng);
  }

  int64_t in_dim() const override { return in_dim_; }
  int64_t out_dim() const override { return heads_ * per_head_; }

  void Forward(const sampler::Block& block, const float* x_src, bool training,
               uint64_t dropout_seed, float* out) override {
    const int64_t nd = block.num_dst, ns = block.num_src, width = out_dim();
    x_src_ = x_src;
    BuildSelfLoopCsr(block);
    const int64_t nnz = indptr_.back();
    float* z = EnsureSize(z_, ns * width);
    cpu::Gemm(false, false, ns, width, in_dim_, 1.0f, x_src, in_dim_, weight_.data.data(), width,
              0.0f, z, width);
    float* el = EnsureSize(el_, ns * heads_);
    float* er = EnsureSize(er_, nd * heads_);
    cpu::AttentionDot(ns, heads_, per_head_, z, attn_l_.data.data(), el);
    cpu::AttentionDot(nd, heads_, per_head_, z, attn_r_.data.data(), er);  // dst = src prefix
    float* alpha = EnsureSize(alpha_, nnz * heads_);
    cpu::GatEdgeSoftmaxForward(nd, indptr_.data(), indices_.data(), heads_, el, er, kNegativeSlope,
                               alpha);
    dropout_active_ = training && attn_dropout_ > 0.0f;
    dropout_seed_ = dropout_seed;
    const float* alpha_used = alpha;
    if (dropout_active_) {
      float* dropped = EnsureSize(alpha_dropped_, nnz * heads_);
      cpu::DropoutForward(nnz * heads_, attn_dropout_, dropout_seed, alpha, dropped);
      alpha_used = dropped;
    }
    cpu::GatAggregateForward(nd, indptr_.data(), indices_.data(), heads_, per_head_, alpha_used, z,
                             out);
    cpu::BiasAdd(nd, width, bias_.data.data(), out);
  }

  void Backward(const sampler::Block& block, const float* grad_out, float* grad_x_src) override {
    const int64_t nd = block.num_dst, ns = block.num_src, width = out_dim();
    const int64_t nnz = indptr_.back();
    cpu::BiasGrad(nd, width, grad_out, bias_.grad.data());
    const float* alpha_used = dropout_active_ ? alpha_dropped_.data() : alpha_.data();
    float* grad_z = EnsureSize(grad_z_, ns * width);
    float* grad_alpha = EnsureSize(grad_alpha_, nnz * heads_);
    cpu::GatAggregateBackward(nd, ns, indptr_.data(), indices_.data(), heads_, per_head_,
                              alpha_used, z_.data(), grad_out, grad_z, grad_alpha);
    if (dropout_active_) {
      float* grad_alpha_in = EnsureSize(grad_alpha_in_, nnz * heads_);
      cpu::DropoutBackward(nnz * heads_, attn_dropout_, dropout_seed_, grad_alpha, grad_alpha_in);
      grad_alpha = grad_alpha_in;
    }
    float* grad_el = EnsureSize(grad_el_, ns * heads_);
    float* grad_er = EnsureSize(grad_er_, nd * heads_);
    cpu::GatEdgeSoftmaxBackward(nd, ns, indptr_.data(), indices_.data(), heads_, el_.data(),
                                er_.data(), kNegativeSlope, alpha_.data(), grad_alpha, grad_el,
                                grad_er);
    cpu::AttentionDotBackward(ns, heads_, per_head_, z_.data(), attn_l_.data.data(), grad_el,
                              grad_z, attn_l_.grad.data());
    cpu::AttentionDotBackward(nd, heads_, per_head_, z_.data(), attn_r_.data.data(), grad_er,
                              grad_z, attn_r_.grad.data());
    cpu::Gemm(true, false, in_dim_, width, ns, 1.0f, x_src_, in_dim_, grad_z, width, 1.0f,
              weight_.grad.data(), width);
    if (grad_x_src != nullptr) {
      cpu::Gemm(false, true, ns, in_dim_, width, 1.0f, grad_z, width, weight_.data.data(), width,
                0.0f, grad_x_src, in_dim_);
    }
  }

  void AppendParameters(std::vector<Parameter>* params) override {
    params->push_back(weight_.AsParameter());
    params->push_back(attn_l_.AsParameter());
    params->push_back(attn_r_.AsParameter());
    params->push_back(bias_.AsParameter());
  }

 private:
  // indptr_/indices_: the block's CSR with edge d -> d prepended to every row.
  void BuildSelfLoopCsr(const sampler::Block& block) {
    const int64_t nd = block.num_dst;
    indptr_.resize(static_cast<size_t>(nd + 1));
    indices_.resize(static_cast<size_t>(block.num_edges() + nd));
    indptr_[0] = 0;
    int64_t pos = 0;
    for (int64_t d = 0; d < nd; ++d) {
      indices_[static_cast<size_t>(pos++)] = static_cast<int32_t>(d);
      for (int64_t e = block.indptr[d]; e < block.indptr[d + 1]; ++e) {
        indices_[static_cast<size_t>(pos++)] = block.indices[static_cast<size_t>(e)];
      }
      indptr_[static_cast<size_t>(d + 1)] = pos;
    }
  }

  const int64_t in_dim_, heads_, per_head_;
  const float attn_dropout_;
  Tensor weight_, attn_l_, attn_r_, bias_;
  // Per-batch state, kept for Backward.
  const float* x_src_ = nullptr;
  bool dropout_active_ = false;
  uint64_t dropout_seed_ = 0;
  std::vector<int64_t> indptr_;
  std::vector<int32_t> indices_;
  std::vector<float> z_, el_, er_, alpha_, alpha_dropped_;
  std::vector<float> grad_z_, grad_alpha_, grad_alpha_in_, grad_el_, grad_er_;
};

}  // namespace

std::unique_ptr<Layer> MakeGatLayer(int index, int64_t in_dim, int64_t heads, int64_t out_per_head,
                                    float attn_dropout, std::mt19937_64& rng) {
  return std::make_unique<GatLayer>(index, in_dim, heads, out_per_head, attn_dropout, rng);
}

}  // namespace skiff::model
