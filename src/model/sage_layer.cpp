// GraphSAGE layer, mean aggregator with root weight:
//   h_dst = x_dst W_self + mean_{s in N(d)} x_s W_neigh + b
// The mean is linear, so it is applied either before the neighbour projection (aggregate the
// in_dim-wide inputs, then project num_dst rows) or after it (project all num_src rows, then
// aggregate out_dim-wide rows), whichever takes fewer multiply-adds for this block.
#include "kernels/cpu/csr_aggregate.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
#include "src/model/layer.h"

namespace skiff::model {
namespace {

using cpu::AggregateMode;

class SageLayer final : public Layer {
 public:
  SageLayer(int index, int64_t in_dim, int64_t out_dim, std::mt19937_64& rng)
      : in_dim_(in_dim),
        out_dim_(out_dim),
        weight_self_("layer" + std::to_string(index) + ".weight_self", {in_dim, out_dim}),
        weight_neigh_("layer" + std::to_string(index) + ".weight_neigh", {in_dim, out_dim}),
        bias_("layer" + std::to_string(index) + ".bias", {out_dim}) {
    weight_self_.GlorotUniform(in_dim, out_dim, rng);
    weight_neigh_.GlorotUniform(in_dim, out_dim, rng);
  }

  int64_t in_dim() const override { return in_dim_; }
  int64_t out_dim() const override { return out_dim_; }

  void Forward(const sampler::Block& block, const float* x_src, bool /*training*/,
               uint64_t /*dropout_seed*/, float* out) override {
    const int64_t nd = block.num_dst, ns = block.num_src, nnz = block.num_edges();
    x_src_ = x_src;
    const int64_t aggregate_first_cost = nnz * in_dim_ + nd * in_dim_ * out_dim_;
    const int64_t project_first_cost = ns * in_dim_ * out_dim_ + nnz * out_dim_;
    project_first_ = project_first_cost < aggregate_first_cost;
    if (project_first_) {
      float* proj = EnsureSize(projected_, ns * out_dim_);
      cpu::Gemm(false, false, ns, out_dim_, in_dim_, 1.0f, x_src, in_dim_,
                weight_neigh_.data.data(), out_dim_, 0.0f, proj, out_dim_);
      cpu::CsrAggregateForward(nd, ns, block.indptr.data(), block.indices.data(), nullptr,
                               AggregateMode::kMean, proj, out_dim_, out);
    } else {
      float* agg = EnsureSize(aggregated_, nd * in_dim_);
      cpu::CsrAggregateForward(nd, ns, block.indptr.data(), block.indices.data(), nullptr,
                               AggregateMode::kMean, x_src, in_dim_, agg);
      ProjectAggregated(nd, x_src, agg, out);
      return;
    }
    // Self term: destination rows are the first nd source rows.
    cpu::Gemm(false, false, nd, out_dim_, in_dim_, 1.0f, x_src, in_dim_, weight_self_.data.data(),
              out_dim_, 1.0f, out, out_dim_);
    cpu::BiasAdd(nd, out_dim_, bias_.data.data(), out);
  }

  bool ForwardAggregated(const sampler::Block& block, const float* dst_rows,
                         const float* aggregated, float* out) override {
    x_src_ = dst_rows;  // Backward reads only the first num_dst rows of the input
    project_first_ = false;
    ProjectAggregated(block.num_dst, dst_rows, aggregated, out);
    return true;
  }

  void Backward(const sampler::Block& block, const float* grad_out, float* grad_x_src) override {
    const int64_t nd = block.num_dst, ns = block.num_src;
    cpu::BiasGrad(nd, out_dim_, grad_out, bias_.grad.data());
    cpu::Gemm(true, false, in_dim_, out_dim_, nd, 1.0f, x_src_, in_dim_, grad_out, out_dim_, 1.0f,
              weight_self_.grad.data(), out_dim_);
    if (project_first_) {
      float* grad_proj = EnsureSize(grad_projected_, ns * out_dim_);
      cpu::CsrAggregateBackward(nd, ns, block.indptr.data(), block.indices.data(), nullptr,
                                AggregateMode::kMean, grad_out, out_dim_, grad_proj);
      cpu::Gemm(true, false, in_dim_, out_dim_, ns, 1.0f, x_src_, in_dim_, grad_proj, out_dim_,
                1.0f, weight_neigh_.grad.data(), out_dim_);
      if (grad_x_src != nullptr) {
        cpu::Gemm(false, true, ns, in_dim_, out_dim_, 1.0f, grad_proj, out_dim_,
                  weight_neigh_.data.data(), out_dim_, 0.0f, grad_x_src, in_dim_);
      }
    } else {
      cpu::Gemm(true, false, in_dim_, out_dim_, nd, 1.0f, aggregated_input_, in_dim_, grad_out,
                out_dim_, 1.0f, weight_neigh_.grad.data(), out_dim_);
      if (grad_x_src != nullptr) {
        float* grad_agg = EnsureSize(grad_aggregated_, nd * in_dim_);
        cpu::Gemm(false, true, nd, in_dim_, out_dim_, 1.0f, grad_out, out_dim_,
                  weight_neigh_.data.data(), out_dim_, 0.0f, grad_agg, in_dim_);
        cpu::CsrAggregateBackward(nd, ns, block.indptr.data(), block.indices.data(), nullptr,
                                  AggregateMode::kMean, grad_agg, in_dim_, grad_x_src);
      }
    }
    if (grad_x_src != nullptr) {
      cpu::Gemm(false, true, nd, in_dim_, out_dim_, 1.0f, grad_out, out_dim_,
                weight_self_.data.data(), out_dim_, 1.0f, grad_x_src, in_dim_);
    }
  }

  void AppendParameters(std::vector<Parameter>* params) override {
    params->push_back(weight_self_.AsParameter());
    params->push_back(weight_neigh_.AsParameter());
    params->push_back(bias_.AsParameter());
  }

 private:
  // out = aggregated W_neigh + dst_rows W_self + b (the aggregate-first order).
  void ProjectAggregated(int64_t nd, const float* dst_rows, const float* aggregated, float* out) {
    aggregated_input_ = aggregated;
    cpu::Gemm(false, false, nd, out_dim_, in_dim_, 1.0f, aggregated, in_dim_,
              weight_neigh_.data.data(), out_dim_, 0.0f, out, out_dim_);
    cpu::Gemm(false, false, nd, out_dim_, in_dim_, 1.0f, dst_rows, in_dim_,
              weight_self_.data.data(), out_dim_, 1.0f, out, out_dim_);
    cpu::BiasAdd(nd, out_dim_, bias_.data.data(), out);
  }

  const int64_t in_dim_, out_dim_;
  Tensor weight_self_, weight_neigh_, bias_;
  // Per-batch state, kept for Backward.
  const float* x_src_ = nullptr;
  bool project_first_ = false;
  const float* aggregated_input_ = nullptr;  // aggregated_ or the caller's aggregated rows
  std::vector<float> aggregated_, projected_, grad_aggregated_, grad_projected_;
};

}  // namespace

std::unique_ptr<Layer> MakeSageLayer(int index, int64_t in_dim, int64_t out_dim,
                                     std::mt19937_64& rng) {
  return std::make_unique<SageLayer>(index, in_dim, out_dim, rng);
}

}  // namespace skiff::model
