// The CUDA model (see cuda_model.cuh): the layer code of src/model/{sage,gcn,gat}_layer.cpp and
// the layer stack of src/model/cpu_model.cpp, call for call, on kernels/cuda. Two host-side
// preparations per block replace device code the CPU model runs inline, both O(edges):
//   GCN: the edge and self weights come from cpu::GcnEdgeWeights, and the self term becomes a
//        first edge d -> d of every row (weight = self weight), so propagation is one weighted
//        CSR aggregation on the device;
//   GAT: the self-loop CSR is built on the host exactly as the CPU layer builds it.
#include "kernels/cuda/cuda_model.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/csr_aggregate.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/csr_aggregate.cuh"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/gat.cuh"
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/layer_norm.cuh"
#include "kernels/cuda/stream.cuh"
#include "src/model/layer.h"

namespace skiff::cuda {
namespace {

using model::ModelKind;

constexpr float kLayerNormEps = 1e-5f;  // as src/model/cpu_model.cpp
constexpr float kEluAlpha = 1.0f;
constexpr float kNegativeSlope = 0.2f;  // as src/model/gat_layer.cpp

uint64_t LayerSeed(uint64_t seed, int layer, int stream) {
  return cpu::DropoutHash(seed, static_cast<uint64_t>(2 * layer + stream));
}

#define SKIFF_CUDA_RETURN(expr) SKIFF_RETURN_IF_ERROR(FromCudaError(static_cast<int>(expr), #expr))

// Device memory that grows to the largest request and is reused (like EnsureSize on the host).
template <typename T>
class DeviceVec {
 public:
  DeviceVec() = default;
  DeviceVec(const DeviceVec&) = delete;
  DeviceVec& operator=(const DeviceVec&) = delete;
  ~DeviceVec() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  // Returns at least `count` elements (contents unspecified after growth).
  Result<T*> Ensure(int64_t count, const char* what) {
    const size_t n = static_cast<size_t>(std::max<int64_t>(count, 1));
    if (n > capacity_) {
      if (ptr_ != nullptr) cudaFree(ptr_);
      ptr_ = nullptr;
      capacity_ = 0;
      void* p = nullptr;
      const cudaError_t err = cudaMalloc(&p, n * sizeof(T));
      if (err != cudaSuccess) {
        return Status::ResourceExhausted(std::string("CUDA model: cannot allocate ") +
                                         DescribeBytes(n * sizeof(T)) + " for " + what + ": " +
                                         cudaGetErrorString(err));
      }
      ptr_ = static_cast<T*>(p);
      capacity_ = n;
    }
    return ptr_;
  }
  T* get() const { return ptr_; }

