// GCN layer (Kipf & Welling) on a sampled block, self-loop folded in:
//   h_dst = (self_weight[d] x_d + sum_{e=(d,s)} w_e x_s) W + b
// with w_e, self_weight from cpu::GcnEdgeWeights: symmetric normalisation over whole-graph degrees
// (block.src_degree, recorded by the sampler) when the block carries them, so a full-neighbourhood
// block computes exactly full-graph GCN and a sampled one an unbiased estimate of it; over degrees
// within the block otherwise. Within-block degrees were the first design and cost about one point
// of Cora accuracy: a source node adjacent to one seed looked like a degree-1 node.
// As in the SAGE layer, the propagation is applied before or after the projection, whichever
// takes fewer multiply-adds for the block.
#include "kernels/cpu/csr_aggregate.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
#include "src/model/layer.h"

namespace skiff::model {
namespace {

using cpu::AggregateMode;

class GcnLayer final : public Layer {
 public:
  GcnLayer(int index, int64_t in_dim, int64_t out_dim, std::mt19937_64& rng)
      : in_dim_(in_dim),
        out_dim_(out_dim),
        weight_("layer" + std::to_string(index) + ".weight", {in_dim, out_dim}),
        bias_("layer" + std::to_string(index) + ".bias", {out_dim}) {
    weight_.GlorotUniform(in_dim, out_dim, rng);
  }

  int64_t in_dim() const override { return in_dim_; }
  int64_t out_dim() const override { return out_dim_; }

  void Forward(const sampler::Block& block, const float* x_src, bool /*training*/,
               uint64_t /*dropout_seed*/, float* out) override {
    const int64_t nd = block.num_dst, ns = block.num_src, nnz = block.num_edges();
    x_src_ = x_src;
    EnsureSize(edge_weight_, nnz);
    EnsureSize(self_weight_, nd);
    cpu::GcnEdgeWeights(nd, ns, block.indptr.data(), block.indices.data(),
                        block.src_degree_or_null(), edge_weight_.data(), self_weight_.data());
    const int64_t aggregate_first_cost = (nnz + nd) * in_dim_ + nd * in_dim_ * out_dim_;
    const int64_t project_first_cost = ns * in_dim_ * out_dim_ + (nnz + nd) * out_dim_;
    project_first_ = project_first_cost < aggregate_first_cost;
    if (project_first_) {
      float* proj = EnsureSize(projected_, ns * out_dim_);
      cpu::Gemm(false, false, ns, out_dim_, in_dim_, 1.0f, x_src, in_dim_, weight_.data.data(),
                out_dim_, 0.0f, proj, out_dim_);
      Propagate(block, proj, out_dim_, out);
    } else {
      float* agg = EnsureSize(aggregated_, nd * in_dim_);
      Propagate(block, x_src, in_dim_, agg);
      cpu::Gemm(false, false, nd, out_dim_, in_dim_, 1.0f, agg, in_dim_, weight_.data.data(),
                out_dim_, 0.0f, out, out_dim_);
    }
    cpu::BiasAdd(nd, out_dim_, bias_.data.data(), out);
  }

  void Backward(const sampler::Block& block, const float* grad_out, float* grad_x_src) override {
    const int64_t nd = block.num_dst, ns = block.num_src;
    cpu::BiasGrad(nd, out_dim_, grad_out, bias_.grad.data());
    if (project_first_) {
      float* grad_proj = EnsureSize(grad_projected_, ns * out_dim_);
      PropagateBackward(block, grad_out, out_dim_, grad_proj);
      cpu::Gemm(true, false, in_dim_, out_dim_, ns, 1.0f, x_src_, in_dim_, grad_proj, out_dim_,
                1.0f, weight_.grad.data(), out_dim_);
      if (grad_x_src != nullptr) {
        cpu::Gemm(false, true, ns, in_dim_, out_dim_, 1.0f, grad_proj, out_dim_,
                  weight_.data.data(), out_dim_, 0.0f, grad_x_src, in_dim_);
      }
    } else {
      cpu::Gemm(true, false, in_dim_, out_dim_, nd, 1.0f, aggregated_.data(), in_dim_, grad_out,
                out_dim_, 1.0f, weight_.grad.data(), out_dim_);
      if (grad_x_src != nullptr) {
        float* grad_agg = EnsureSize(grad_aggregated_, nd * in_dim_);
        cpu::Gemm(false, true, nd, in_dim_, out_dim_, 1.0f, grad_out, out_dim_, weight_.data.data(),
                  out_dim_, 0.0f, grad_agg, in_dim_);
        PropagateBackward(block, grad_agg, in_dim_, grad_x_src);
      }
    }
  }

  void AppendParameters(std::vector<Parameter>* params) override {
    params->push_back(weight_.AsParameter());
    params->push_back(bias_.AsParameter());
  }

 private:
  // y (num_dst x dim) = self_weight * x_dst + sum_e w_e x_src.
  void Propagate(const sampler::Block& block, const float* x, int64_t dim, float* y) const {
    cpu::CsrAggregateForward(block.num_dst, block.num_src, block.indptr.data(),
                             block.indices.data(), edge_weight_.data(), AggregateMode::kWeighted, x,
                             dim, y);
    for (int64_t d = 0; d < block.num_dst; ++d) {
      const float w = self_weight_[static_cast<size_t>(d)];
      for (int64_t k = 0; k < dim; ++k) y[d * dim + k] += w * x[d * dim + k];
    }
  }
  // grad_x (num_src x dim, overwritten) from grad_y (num_dst x dim).
  void PropagateBackward(const sampler::Block& block, const float* grad_y, int64_t dim,
                         float* grad_x) const {
    cpu::CsrAggregateBackward(block.num_dst, block.num_src, block.indptr.data(),
                              block.indices.data(), edge_weight_.data(), AggregateMode::kWeighted,
                              grad_y, dim, grad_x);
    for (int64_t d = 0; d < block.num_dst; ++d) {
      const float w = self_weight_[static_cast<size_t>(d)];
      for (int64_t k = 0; k < dim; ++k) grad_x[d * dim + k] += w * grad_y[d * dim + k];
    }
  }

  const int64_t in_dim_, out_dim_;
  Tensor weight_, bias_;
  // Per-batch state, kept for Backward.
  const float* x_src_ = nullptr;
  bool project_first_ = false;
  std::vector<float> edge_weight_, self_weight_;
  std::vector<float> aggregated_, projected_, grad_aggregated_, grad_projected_;
};

}  // namespace

std::unique_ptr<Layer> MakeGcnLayer(int index, int64_t in_dim, int64_t out_dim,
                                    std::mt19937_64& rng) {
  return std::make_unique<GcnLayer>(index, in_dim, out_dim, rng);
}

}  // namespace skiff::model