 private:
  T* ptr_ = nullptr;
  size_t capacity_ = 0;
};

// Device copies of one host Parameter.
struct DeviceParam {
  model::Parameter host;
  DeviceVec<float> data, grad;
};

// A block's CSR on the device (possibly augmented with self-loops) and its per-edge weights.
struct DeviceBlock {
  int64_t num_dst = 0, num_src = 0, nnz = 0;
  DeviceVec<int64_t> indptr;
  DeviceVec<int32_t> indices;
  DeviceVec<float> edge_weight;  // GCN only
};

struct LayerBuffers {
  // Layer-internal.
  DeviceVec<float> aggregated, projected, grad_aggregated, grad_projected;
  DeviceVec<float> z, el, er, alpha, alpha_dropped, grad_z, grad_alpha, grad_alpha_in, grad_el,
      grad_er;
  bool project_first = false;
  bool attn_dropout_active = false;
  const float* x_src = nullptr;  // the layer's (dropped-out) input, device
  // Layer stack.
  DeviceVec<float> input_dropped, pre_activation, normed, norm_mean, norm_rstd, activated,
      grad_input, grad_pre_activation;
};

class CudaModel final : public model::Model {
 public:
  CudaModel(std::unique_ptr<model::Model> host, CudaStream stream, CublasHandle cublas)
      : Model(host->config()),
        host_(std::move(host)),
        stream_(std::move(stream)),
        cublas_(std::move(cublas)) {
    const std::vector<model::Parameter> params = host_->Parameters();
    params_ = std::vector<DeviceParam>(params.size());
    for (size_t i = 0; i < params.size(); ++i) params_[i].host = params[i];
    blocks_ = std::vector<DeviceBlock>(static_cast<size_t>(config_.num_layers));
    buffers_ = std::vector<LayerBuffers>(static_cast<size_t>(config_.num_layers));
    attn_seed_.assign(static_cast<size_t>(config_.num_layers), 0);
    // Parameter layout per layer, in the CPU model's Parameters() order.
    size_t next = 0;
    for (int l = 0; l < config_.num_layers; ++l) {
      const bool last = l == config_.num_layers - 1;
      LayerParams lp;
      lp.first = next;
      lp.heads = config_.kind == ModelKind::kGat && !last ? config_.heads : 1;
      lp.per_head = last ? config_.num_classes : config_.hidden_dim;
      lp.in_dim = l == 0 ? config_.in_dim : layers_.back().out_dim();
      next += config_.kind == ModelKind::kSage ? 3 : config_.kind == ModelKind::kGcn ? 2 : 4;
      if (!last && config_.norm == "layer") {
        lp.gamma = next;
        next += 2;
      }
      layers_.push_back(lp);
    }
    SKIFF_CHECK(next == params_.size());
  }

  Status Forward(const train::MiniBatch& batch, const float* x, bool training,
                 uint64_t dropout_seed, std::vector<float>* logits,
                 std::vector<float>* embeddings) override {
    ready_for_backward_ = false;
    SKIFF_RETURN_IF_ERROR(model::ValidateMiniBatch(config_, batch, x));
    SKIFF_CHECK(logits != nullptr);
    training_ = training;
    dropout_seed_ = dropout_seed;
    cudaStream_t s = stream_.get();
    // Parameters: the host copy is the master (the optimiser updates it between batches).
    for (DeviceParam& p : params_) {
      SKIFF_ASSIGN_OR_RETURN(float* d, p.data.Ensure(p.host.size(), "parameters"));
      SKIFF_CUDA_RETURN(cudaMemcpyAsync(d, p.host.data, sizeof(float) * p.host.size(),
                                        cudaMemcpyHostToDevice, s));
    }
    for (int l = 0; l < config_.num_layers; ++l) {
      SKIFF_RETURN_IF_ERROR(UploadBlock(l, batch.blocks[static_cast<size_t>(l)]));
    }
    const int64_t num_input = static_cast<int64_t>(batch.input_nodes.size());
    SKIFF_ASSIGN_OR_RETURN(float* x_dev, x_.Ensure(num_input * config_.in_dim, "input features"));
    if (num_input > 0) {
      SKIFF_CUDA_RETURN(cudaMemcpyAsync(x_dev, x, sizeof(float) * num_input * config_.in_dim,
                                        cudaMemcpyHostToDevice, s));
    }

    const float* h = x_dev;
    int64_t h_dim = config_.in_dim;
    for (int l = 0; l < config_.num_layers; ++l) {
      const DeviceBlock& block = blocks_[static_cast<size_t>(l)];
      const LayerParams& lp = layers_[static_cast<size_t>(l)];
      LayerBuffers& st = buffers_[static_cast<size_t>(l)];
      const bool last = l == config_.num_layers - 1;
      if (last && embeddings != nullptr) {
        embeddings->resize(static_cast<size_t>(block.num_dst * h_dim));
        SKIFF_CUDA_RETURN(cudaMemcpyAsync(embeddings->data(), h,
                                          sizeof(float) * block.num_dst * h_dim,
                                          cudaMemcpyDeviceToHost, s));
      }
      const float* layer_in = h;
      const float p = InputDropout(l);
      if (training && p > 0.0f) {
        SKIFF_ASSIGN_OR_RETURN(float* dropped,
                               st.input_dropped.Ensure(block.num_src * h_dim, "dropout"));
        SKIFF_RETURN_IF_ERROR(
            DropoutForward(block.num_src * h_dim, p, LayerSeed(dropout_seed, l, 0), h, dropped, s));
        layer_in = dropped;
      }
      const int64_t out_dim = lp.out_dim();
      SKIFF_ASSIGN_OR_RETURN(float* out,
                             st.pre_activation.Ensure(block.num_dst * out_dim, "layer output"));
      SKIFF_RETURN_IF_ERROR(
          LayerForward(l, layer_in, training, LayerSeed(dropout_seed, l, 1), out));
      if (last) {
        logits->resize(static_cast<size_t>(block.num_dst * out_dim));
        SKIFF_CUDA_RETURN(cudaMemcpyAsync(logits->data(), out,
                                          sizeof(float) * block.num_dst * out_dim,
                                          cudaMemcpyDeviceToHost, s));
        break;
      }
      const int64_t n = block.num_dst * out_dim;
      const float* act_in = out;
      if (lp.gamma != kNone) {
        SKIFF_ASSIGN_OR_RETURN(float* normed, st.normed.Ensure(n, "layer norm"));
        SKIFF_ASSIGN_OR_RETURN(float* mean, st.norm_mean.Ensure(block.num_dst, "layer norm"));
        SKIFF_ASSIGN_OR_RETURN(float* rstd, st.norm_rstd.Ensure(block.num_dst, "layer norm"));
        SKIFF_RETURN_IF_ERROR(LayerNormForward(block.num_dst, out_dim, out, Data(lp.gamma),
                                               Data(lp.gamma + 1), kLayerNormEps, normed, mean,
                                               rstd, s));
        act_in = normed;
      }
      SKIFF_ASSIGN_OR_RETURN(float* act, st.activated.Ensure(n, "activation"));
      if (config_.activation == "elu") {
        SKIFF_RETURN_IF_ERROR(EluForward(n, kEluAlpha, act_in, act, s));
      } else {
        SKIFF_RETURN_IF_ERROR(ReluForward(n, act_in, act, s));
      }
      h = act;
      h_dim = out_dim;
    }
    SKIFF_RETURN_IF_ERROR(stream_.Synchronize());
    ready_for_backward_ = true;
    return Status::Ok();
  }

  Status Backward(const float* grad_logits) override {
    if (!ready_for_backward_) {
      return Status::InvalidArgument("Model::Backward called without a preceding Forward");
    }
    ready_for_backward_ = false;
    cudaStream_t s = stream_.get();
    // Device gradients hold this batch only; they are added into the host gradients at the end.
    for (DeviceParam& p : params_) {
      SKIFF_ASSIGN_OR_RETURN(float* g, p.grad.Ensure(p.host.size(), "gradients"));
      SKIFF_CUDA_RETURN(cudaMemsetAsync(g, 0, sizeof(float) * p.host.size(), s));
    }
    const int last_layer = config_.num_layers - 1;
    const int64_t num_seeds = blocks_[static_cast<size_t>(last_layer)].num_dst;
    SKIFF_ASSIGN_OR_RETURN(float* grad_out_dev,
                           grad_logits_.Ensure(num_seeds * config_.num_classes, "logit grads"));
    SKIFF_CUDA_RETURN(cudaMemcpyAsync(grad_out_dev, grad_logits,
                                      sizeof(float) * num_seeds * config_.num_classes,
                                      cudaMemcpyHostToDevice, s));
    const float* grad_out = grad_out_dev;
    for (int l = last_layer; l >= 0; --l) {
      const DeviceBlock& block = blocks_[static_cast<size_t>(l)];
      const LayerParams& lp = layers_[static_cast<size_t>(l)];
      LayerBuffers& st = buffers_[static_cast<size_t>(l)];
      if (l == 0) {
        SKIFF_RETURN_IF_ERROR(LayerBackward(0, grad_out, nullptr));
        break;
      }
      const int64_t n = block.num_src * lp.in_dim;
      SKIFF_ASSIGN_OR_RETURN(float* grad_in, st.grad_input.Ensure(n, "input grads"));
      SKIFF_RETURN_IF_ERROR(LayerBackward(l, grad_out, grad_in));
      if (training_ && InputDropout(l) > 0.0f) {
        SKIFF_RETURN_IF_ERROR(DropoutBackward(n, InputDropout(l), LayerSeed(dropout_seed_, l, 0),
                                              grad_in, grad_in, s));
      }
      LayerBuffers& prev = buffers_[static_cast<size_t>(l - 1)];
      const LayerParams& prev_lp = layers_[static_cast<size_t>(l - 1)];
      const int64_t prev_rows = block.num_src;
      const int64_t prev_dim = lp.in_dim;
      if (config_.activation == "elu") {
        const float* act_in =
            prev_lp.gamma != kNone ? prev.normed.get() : prev.pre_activation.get();
        SKIFF_RETURN_IF_ERROR(EluBackward(n, kEluAlpha, act_in, grad_in, grad_in, s));
      } else {
        SKIFF_RETURN_IF_ERROR(ReluBackward(n, prev.activated.get(), grad_in, grad_in, s));
      }
      if (prev_lp.gamma != kNone) {
        SKIFF_ASSIGN_OR_RETURN(float* grad_pre, prev.grad_pre_activation.Ensure(n, "norm grads"));
        SKIFF_RETURN_IF_ERROR(LayerNormBackward(prev_rows, prev_dim, prev.pre_activation.get(),
                                                Data(prev_lp.gamma), prev.norm_mean.get(),
                                                prev.norm_rstd.get(), grad_in, grad_pre,
                                                Grad(prev_lp.gamma), Grad(prev_lp.gamma + 1), s));
        grad_out = grad_pre;
      } else {
        grad_out = grad_in;
      }
    }
    // Download this batch's gradients and accumulate them into the host master gradients.
    int64_t total = 0;
    for (const DeviceParam& p : params_) total += p.host.size();
    host_grad_.resize(static_cast<size_t>(total));
    int64_t offset = 0;
    for (const DeviceParam& p : params_) {
      SKIFF_CUDA_RETURN(cudaMemcpyAsync(host_grad_.data() + offset, p.grad.get(),
                                        sizeof(float) * p.host.size(), cudaMemcpyDeviceToHost, s));
      offset += p.host.size();
    }
    SKIFF_RETURN_IF_ERROR(stream_.Synchronize());
    offset = 0;
    for (const DeviceParam& p : params_) {
      for (int64_t i = 0; i < p.host.size(); ++i) p.host.grad[i] += host_grad_[offset + i];
      offset += p.host.size();
    }
    return Status::Ok();
  }

  std::vector<model::Parameter> Parameters() override { return host_->Parameters(); }

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  struct LayerParams {
    size_t first = 0;      // index of the layer's first parameter
    size_t gamma = kNone;  // LayerNorm gain (beta follows), or kNone
    int64_t in_dim = 0, heads = 1, per_head = 0;
    int64_t out_dim() const { return heads * per_head; }
  };

  float* Data(size_t i) { return params_[i].data.get(); }
  float* Grad(size_t i) { return params_[i].grad.get(); }

  float InputDropout(int l) const {
    return l == 0 && config_.input_dropout >= 0.0f ? config_.input_dropout : config_.dropout;
  }

  // Uploads block l, augmented as its layer kind needs (see the file comment).
  Status UploadBlock(int l, const train::Block& b) {
    DeviceBlock& db = blocks_[static_cast<size_t>(l)];
    db.num_dst = b.num_dst;
    db.num_src = b.num_src;
    const int64_t* indptr = b.indptr.data();
    const int32_t* indices = b.indices.data();
    const float* weights = nullptr;
    db.nnz = b.num_edges();
    if (config_.kind != ModelKind::kSage) {
      // Self-loop first in every row (GAT: as the CPU layer; GCN: carries the self weight).
      std::vector<float> edge_w, self_w;
      if (config_.kind == ModelKind::kGcn) {
        edge_w.resize(static_cast<size_t>(db.nnz));
        self_w.resize(static_cast<size_t>(db.num_dst));
        cpu::GcnEdgeWeights(b.num_dst, b.num_src, indptr, indices, b.src_degree_or_null(),
                            edge_w.data(), self_w.data());
      }
      aug_indptr_.resize(static_cast<size_t>(b.num_dst + 1));
      aug_indices_.resize(static_cast<size_t>(db.nnz + b.num_dst));
      aug_weight_.resize(config_.kind == ModelKind::kGcn ? aug_indices_.size() : 0);
      aug_indptr_[0] = 0;
      int64_t pos = 0;
      for (int64_t d = 0; d < b.num_dst; ++d) {
        if (!aug_weight_.empty()) aug_weight_[static_cast<size_t>(pos)] = self_w[d];
        aug_indices_[static_cast<size_t>(pos++)] = static_cast<int32_t>(d);
        for (int64_t e = indptr[d]; e < indptr[d + 1]; ++e) {
          if (!aug_weight_.empty()) aug_weight_[static_cast<size_t>(pos)] = edge_w[e];
          aug_indices_[static_cast<size_t>(pos++)] = indices[e];
        }
        aug_indptr_[static_cast<size_t>(d + 1)] = pos;
      }
      indptr = aug_indptr_.data();
      indices = aug_indices_.data();
      weights = aug_weight_.empty() ? nullptr : aug_weight_.data();
      db.nnz = pos;
    }
    cudaStream_t s = stream_.get();
    SKIFF_ASSIGN_OR_RETURN(int64_t * ip, db.indptr.Ensure(db.num_dst + 1, "block indptr"));
    SKIFF_ASSIGN_OR_RETURN(int32_t * ix, db.indices.Ensure(db.nnz, "block indices"));
    SKIFF_CUDA_RETURN(
        cudaMemcpyAsync(ip, indptr, sizeof(int64_t) * (db.num_dst + 1), cudaMemcpyHostToDevice, s));
    if (db.nnz > 0) {
      SKIFF_CUDA_RETURN(
          cudaMemcpyAsync(ix, indices, sizeof(int32_t) * db.nnz, cudaMemcpyHostToDevice, s));
    }
    if (weights != nullptr && db.nnz > 0) {
      SKIFF_ASSIGN_OR_RETURN(float* w, db.edge_weight.Ensure(db.nnz, "edge weights"));
      SKIFF_CUDA_RETURN(
          cudaMemcpyAsync(w, weights, sizeof(float) * db.nnz, cudaMemcpyHostToDevice, s));
    }
    // The host staging vectors are reused by the next block: wait for the copies.
    return stream_.Synchronize();
  }

  Status Mm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
            const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    if (m == 0 || n == 0) return Status::Ok();
    return Gemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc, cublas_, GemmPrecision::kFp32,
                stream_.get());
  }

  Status LayerForward(int l, const float* x_src, bool training, uint64_t seed, float* out) {
    const DeviceBlock& b = blocks_[static_cast<size_t>(l)];
    const LayerParams& lp = layers_[static_cast<size_t>(l)];
    LayerBuffers& st = buffers_[static_cast<size_t>(l)];
    cudaStream_t s = stream_.get();
    const int64_t nd = b.num_dst, ns = b.num_src, nnz = b.nnz, in = lp.in_dim, od = lp.out_dim();
    st.x_src = x_src;
    switch (config_.kind) {
      case ModelKind::kSage: {
        float* w_self = Data(lp.first);
        float* w_neigh = Data(lp.first + 1);
        st.project_first = ns * in * od + nnz * od < nnz * in + nd * in * od;
        if (st.project_first) {
          SKIFF_ASSIGN_OR_RETURN(float* proj, st.projected.Ensure(ns * od, "projection"));
          SKIFF_RETURN_IF_ERROR(
              Mm(false, false, ns, od, in, x_src, in, w_neigh, od, 0.0f, proj, od));
          SKIFF_RETURN_IF_ERROR(CsrAggregateForward(nd, ns, b.indptr.get(), b.indices.get(),
                                                    nullptr, AggregateMode::kMean, proj, od, out,
                                                    s));
        } else {
          SKIFF_ASSIGN_OR_RETURN(float* agg, st.aggregated.Ensure(nd * in, "aggregation"));
          SKIFF_RETURN_IF_ERROR(CsrAggregateForward(nd, ns, b.indptr.get(), b.indices.get(),
                                                    nullptr, AggregateMode::kMean, x_src, in, agg,
                                                    s));
          SKIFF_RETURN_IF_ERROR(Mm(false, false, nd, od, in, agg, in, w_neigh, od, 0.0f, out, od));
        }
        SKIFF_RETURN_IF_ERROR(Mm(false, false, nd, od, in, x_src, in, w_self, od, 1.0f, out, od));
        return BiasAdd(nd, od, Data(lp.first + 2), out, s);
      }
      case ModelKind::kGcn: {
        // nnz counts the self-loops; the cost model matches the CPU layer's (nnz + nd).
        float* w = Data(lp.first);
        st.project_first = ns * in * od + nnz * od < nnz * in + nd * in * od;
        if (st.project_first) {
          SKIFF_ASSIGN_OR_RETURN(float* proj, st.projected.Ensure(ns * od, "projection"));
          SKIFF_RETURN_IF_ERROR(Mm(false, false, ns, od, in, x_src, in, w, od, 0.0f, proj, od));
          SKIFF_RETURN_IF_ERROR(CsrAggregateForward(nd, ns, b.indptr.get(), b.indices.get(),
                                                    b.edge_weight.get(), AggregateMode::kWeighted,
                                                    proj, od, out, s));
        } else {
          SKIFF_ASSIGN_OR_RETURN(float* agg, st.aggregated.Ensure(nd * in, "aggregation"));
          SKIFF_RETURN_IF_ERROR(CsrAggregateForward(nd, ns, b.indptr.get(), b.indices.get(),
                                                    b.edge_weight.get(), AggregateMode::kWeighted,
                                                    x_src, in, agg, s));
          SKIFF_RETURN_IF_ERROR(Mm(false, false, nd, od, in, agg, in, w, od, 0.0f, out, od));
        }
        return BiasAdd(nd, od, Data(lp.first + 1), out, s);
      }
      case ModelKind::kGat: {
        const int64_t heads = lp.heads, ph = lp.per_head;
        SKIFF_ASSIGN_OR_RETURN(float* z, st.z.Ensure(ns * od, "gat z"));
        SKIFF_RETURN_IF_ERROR(
            Mm(false, false, ns, od, in, x_src, in, Data(lp.first), od, 0.0f, z, od));
        SKIFF_ASSIGN_OR_RETURN(float* el, st.el.Ensure(ns * heads, "gat el"));
        SKIFF_ASSIGN_OR_RETURN(float* er, st.er.Ensure(nd * heads, "gat er"));
        SKIFF_RETURN_IF_ERROR(AttentionDot(ns, heads, ph, z, Data(lp.first + 1), el, s));
        SKIFF_RETURN_IF_ERROR(AttentionDot(nd, heads, ph, z, Data(lp.first + 2), er, s));
        SKIFF_ASSIGN_OR_RETURN(float* alpha, st.alpha.Ensure(nnz * heads, "gat alpha"));
        SKIFF_RETURN_IF_ERROR(GatEdgeSoftmaxForward(nd, b.indptr.get(), b.indices.get(), heads, el,
                                                    er, kNegativeSlope, alpha, s));
        st.attn_dropout_active = training && config_.dropout > 0.0f;
        attn_seed_[static_cast<size_t>(l)] = seed;
        const float* alpha_used = alpha;
        if (st.attn_dropout_active) {
          SKIFF_ASSIGN_OR_RETURN(float* dropped,
                                 st.alpha_dropped.Ensure(nnz * heads, "gat dropout"));
          SKIFF_RETURN_IF_ERROR(
              DropoutForward(nnz * heads, config_.dropout, seed, alpha, dropped, s));
          alpha_used = dropped;
        }
        SKIFF_RETURN_IF_ERROR(GatAggregateForward(nd, b.indptr.get(), b.indices.get(), heads, ph,
                                                  alpha_used, z, out, s));
        return BiasAdd(nd, od, Data(lp.first + 3), out, s);
      }
    }
    return Status::Internal("CUDA model: unknown layer kind");
  }

  Status LayerBackward(int l, const float* grad_out, float* grad_x_src) {
    const DeviceBlock& b = blocks_[static_cast<size_t>(l)];
    const LayerParams& lp = layers_[static_cast<size_t>(l)];
    LayerBuffers& st = buffers_[static_cast<size_t>(l)];
    cudaStream_t s = stream_.get();
    const int64_t nd = b.num_dst, ns = b.num_src, nnz = b.nnz, in = lp.in_dim, od = lp.out_dim();
    const float* x_src = st.x_src;
    switch (config_.kind) {
      case ModelKind::kSage:
      case ModelKind::kGcn: {
        const bool sage = config_.kind == ModelKind::kSage;
        const size_t w_neigh = sage ? lp.first + 1 : lp.first;
        const size_t bias = sage ? lp.first + 2 : lp.first + 1;
        const AggregateMode mode = sage ? AggregateMode::kMean : AggregateMode::kWeighted;
        const float* ew = sage ? nullptr : b.edge_weight.get();
        SKIFF_RETURN_IF_ERROR(BiasGrad(nd, od, grad_out, Grad(bias), s));
        if (sage) {
          SKIFF_RETURN_IF_ERROR(
              Mm(true, false, in, od, nd, x_src, in, grad_out, od, 1.0f, Grad(lp.first), od));
        }
        if (st.project_first) {
          SKIFF_ASSIGN_OR_RETURN(float* gp, st.grad_projected.Ensure(ns * od, "projection grads"));
          SKIFF_RETURN_IF_ERROR(CsrAggregateBackward(nd, ns, b.indptr.get(), b.indices.get(), ew,
                                                     mode, grad_out, od, gp, s));
          SKIFF_RETURN_IF_ERROR(
              Mm(true, false, in, od, ns, x_src, in, gp, od, 1.0f, Grad(w_neigh), od));
          if (grad_x_src != nullptr) {
            SKIFF_RETURN_IF_ERROR(
                Mm(false, true, ns, in, od, gp, od, Data(w_neigh), od, 0.0f, grad_x_src, in));
          }
        } else {
          SKIFF_RETURN_IF_ERROR(Mm(true, false, in, od, nd, st.aggregated.get(), in, grad_out, od,
                                   1.0f, Grad(w_neigh), od));
          if (grad_x_src != nullptr) {
            SKIFF_ASSIGN_OR_RETURN(float* ga,
                                   st.grad_aggregated.Ensure(nd * in, "aggregation grads"));
            SKIFF_RETURN_IF_ERROR(
                Mm(false, true, nd, in, od, grad_out, od, Data(w_neigh), od, 0.0f, ga, in));
            SKIFF_RETURN_IF_ERROR(CsrAggregateBackward(nd, ns, b.indptr.get(), b.indices.get(), ew,
                                                       mode, ga, in, grad_x_src, s));
          }
        }
        if (sage && grad_x_src != nullptr) {
          SKIFF_RETURN_IF_ERROR(
              Mm(false, true, nd, in, od, grad_out, od, Data(lp.first), od, 1.0f, grad_x_src, in));
        }
        return Status::Ok();
      }
      case ModelKind::kGat: {
        const int64_t heads = lp.heads, ph = lp.per_head;
        SKIFF_RETURN_IF_ERROR(BiasGrad(nd, od, grad_out, Grad(lp.first + 3), s));
        const float* alpha_used = st.attn_dropout_active ? st.alpha_dropped.get() : st.alpha.get();
        SKIFF_ASSIGN_OR_RETURN(float* grad_z, st.grad_z.Ensure(ns * od, "gat grads"));
        SKIFF_ASSIGN_OR_RETURN(float* grad_alpha, st.grad_alpha.Ensure(nnz * heads, "gat grads"));
        SKIFF_RETURN_IF_ERROR(GatAggregateBackward(nd, ns, b.indptr.get(), b.indices.get(), heads,
                                                   ph, alpha_used, st.z.get(), grad_out, grad_z,
                                                   grad_alpha, s));
        if (st.attn_dropout_active) {
          SKIFF_ASSIGN_OR_RETURN(float* gin, st.grad_alpha_in.Ensure(nnz * heads, "gat grads"));
          SKIFF_RETURN_IF_ERROR(DropoutBackward(nnz * heads, config_.dropout,
                                                attn_seed_[static_cast<size_t>(l)], grad_alpha, gin,
                                                s));
          grad_alpha = gin;
        }
        SKIFF_ASSIGN_OR_RETURN(float* grad_el, st.grad_el.Ensure(ns * heads, "gat grads"));
        SKIFF_ASSIGN_OR_RETURN(float* grad_er, st.grad_er.Ensure(nd * heads, "gat grads"));
        SKIFF_RETURN_IF_ERROR(GatEdgeSoftmaxBackward(
            nd, ns, b.indptr.get(), b.indices.get(), heads, st.el.get(), st.er.get(),
            kNegativeSlope, st.alpha.get(), grad_alpha, grad_el, grad_er, s));
        SKIFF_RETURN_IF_ERROR(AttentionDotBackward(ns, heads, ph, st.z.get(), Data(lp.first + 1),
                                                   grad_el, grad_z, Grad(lp.first + 1), s));
        SKIFF_RETURN_IF_ERROR(AttentionDotBackward(nd, heads, ph, st.z.get(), Data(lp.first + 2),
                                                   grad_er, grad_z, Grad(lp.first + 2), s));
        SKIFF_RETURN_IF_ERROR(
            Mm(true, false, in, od, ns, x_src, in, grad_z, od, 1.0f, Grad(lp.first), od));
        if (grad_x_src != nullptr) {
          SKIFF_RETURN_IF_ERROR(
              Mm(false, true, ns, in, od, grad_z, od, Data(lp.first), od, 0.0f, grad_x_src, in));
        }
        return Status::Ok();
      }
    }
    return Status::Internal("CUDA model: unknown layer kind");
  }

  std::unique_ptr<model::Model> host_;  // owns the master parameters and gradients
  CudaStream stream_;
  CublasHandle cublas_;
  std::vector<DeviceParam> params_;
  std::vector<LayerParams> layers_;
  std::vector<DeviceBlock> blocks_;
  std::vector<LayerBuffers> buffers_;
  std::vector<uint64_t> attn_seed_;  // GAT attention dropout seed per layer
  DeviceVec<float> x_, grad_logits_;
  std::vector<int64_t> aug_indptr_;
  std::vector<int32_t> aug_indices_;
  std::vector<float> aug_weight_, host_grad_;
  bool training_ = false;
  uint64_t dropout_seed_ = 0;
  bool ready_for_backward_ = false;
};

}  // namespace

Result<std::unique_ptr<model::Model>> CreateCudaModel(std::unique_ptr<model::Model> host_model) {
  SKIFF_CHECK(host_model != nullptr);
  SKIFF_RETURN_IF_ERROR(FirstDevice().status());
  SKIFF_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  SKIFF_ASSIGN_OR_RETURN(CublasHandle cublas, CublasHandle::Create());
  return std::unique_ptr<model::Model>(
      std::make_unique<CudaModel>(std::move(host_model), std::move(stream), std::move(cublas)));
}

}  // namespace skiff::cuda
