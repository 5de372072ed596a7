// The CUDA model (see cuda_model.h): the layer code of src/model/{sage,gcn,gat}_layer.cpp and the
// layer stack of src/model/cpu_model.cpp, call for call, on kernels/cuda, with the batch staged by
// BatchStaging and the parameters, gradients and optimiser moments in device memory.
#include "src/model/cuda/cuda_model.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/cuda/cross_entropy.cuh"
#include "kernels/cuda/csr_aggregate.cuh"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/gat.cuh"
#include "kernels/cuda/gather.cuh"
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/layer_norm.cuh"
#include "kernels/cuda/optimizer.cuh"
#include "kernels/cuda/pinned_buffer.cuh"
#include "kernels/cuda/stream.cuh"
#include "skiff/log.h"
#include "skiff/model/row_slots.h"
#include "src/model/cuda/batch_staging.h"
#include "src/model/cuda/device_buffer.h"
#include "src/model/cuda/device_sampler.h"
#include "src/model/layer.h"

namespace skiff::cuda {
namespace {

using model::ModelKind;

constexpr float kLayerNormEps = 1e-5f;  // as src/model/cpu_model.cpp
constexpr float kEluAlpha = 1.0f;
constexpr float kNegativeSlope = 0.2f;  // as src/model/gat_layer.cpp
// HoldFeatures' default: what the device has free less this share of it (at least 2 GiB), left for
// the model's activations, cuBLAS workspaces and the staged batches.
constexpr uint64_t kMinDeviceMargin = uint64_t{2} << 30;
constexpr uint64_t kDeviceMarginDivisor = 8;
// The pinned buffer HoldFeatures uploads the features through, and HoldGraph the graph
// (pipeline::kDeviceUploadBytes, which the memory plan counts; one at a time). Small: the upload is
// bound by reading the features, and out of core every MiB of it is a MiB less for partitions.
constexpr uint64_t kUploadChunkBytes = uint64_t{2} << 20;
// A row cache smaller than this is not worth its device memory: batches upload every row.
constexpr int64_t kMinCacheRows = 1024;

// Why the device sampler cannot sample batches of `num_layers` layers with fanouts up to
// `max_fanout`, or empty when it can: HoldGraph's rule, which PlacementFor predicts.
std::string SamplerDeclines(int num_layers, int max_fanout) {
  if (max_fanout > kMaxDeviceSampleLength) {
    return "fanout " + std::to_string(max_fanout) + " exceeds the device sampler's " +
           std::to_string(kMaxDeviceSampleLength);
  }
  if (num_layers > kMaxSampleLayers) {
    return std::to_string(num_layers) + " layers exceed the device sampler's " +
           std::to_string(kMaxSampleLayers);
  }
  return "";
}

uint64_t LayerSeed(uint64_t seed, int layer, int stream) {
  return cpu::DropoutHash(seed, static_cast<uint64_t>(2 * layer + stream));
}

#define SKIFF_CUDA_RETURN(expr) SKIFF_RETURN_IF_ERROR(FromCudaError(static_cast<int>(expr), #expr))

struct LayerBuffers {
  // Layer-internal.
  DeviceBuffer<float> aggregated, projected, grad_aggregated, grad_projected;
  DeviceBuffer<float> z, el, er, alpha, alpha_dropped, grad_z, grad_alpha, grad_alpha_in, grad_el,
      grad_er;
  bool project_first = false;
  bool attn_dropout_active = false;
  const float* x_src = nullptr;  // the layer's (dropped-out) input, device
  // Layer stack.
  DeviceBuffer<float> input_dropped, pre_activation, normed, norm_mean, norm_rstd, activated,
      grad_input, grad_pre_activation;
};

// Where the current copy of some state is: the host tensors or device memory.
enum class Owner { kHost, kDevice };

class CudaModel final : public model::Model {
 public:
  CudaModel(std::unique_ptr<model::Model> host, int device, CudaStream stream, CublasHandle cublas,
            BatchStaging staging, GemmPrecision precision)
      : Model(host->config()),
        host_(std::move(host)),
        stream_(std::move(stream)),
        cublas_(std::move(cublas)),
        staging_(std::move(staging)),
        precision_(precision),
        device_(device) {
    host_params_ = host_->Parameters();
    offsets_.push_back(0);
    for (const model::Parameter& p : host_params_) offsets_.push_back(offsets_.back() + p.size());
    buffers_ = std::vector<LayerBuffers>(static_cast<size_t>(config_.num_layers));
    attn_seed_.assign(static_cast<size_t>(config_.num_layers), 0);
    BuildLayout();
  }

  // Device memory for the parameters, gradients and loss statistics.
  Status Init() {
    SKIFF_RETURN_IF_ERROR(UseDevice());
    const int64_t total = offsets_.back();
    SKIFF_RETURN_IF_ERROR(params_dev_.Ensure(total, "parameters").status());
    SKIFF_RETURN_IF_ERROR(grads_dev_.Ensure(total, "gradients").status());
    SKIFF_RETURN_IF_ERROR(step_sum_dev_.Ensure(total, "the step's gradient sum").status());
    SKIFF_CUDA_RETURN(
        cudaMemsetAsync(step_sum_dev_.get(), 0, sizeof(float) * total, stream_.get()));
    SKIFF_RETURN_IF_ERROR(step_stats_.Ensure(1, "loss statistics").status());
    SKIFF_ASSIGN_OR_RETURN(LossSums * sums, sums_.Ensure(1, "loss statistics"));
    SKIFF_CUDA_RETURN(cudaMemsetAsync(sums, 0, sizeof(LossSums), stream_.get()));
    SKIFF_ASSIGN_OR_RETURN(sums_host_, PinnedBuffer::Create(sizeof(LossSums)));
    return stream_.Synchronize();
  }

  std::string DeviceDescription() const override {
    return std::string("CUDA, ") + (precision_ == GemmPrecision::kTf32 ? "TF32" : "FP32") +
           " matrix products" + (holds_features_ ? ", features in device memory" : "") +
           (row_slots_ != nullptr
                ? ", a device cache of " + std::to_string(row_slots_->capacity()) + " feature rows"
                : "") +
           (sampler_ != nullptr ? ", sampling on the device" : "");
  }

  ~CudaModel() override {
    // The members free their device memory, streams and handle on the model's device.
    (void)UseDevice();
    if (row_slots_ == nullptr || row_slots_->hits() + row_slots_->misses() == 0) return;
    const uint64_t hits = row_slots_->hits(), total = hits + row_slots_->misses();
    LogInfo("device row cache: " + std::to_string(hits) + " of " + std::to_string(total) +
            " input rows found on the device (" + std::to_string(100 * hits / total) +
            "%), the rest uploaded");
  }

  Status Forward(const sampler::MiniBatch& batch, const float* x, bool training,
                 uint64_t dropout_seed, std::vector<float>* logits,
                 std::vector<float>* embeddings) override {
    SKIFF_RETURN_IF_ERROR(UseDevice());
    ready_for_backward_ = false;
    SKIFF_CHECK(logits != nullptr);
    SKIFF_RETURN_IF_ERROR(Prepare(batch, x));
    return ForwardPrepared(training, dropout_seed, logits, embeddings);
  }

  Status ForwardDeviceSampled(const sampler::MiniBatch& batch, const model::DeviceSampling& sample,
                              bool training, uint64_t dropout_seed, std::vector<float>* logits,
                              std::vector<float>* embeddings) override {
    SKIFF_RETURN_IF_ERROR(UseDevice());
    ready_for_backward_ = false;
    SKIFF_CHECK(logits != nullptr);
    SKIFF_RETURN_IF_ERROR(Prepare(batch, nullptr, &sample));
    return ForwardPrepared(training, dropout_seed, logits, embeddings);
  }

  // The host-facing Forward of the prepared batch: logits (and embeddings) to the host.
  Status ForwardPrepared(bool training, uint64_t dropout_seed, std::vector<float>* logits,
                         std::vector<float>* embeddings) {
    SKIFF_ASSIGN_OR_RETURN(const float* out, RunForward(training, dropout_seed, embeddings));
    const int64_t rows = staged_.num_seeds;
    logits->resize(static_cast<size_t>(rows * config_.num_classes));
    SKIFF_CUDA_RETURN(cudaMemcpyAsync(logits->data(), out,
                                      sizeof(float) * rows * config_.num_classes,
                                      cudaMemcpyDeviceToHost, stream_.get()));
    SKIFF_RETURN_IF_ERROR(stream_.Synchronize());
    SKIFF_RETURN_IF_ERROR(BatchConsumed());
    ready_for_backward_ = true;
    return Status::Ok();
  }

  // Host-facing Backward: this batch's gradients are added into the host gradients (the
  // Parameter::grad contract); TrainStep keeps them on the device instead.
  Status Backward(const float* grad_logits) override {
    SKIFF_RETURN_IF_ERROR(UseDevice());
    if (!ready_for_backward_) {
      return Status::InvalidArgument("Model::Backward called without a preceding Forward");
    }
    ready_for_backward_ = false;
    cudaStream_t s = stream_.get();
    const int64_t n = staged_.num_seeds * config_.num_classes;
    SKIFF_ASSIGN_OR_RETURN(float* grad_out, grad_logits_.Ensure(n, "logit gradients"));
    SKIFF_CUDA_RETURN(
        cudaMemcpyAsync(grad_out, grad_logits, sizeof(float) * n, cudaMemcpyHostToDevice, s));
    SKIFF_RETURN_IF_ERROR(ZeroDeviceGrads());
    SKIFF_RETURN_IF_ERROR(RunBackward(grad_out));
    SKIFF_RETURN_IF_ERROR(BatchConsumed());
    return GradientsToHost(/*add=*/true);
  }

  Status TrainStep(const model::BatchInput& input, uint64_t dropout_seed,
                   model::Optimizer& optimizer) override {
    SKIFF_RETURN_IF_ERROR(BatchGradients(input, dropout_seed));
    SKIFF_RETURN_IF_ERROR(optimizer.Step());  // ApplyUpdate, on the stream
    return BatchConsumed();
  }

  // The host contract of a step over several batches summed on the host (data-parallel ranks):
  // the batch's gradients computed on the device, its loss in the device totals, and the
  // gradients copied into the host tensors, which the next update takes.
  Status ComputeGradients(const model::BatchInput& input, uint64_t dropout_seed) override {
    SKIFF_RETURN_IF_ERROR(BatchGradients(input, dropout_seed));
    SKIFF_RETURN_IF_ERROR(GradientsToHost(/*add=*/false));
    return BatchConsumed();
  }

  // The step sum stays on the device: sum = g0, then sum += g (cuBLAS axpy with alpha 1, an exact
  // float addition per element, as GradientSum adds on the host).
  Status AccumulateGradients(const model::BatchInput& input, uint64_t dropout_seed) override {
    SKIFF_RETURN_IF_ERROR(BatchGradients(input, dropout_seed));
    const int64_t total = offsets_.back();
    if (step_empty_) {
      SKIFF_CUDA_RETURN(cudaMemcpyAsync(step_sum_dev_.get(), grads_dev_.get(),
                                        sizeof(float) * total, cudaMemcpyDeviceToDevice,
                                        stream_.get()));
    } else {
      SKIFF_RETURN_IF_ERROR(BindCublas());
      const float one = 1.0f;
      SKIFF_RETURN_IF_ERROR(
          FromCublasStatus(cublasSaxpy(cublas_.get(), static_cast<int>(total), &one,
                                       grads_dev_.get(), 1, step_sum_dev_.get(), 1),
                           "cublasSaxpy"));
    }
    step_empty_ = false;
    return BatchConsumed();
  }

  Status LoadStepGradients(float scale) override {
    SKIFF_RETURN_IF_ERROR(UseDevice());
    const int64_t total = offsets_.back();
    cudaStream_t s = stream_.get();
    SKIFF_CUDA_RETURN(cudaMemcpyAsync(grads_dev_.get(), step_sum_dev_.get(), sizeof(float) * total,
                                      cudaMemcpyDeviceToDevice, s));
    if (scale != 1.0f) {
      SKIFF_RETURN_IF_ERROR(BindCublas());
      SKIFF_RETURN_IF_ERROR(FromCublasStatus(
          cublasSscal(cublas_.get(), static_cast<int>(total), &scale, grads_dev_.get(), 1),
          "cublasSscal"));
    }
    SKIFF_CUDA_RETURN(cudaMemsetAsync(step_sum_dev_.get(), 0, sizeof(float) * total, s));
    host_grads_current_ = false;
    step_empty_ = true;
    return Status::Ok();
  }

  bool optimizer_state_on_device() const override { return true; }

  // For a sum across replicas (replicas.cpp): the step sum's device memory and its stream.
  StepSumView step_sum() {
    return {.device = device_,
            .stream = stream_.get(),
            .sum = step_sum_dev_.get(),
            .count = static_cast<size_t>(offsets_.back())};
  }

  Status EvalStep(const model::BatchInput& input) override {
    SKIFF_RETURN_IF_ERROR(UseDevice());
    ready_for_backward_ = false;
    SKIFF_CHECK(input.batch != nullptr);
    SKIFF_RETURN_IF_ERROR(CheckInput(input));
    SKIFF_RETURN_IF_ERROR(Prepare(*input.batch, input.x, input.sample));
    SKIFF_ASSIGN_OR_RETURN(const float* out, RunForward(false, 0, nullptr));
    SKIFF_RETURN_IF_ERROR(Loss(out).status());
    return BatchConsumed();
  }

  Result<model::LossTotals> TakeLossTotals() override {
    SKIFF_RETURN_IF_ERROR(UseDevice());
    cudaStream_t s = stream_.get();
    SKIFF_CUDA_RETURN(cudaMemcpyAsync(sums_host_.data(), sums_.get(), sizeof(LossSums),
                                      cudaMemcpyDeviceToHost, s));
    SKIFF_CUDA_RETURN(cudaMemsetAsync(sums_.get(), 0, sizeof(LossSums), s));
    SKIFF_RETURN_IF_ERROR(stream_.Synchronize());
    LossSums sums;
    std::memcpy(&sums, sums_host_.data(), sizeof(sums));
    return model::LossTotals{
        .loss_sum = sums.loss_sum, .labelled = sums.labelled_rows, .correct = sums.correct};
  }

  // The device memory HoldFeatures and HoldGraph may still take (defined below).
  static Result<uint64_t> DeviceMemoryFor(uint64_t device_bytes, uint64_t held);
  Result<bool> HoldFeatures(const sampler::FeatureSource& features, uint64_t device_bytes) override;
  bool holds_features() const override { return holds_features_; }
  // HoldFeatures when the features (`bytes`) exceed `limit`: a row cache within `limit` when one
  // of kMinCacheRows fits (RowSlots needs fewer than 2^31 nodes). Returns false (not held).
  Result<bool> CacheRows(int64_t rows, int64_t dim, uint64_t bytes, uint64_t limit);
  Result<bool> HoldGraph(const sampler::CsrSource& graph, uint64_t device_bytes,
                         int max_fanout) override;
  bool samples_on_device() const override { return sampler_ != nullptr; }

  Status ApplyUpdate(const model::OptimizerConfig& config, int64_t step,
                     std::vector<std::vector<float>>& state) override;
  Status ReadOptimizerState(std::vector<std::vector<float>>& state) override;

  std::vector<model::Parameter> Parameters() override {
    // The caller may read or change the host tensors: bring them up to date, and take them back
    // before the device next uses the parameters.
    if (param_owner_ == Owner::kDevice) {
      // No Status to return here: a failure is reported by the model's next call.
      Status st = UseDevice();
      if (st.ok()) st = DownloadParams();
      if (!st.ok()) deferred_error_ = st;
    }
    param_owner_ = Owner::kHost;
    return host_params_;
  }

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  struct LayerParams {
    size_t first = 0;      // index of the layer's first parameter
    size_t gamma = kNone;  // LayerNorm gain (beta follows), or kNone
    int64_t in_dim = 0, heads = 1, per_head = 0;
    int64_t out_dim() const { return heads * per_head; }
  };

  // Parameter layout per layer, in the CPU model's Parameters() order.
  void BuildLayout() {
    size_t next = 0;
    for (int l = 0; l < config_.num_layers; ++l) {
      const bool last = l == config_.num_layers - 1;
      LayerParams lp;
      lp.first = next;
      lp.heads = config_.kind == ModelKind::kGat && !last ? config_.heads : 1;
      lp.per_head = last ? config_.num_classes : config_.hidden_dim;
      lp.in_dim = l == 0 ? config_.in_dim : layers_.back().out_dim();
      next += config_.kind == ModelKind::kSage ? 3 : config_.kind == ModelKind::kGcn ? 2 : 4;
      if (!last && config_.norm == model::Norm::kLayer) {
        lp.gamma = next;
        next += 2;
      }
      layers_.push_back(lp);
    }
    SKIFF_CHECK(next == host_params_.size());
  }

  float* Data(size_t i) { return params_dev_.get() + offsets_[i]; }
  float* Grad(size_t i) { return grads_dev_.get() + offsets_[i]; }

  float InputDropout(int l) const {
    return l == 0 && config_.input_dropout >= 0.0f ? config_.input_dropout : config_.dropout;
  }

  BlockAugment Augment() const {
    switch (config_.kind) {
      case ModelKind::kSage:
        return BlockAugment::kNone;
      case ModelKind::kGcn:
        return BlockAugment::kGcn;
      case ModelKind::kGat:
        return BlockAugment::kSelfLoop;
    }
    return BlockAugment::kNone;
  }

  // Makes the model's device current for this thread: every entry point's first call, so that
  // one thread can drive models on several devices (a replica group).
  Status UseDevice() const {
    SKIFF_CUDA_RETURN(cudaSetDevice(device_));
    return Status::Ok();
  }

  // Copies the device gradients into the host tensors (added to them with `add`, else replacing
  // them), waiting for the stream; the next update takes the host gradients.
  Status GradientsToHost(bool add) {
    host_grad_.resize(static_cast<size_t>(offsets_.back()));
    SKIFF_CUDA_RETURN(cudaMemcpyAsync(host_grad_.data(), grads_dev_.get(),
                                      sizeof(float) * host_grad_.size(), cudaMemcpyDeviceToHost,
                                      stream_.get()));
    SKIFF_RETURN_IF_ERROR(stream_.Synchronize());
    for (size_t i = 0; i < host_params_.size(); ++i) {
      const model::Parameter& p = host_params_[i];
      const float* g = host_grad_.data() + offsets_[i];
      for (int64_t j = 0; j < p.size(); ++j) p.grad[j] = add ? p.grad[j] + g[j] : g[j];
    }
    host_grads_current_ = true;
    return Status::Ok();
  }

  Status BindCublas() {
    return FromCublasStatus(cublasSetStream(cublas_.get(), stream_.get()), "cublasSetStream");
  }

  // Forward (training), the loss and this batch's gradients alone in grads_dev_, queued; the
  // caller ends with BatchConsumed().
  Status BatchGradients(const model::BatchInput& input, uint64_t dropout_seed) {
    SKIFF_RETURN_IF_ERROR(UseDevice());
    ready_for_backward_ = false;
    SKIFF_CHECK(input.batch != nullptr);
    SKIFF_RETURN_IF_ERROR(CheckInput(input));
    SKIFF_RETURN_IF_ERROR(Prepare(*input.batch, input.x, input.sample));
    SKIFF_ASSIGN_OR_RETURN(const float* out, RunForward(true, dropout_seed, nullptr));
    SKIFF_ASSIGN_OR_RETURN(float* grad_out, Loss(out));
    SKIFF_RETURN_IF_ERROR(ZeroDeviceGrads());
    SKIFF_RETURN_IF_ERROR(RunBackward(grad_out));
    host_grads_current_ = false;
    return Status::Ok();
  }

  Status CheckInput(const model::BatchInput& input) const {
    if (input.aggregated != nullptr) {
      return Status::Unavailable("the CUDA model does not take aggregated input");
    }
    return Status::Ok();
  }

  Status ZeroDeviceGrads() {
    SKIFF_CUDA_RETURN(
        cudaMemsetAsync(grads_dev_.get(), 0, sizeof(float) * offsets_.back(), stream_.get()));
    return Status::Ok();
  }

  Status UploadParams() {
    for (size_t i = 0; i < host_params_.size(); ++i) {
      const model::Parameter& p = host_params_[i];
      SKIFF_CUDA_RETURN(cudaMemcpyAsync(Data(i), p.data, sizeof(float) * p.size(),
                                        cudaMemcpyHostToDevice, stream_.get()));
    }
    return stream_.Synchronize();  // the host tensors may change as soon as this returns
  }

  Status DownloadParams() {
    for (size_t i = 0; i < host_params_.size(); ++i) {
      const model::Parameter& p = host_params_[i];
      SKIFF_CUDA_RETURN(cudaMemcpyAsync(p.data, Data(i), sizeof(float) * p.size(),
                                        cudaMemcpyDeviceToHost, stream_.get()));
    }
    return stream_.Synchronize();
  }

  Status EnsureParamsOnDevice() {
    if (param_owner_ == Owner::kDevice) return Status::Ok();
    SKIFF_RETURN_IF_ERROR(UploadParams());
    param_owner_ = Owner::kDevice;
    return Status::Ok();
  }

  // Validates and stages the batch, and puts its input rows at x_ (copied from `x`, or gathered
  // from the held features when `x` is null). With `sample`, the batch holds seeds only and is
  // sampled on the device first.
  Status Prepare(const sampler::MiniBatch& batch, const float* x,
                 const model::DeviceSampling* sample = nullptr) {
    if (!deferred_error_.ok()) return std::exchange(deferred_error_, Status::Ok());
    if (x == nullptr && !holds_features_) {
      return Status::InvalidArgument("CUDA model: no input features given, and none held");
    }
    if (x != nullptr && sample != nullptr) {
      return Status::InvalidArgument(
          "CUDA model: a batch sampled on the device takes no input rows");
    }
    cudaStream_t s = stream_.get();
    if (sample != nullptr) {
      SKIFF_RETURN_IF_ERROR(EnsureParamsOnDevice());
      SKIFF_RETURN_IF_ERROR(SampleOnDevice(batch, *sample));
    } else {
      SKIFF_RETURN_IF_ERROR(
          model::ValidateMiniBatch(config_, batch, x != nullptr ? x : features_dev_.get()));
      SKIFF_RETURN_IF_ERROR(EnsureParamsOnDevice());
      if (x != nullptr) {
        SKIFF_RETURN_IF_ERROR(StageWithRows(batch, x));
      } else {
        SKIFF_ASSIGN_OR_RETURN(staged_, staging_.Stage(batch, Augment(), /*input_ids=*/true, s));
      }
    }
    const Status placed = PlaceInput(x != nullptr);
    // Failing here, after the row cache's index took this batch, leaves it promising rows that
    // were never written: it starts over.
    if (!placed.ok() && x != nullptr && row_slots_ != nullptr) row_slots_->Clear();
    return placed;
  }

  // Puts the staged batch's input rows at x_: the rows uploaded with it (`uploaded`), or gathered
  // from the held features.
  Status PlaceInput(bool uploaded) {
    const int64_t rows = staged_.num_input;
    SKIFF_ASSIGN_OR_RETURN(float* x_dev, x_.Ensure(rows * config_.in_dim, "input features"));
    if (rows == 0) return Status::Ok();
    if (uploaded) return PlaceStagedRows(x_dev);
    return GatherRows(features_dev_.get(), config_.in_dim, staged_.input_ids, rows, x_dev,
                      stream_.get());
  }

  // Stages `batch` with the input rows the device lacks: with the row cache, those it misses (into
  // their slots); without it, or for a batch larger than the cache, all of them.
  Status StageWithRows(const sampler::MiniBatch& batch, const float* x) {
    RowUpload upload;
    upload.x = x;
    upload.dim = config_.in_dim;
    bool cached = false;
    if (row_slots_ != nullptr) {
      missing_.clear();
      SKIFF_ASSIGN_OR_RETURN(cached,
                             row_slots_->Assign(batch.input_nodes, &input_slots_, &missing_));
    }
    if (cached) {
      missing_slots_.resize(missing_.size());
      for (size_t k = 0; k < missing_.size(); ++k) {
        missing_slots_[k] = input_slots_[static_cast<size_t>(missing_[k])];
      }
      upload.positions = missing_;
      upload.slots = missing_slots_;
      upload.input_slots = input_slots_;
    } else {
      missing_.resize(batch.input_nodes.size());
      std::iota(missing_.begin(), missing_.end(), int64_t{0});
      upload.positions = missing_;
    }
    auto staged = staging_.Stage(batch, Augment(), /*input_ids=*/false, stream_.get(), &upload);
    if (!staged.ok()) {
      if (cached) row_slots_->Clear();  // the index counted on rows that were not uploaded
      return staged.status();
    }
    staged_ = std::move(staged).value();
    return Status::Ok();
  }

  // Puts the staged batch's input rows at `x_dev`: the uploaded rows into their cache slots, then
  // every input gathered from the cache; or, without the cache, the uploaded rows as they are. On
  // the compute stream, so a slot an earlier batch read is overwritten only after that batch.
  Status PlaceStagedRows(float* x_dev) {
    cudaStream_t s = stream_.get();
    const int64_t dim = config_.in_dim;
    if (staged_.input_slots != nullptr) {
      SKIFF_RETURN_IF_ERROR(
          ScatterRows(staged_.rows, dim, staged_.row_slots, staged_.num_rows, row_cache_.get(), s));
      return GatherRows(row_cache_.get(), dim, staged_.input_slots, staged_.num_input, x_dev, s);
    }
    SKIFF_CHECK(staged_.num_rows == staged_.num_input);
    SKIFF_CUDA_RETURN(cudaMemcpyAsync(x_dev, staged_.rows, sizeof(float) * staged_.num_rows * dim,
                                      cudaMemcpyDeviceToDevice, s));
    return Status::Ok();
  }

  // Stages the seeds and labels of `batch` and samples its blocks on the device into staged_.
  Status SampleOnDevice(const sampler::MiniBatch& batch, const model::DeviceSampling& sample) {
    if (sampler_ == nullptr) {
      return Status::InvalidArgument("CUDA model: a batch to sample, and no graph held");
    }
    SKIFF_CHECK(sample.fanouts != nullptr);
    if (static_cast<int>(sample.fanouts->size()) != config_.num_layers) {
      return Status::InvalidArgument("CUDA model: " + std::to_string(sample.fanouts->size()) +
                                     " fanouts for " + std::to_string(config_.num_layers) +
                                     " layers");
    }
    SKIFF_RETURN_IF_ERROR(CheckSeeds(batch.seeds));
    // The seeds travel as the staged batch's input IDs (no blocks), with their labels.
    seeds_only_.seeds = batch.seeds;
    seeds_only_.input_nodes = batch.seeds;
    seeds_only_.labels = batch.labels;
    SKIFF_ASSIGN_OR_RETURN(staged_, staging_.Stage(seeds_only_, BlockAugment::kNone,
                                                   /*input_ids=*/true, sampler_->stream()));
    SKIFF_ASSIGN_OR_RETURN(DeviceSampledBatch sampled,
                           sampler_->Sample(staged_.input_ids, staged_.num_seeds, *sample.fanouts,
                                            sample.seed, Augment(), stream_.get()));
    staged_.blocks = std::move(sampled.blocks);
    staged_.input_ids = sampled.input_ids;
    staged_.num_input = sampled.num_input;
    return Status::Ok();
  }

  // Seeds must be distinct nodes of the held graph (the host sampler's check).
  Status CheckSeeds(const std::vector<int64_t>& seeds) {
    seen_.assign(seeds.begin(), seeds.end());
    std::sort(seen_.begin(), seen_.end());
    for (size_t i = 0; i < seen_.size(); ++i) {
      if (seen_[i] < 0 || seen_[i] >= sampler_->num_nodes()) {
        return Status::InvalidArgument("seed node " + std::to_string(seen_[i]) + " is not in [0, " +
                                       std::to_string(sampler_->num_nodes()) + ")");
      }
      if (i > 0 && seen_[i] == seen_[i - 1]) {
        return Status::InvalidArgument("seed node " + std::to_string(seen_[i]) + " repeated");
      }
    }
    return Status::Ok();
  }

  // The device may reuse the current batch's staged (and sampled) memory after the work queued.
  // The sampler's last slot is released too when this batch was not device-sampled: later than
  // needed, never earlier.
  Status BatchConsumed() {
    SKIFF_RETURN_IF_ERROR(staging_.Consumed(stream_.get()));
    return sampler_ != nullptr ? sampler_->Consumed(stream_.get()) : Status::Ok();
  }

  // Softmax cross-entropy of the last layer's output against the staged labels, added to the
  // device totals; returns the logits' gradient (device).
  Result<float*> Loss(const float* logits) {
    cudaStream_t s = stream_.get();
    const int64_t rows = staged_.num_seeds;
    SKIFF_ASSIGN_OR_RETURN(float* grad,
                           grad_logits_.Ensure(rows * config_.num_classes, "logit gradients"));
    SKIFF_RETURN_IF_ERROR(SoftmaxCrossEntropy(rows, config_.num_classes, logits, staged_.labels,
                                              grad, step_stats_.get(), s));
    SKIFF_RETURN_IF_ERROR(AddLossStats(step_stats_.get(), sums_.get(), s));
    return grad;
  }

  // Runs the layer stack over the staged batch from x_; returns the logits (device). Copies the
  // last layer's input to *embeddings when asked (synchronising).
  Result<const float*> RunForward(bool training, uint64_t dropout_seed,
                                  std::vector<float>* embeddings) {
    training_ = training;
    dropout_seed_ = dropout_seed;
    cudaStream_t s = stream_.get();
    const float* h = x_.get();
    int64_t h_dim = config_.in_dim;
    for (int l = 0; l < config_.num_layers; ++l) {
      const DeviceBlock& block = staged_.blocks[static_cast<size_t>(l)];
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
      if (last) return static_cast<const float*>(out);
      SKIFF_ASSIGN_OR_RETURN(h, Activate(l, out));
      h_dim = out_dim;
    }
    return Status::Internal("CUDA model: no layers");
  }

  // LayerNorm (when configured) and the activation of hidden layer l's output.
  Result<const float*> Activate(int l, const float* out) {
    cudaStream_t s = stream_.get();
    const DeviceBlock& block = staged_.blocks[static_cast<size_t>(l)];
    const LayerParams& lp = layers_[static_cast<size_t>(l)];
    LayerBuffers& st = buffers_[static_cast<size_t>(l)];
    const int64_t out_dim = lp.out_dim();
    const int64_t n = block.num_dst * out_dim;
    const float* act_in = out;
    if (lp.gamma != kNone) {
      SKIFF_ASSIGN_OR_RETURN(float* normed, st.normed.Ensure(n, "layer norm"));
      SKIFF_ASSIGN_OR_RETURN(float* mean, st.norm_mean.Ensure(block.num_dst, "layer norm"));
      SKIFF_ASSIGN_OR_RETURN(float* rstd, st.norm_rstd.Ensure(block.num_dst, "layer norm"));
      SKIFF_RETURN_IF_ERROR(LayerNormForward(block.num_dst, out_dim, out, Data(lp.gamma),
                                             Data(lp.gamma + 1), kLayerNormEps, normed, mean, rstd,
                                             s));
      act_in = normed;
    }
    SKIFF_ASSIGN_OR_RETURN(float* act, st.activated.Ensure(n, "activation"));
    if (config_.activation == model::Activation::kElu) {
      SKIFF_RETURN_IF_ERROR(EluForward(n, kEluAlpha, act_in, act, s));
    } else {
      SKIFF_RETURN_IF_ERROR(ReluForward(n, act_in, act, s));
    }
    return static_cast<const float*>(act);
  }

  // Backward through the stack from the logits' gradient (device), accumulating into grads_dev_.
  Status RunBackward(const float* grad_out) {
    cudaStream_t s = stream_.get();
    const int last_layer = config_.num_layers - 1;
    for (int l = last_layer; l >= 0; --l) {
      const DeviceBlock& block = staged_.blocks[static_cast<size_t>(l)];
      const LayerParams& lp = layers_[static_cast<size_t>(l)];
      LayerBuffers& st = buffers_[static_cast<size_t>(l)];
      if (l == 0) return LayerBackward(0, grad_out, nullptr);
      const int64_t n = block.num_src * lp.in_dim;
      SKIFF_ASSIGN_OR_RETURN(float* grad_in, st.grad_input.Ensure(n, "input grads"));
      SKIFF_RETURN_IF_ERROR(LayerBackward(l, grad_out, grad_in));
      if (training_ && InputDropout(l) > 0.0f) {
        SKIFF_RETURN_IF_ERROR(DropoutBackward(n, InputDropout(l), LayerSeed(dropout_seed_, l, 0),
                                              grad_in, grad_in, s));
      }
      SKIFF_ASSIGN_OR_RETURN(grad_out, ActivationBackward(l - 1, grad_in));
    }
    return Status::Ok();
  }

  // Through hidden layer l's activation and LayerNorm: `grad` (layer l's output, overwritten) ->
  // the gradient of its pre-activation output.
  Result<const float*> ActivationBackward(int l, float* grad) {
    cudaStream_t s = stream_.get();
    LayerBuffers& st = buffers_[static_cast<size_t>(l)];
    const LayerParams& lp = layers_[static_cast<size_t>(l)];
    const int64_t rows = staged_.blocks[static_cast<size_t>(l)].num_dst;
    const int64_t n = rows * lp.out_dim();
    if (config_.activation == model::Activation::kElu) {
      const float* act_in = lp.gamma != kNone ? st.normed.get() : st.pre_activation.get();
      SKIFF_RETURN_IF_ERROR(EluBackward(n, kEluAlpha, act_in, grad, grad, s));
    } else {
      SKIFF_RETURN_IF_ERROR(ReluBackward(n, st.activated.get(), grad, grad, s));
    }
    if (lp.gamma == kNone) return static_cast<const float*>(grad);
    SKIFF_ASSIGN_OR_RETURN(float* grad_pre, st.grad_pre_activation.Ensure(n, "norm grads"));
    SKIFF_RETURN_IF_ERROR(LayerNormBackward(rows, lp.out_dim(), st.pre_activation.get(),
                                            Data(lp.gamma), st.norm_mean.get(), st.norm_rstd.get(),
                                            grad, grad_pre, Grad(lp.gamma), Grad(lp.gamma + 1), s));
    return static_cast<const float*>(grad_pre);
  }

  Status Mm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
            const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    if (m == 0 || n == 0) return Status::Ok();
    return Gemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc, cublas_, precision_,
                stream_.get());
  }

  // What a layer's forward and backward work with: the staged block, the parameters, the buffers,
  // the stream, and the sizes (destinations, sources, edges, input and output width).
  struct LayerRefs {
    const DeviceBlock& b;
    const LayerParams& lp;
    LayerBuffers& st;
    cudaStream_t s;
    int64_t nd, ns, nnz, in, od;
  };
  LayerRefs LayerOf(int l) {
    const DeviceBlock& b = staged_.blocks[static_cast<size_t>(l)];
    const LayerParams& lp = layers_[static_cast<size_t>(l)];
    return {.b = b,
            .lp = lp,
            .st = buffers_[static_cast<size_t>(l)],
            .s = stream_.get(),
            .nd = b.num_dst,
            .ns = b.num_src,
            .nnz = b.nnz,
            .in = lp.in_dim,
            .od = lp.out_dim()};
  }

  Status LayerForward(int l, const float* x_src, bool training, uint64_t seed, float* out) {
    buffers_[static_cast<size_t>(l)].x_src = x_src;
    switch (config_.kind) {
      case ModelKind::kSage:
      case ModelKind::kGcn:
        return ConvForward(l, x_src, out);
      case ModelKind::kGat:
        return GatForward(l, x_src, training, seed, out);
    }
    return Status::Internal("CUDA model: unknown layer kind");
  }

  Status LayerBackward(int l, const float* grad_out, float* grad_x_src) {
    switch (config_.kind) {
      case ModelKind::kSage:
      case ModelKind::kGcn:
        return ConvBackward(l, grad_out, grad_x_src);
      case ModelKind::kGat:
        return GatBackward(l, grad_out, grad_x_src);
    }
    return Status::Internal("CUDA model: unknown layer kind");
  }

  // SAGE: out = mean(x_src) W_neigh + x_dst W_self + b; GCN: out = A_w x_src W + b (A_w holds the
  // normalised weights; nnz counts the self-loops). The aggregation runs before or after the
  // projection, whichever moves fewer values (the cost model matches the CPU layer's).
  Status ConvForward(int l, const float* x_src, float* out) {
    const auto [b, lp, st, s, nd, ns, nnz, in, od] = LayerOf(l);
    const bool sage = config_.kind == ModelKind::kSage;
    const float* w_neigh = Data(sage ? lp.first + 1 : lp.first);
    const float* ew = sage ? nullptr : b.edge_weight;
    const AggregateMode mode = sage ? AggregateMode::kMean : AggregateMode::kWeighted;
    st.project_first = ns * in * od + nnz * od < nnz * in + nd * in * od;
    if (st.project_first) {
      SKIFF_ASSIGN_OR_RETURN(float* proj, st.projected.Ensure(ns * od, "projection"));
      SKIFF_RETURN_IF_ERROR(Mm(false, false, ns, od, in, x_src, in, w_neigh, od, 0.0f, proj, od));
      SKIFF_RETURN_IF_ERROR(
          CsrAggregateForward(nd, ns, b.indptr, b.indices, ew, mode, proj, od, out, s));
    } else {
      SKIFF_ASSIGN_OR_RETURN(float* agg, st.aggregated.Ensure(nd * in, "aggregation"));
      SKIFF_RETURN_IF_ERROR(
          CsrAggregateForward(nd, ns, b.indptr, b.indices, ew, mode, x_src, in, agg, s));
      SKIFF_RETURN_IF_ERROR(Mm(false, false, nd, od, in, agg, in, w_neigh, od, 0.0f, out, od));
    }
    if (sage) {
      SKIFF_RETURN_IF_ERROR(
          Mm(false, false, nd, od, in, x_src, in, Data(lp.first), od, 1.0f, out, od));
    }
    return BiasAdd(nd, od, Data(sage ? lp.first + 2 : lp.first + 1), out, s);
  }

  // GAT: z = x_src W; attention logits from z's source and destination halves, an edge softmax
  // (dropped out in training), then the weighted sum of z over each destination's edges, + b.
  Status GatForward(int l, const float* x_src, bool training, uint64_t seed, float* out) {
    const auto [b, lp, st, s, nd, ns, nnz, in, od] = LayerOf(l);
    const int64_t heads = lp.heads, ph = lp.per_head;
    SKIFF_ASSIGN_OR_RETURN(float* z, st.z.Ensure(ns * od, "gat z"));
    SKIFF_RETURN_IF_ERROR(Mm(false, false, ns, od, in, x_src, in, Data(lp.first), od, 0.0f, z, od));
    SKIFF_ASSIGN_OR_RETURN(float* el, st.el.Ensure(ns * heads, "gat el"));
    SKIFF_ASSIGN_OR_RETURN(float* er, st.er.Ensure(nd * heads, "gat er"));
    SKIFF_RETURN_IF_ERROR(AttentionDot(ns, heads, ph, z, Data(lp.first + 1), el, s));
    SKIFF_RETURN_IF_ERROR(AttentionDot(nd, heads, ph, z, Data(lp.first + 2), er, s));
    SKIFF_ASSIGN_OR_RETURN(float* alpha, st.alpha.Ensure(nnz * heads, "gat alpha"));
    SKIFF_RETURN_IF_ERROR(
        GatEdgeSoftmaxForward(nd, b.indptr, b.indices, heads, el, er, kNegativeSlope, alpha, s));
    st.attn_dropout_active = training && config_.dropout > 0.0f;
    attn_seed_[static_cast<size_t>(l)] = seed;
    const float* alpha_used = alpha;
    if (st.attn_dropout_active) {
      SKIFF_ASSIGN_OR_RETURN(float* dropped, st.alpha_dropped.Ensure(nnz * heads, "gat dropout"));
      SKIFF_RETURN_IF_ERROR(DropoutForward(nnz * heads, config_.dropout, seed, alpha, dropped, s));
      alpha_used = dropped;
    }
    SKIFF_RETURN_IF_ERROR(
        GatAggregateForward(nd, b.indptr, b.indices, heads, ph, alpha_used, z, out, s));
    return BiasAdd(nd, od, Data(lp.first + 3), out, s);
  }

  // The gradients of ConvForward's parameters (accumulated) and, when grad_x_src is given, of its
  // input (overwritten), in the order ConvForward chose (project_first).
  Status ConvBackward(int l, const float* grad_out, float* grad_x_src) {
    const auto [b, lp, st, s, nd, ns, nnz, in, od] = LayerOf(l);
    const float* x_src = st.x_src;
    const bool sage = config_.kind == ModelKind::kSage;
    const size_t w_neigh = sage ? lp.first + 1 : lp.first;
    const size_t bias = sage ? lp.first + 2 : lp.first + 1;
    const AggregateMode mode = sage ? AggregateMode::kMean : AggregateMode::kWeighted;
    const float* ew = sage ? nullptr : b.edge_weight;
    SKIFF_RETURN_IF_ERROR(BiasGrad(nd, od, grad_out, Grad(bias), s));
    if (sage) {
      SKIFF_RETURN_IF_ERROR(
          Mm(true, false, in, od, nd, x_src, in, grad_out, od, 1.0f, Grad(lp.first), od));
    }
    if (st.project_first) {
      SKIFF_ASSIGN_OR_RETURN(float* gp, st.grad_projected.Ensure(ns * od, "projection grads"));
      SKIFF_RETURN_IF_ERROR(
          CsrAggregateBackward(nd, ns, b.indptr, b.indices, ew, mode, grad_out, od, gp, s));
      SKIFF_RETURN_IF_ERROR(
          Mm(true, false, in, od, ns, x_src, in, gp, od, 1.0f, Grad(w_neigh), od));
      if (grad_x_src != nullptr) {
        SKIFF_RETURN_IF_ERROR(
            Mm(false, true, ns, in, od, gp, od, Data(w_neigh), od, 0.0f, grad_x_src, in));
      }
    } else {
      SKIFF_RETURN_IF_ERROR(Mm(true, false, in, od, nd, st.aggregated.get(), in, grad_out, od, 1.0f,
                               Grad(w_neigh), od));
      if (grad_x_src != nullptr) {
        SKIFF_ASSIGN_OR_RETURN(float* ga, st.grad_aggregated.Ensure(nd * in, "aggregation grads"));
        SKIFF_RETURN_IF_ERROR(
            Mm(false, true, nd, in, od, grad_out, od, Data(w_neigh), od, 0.0f, ga, in));
        SKIFF_RETURN_IF_ERROR(
            CsrAggregateBackward(nd, ns, b.indptr, b.indices, ew, mode, ga, in, grad_x_src, s));
      }
    }
    if (sage && grad_x_src != nullptr) {
      SKIFF_RETURN_IF_ERROR(
          Mm(false, true, nd, in, od, grad_out, od, Data(lp.first), od, 1.0f, grad_x_src, in));
    }
    return Status::Ok();
  }

  // The gradients of GatForward's parameters (accumulated) and, when grad_x_src is given, of its
  // input (overwritten).
  Status GatBackward(int l, const float* grad_out, float* grad_x_src) {
    const auto [b, lp, st, s, nd, ns, nnz, in, od] = LayerOf(l);
    const int64_t heads = lp.heads, ph = lp.per_head;
    SKIFF_RETURN_IF_ERROR(BiasGrad(nd, od, grad_out, Grad(lp.first + 3), s));
    const float* alpha_used = st.attn_dropout_active ? st.alpha_dropped.get() : st.alpha.get();
    SKIFF_ASSIGN_OR_RETURN(float* grad_z, st.grad_z.Ensure(ns * od, "gat grads"));
    SKIFF_ASSIGN_OR_RETURN(float* grad_alpha, st.grad_alpha.Ensure(nnz * heads, "gat grads"));
    SKIFF_RETURN_IF_ERROR(GatAggregateBackward(nd, ns, b.indptr, b.indices, heads, ph, alpha_used,
                                               st.z.get(), grad_out, grad_z, grad_alpha, s));
    if (st.attn_dropout_active) {
      SKIFF_ASSIGN_OR_RETURN(float* gin, st.grad_alpha_in.Ensure(nnz * heads, "gat grads"));
      SKIFF_RETURN_IF_ERROR(DropoutBackward(
          nnz * heads, config_.dropout, attn_seed_[static_cast<size_t>(l)], grad_alpha, gin, s));
      grad_alpha = gin;
    }
    SKIFF_ASSIGN_OR_RETURN(float* grad_el, st.grad_el.Ensure(ns * heads, "gat grads"));
    SKIFF_ASSIGN_OR_RETURN(float* grad_er, st.grad_er.Ensure(nd * heads, "gat grads"));
    SKIFF_RETURN_IF_ERROR(GatEdgeSoftmaxBackward(nd, ns, b.indptr, b.indices, heads, st.el.get(),
                                                 st.er.get(), kNegativeSlope, st.alpha.get(),
                                                 grad_alpha, grad_el, grad_er, s));
    SKIFF_RETURN_IF_ERROR(AttentionDotBackward(ns, heads, ph, st.z.get(), Data(lp.first + 1),
                                               grad_el, grad_z, Grad(lp.first + 1), s));
    SKIFF_RETURN_IF_ERROR(AttentionDotBackward(nd, heads, ph, st.z.get(), Data(lp.first + 2),
                                               grad_er, grad_z, Grad(lp.first + 2), s));
    SKIFF_RETURN_IF_ERROR(
        Mm(true, false, in, od, ns, st.x_src, in, grad_z, od, 1.0f, Grad(lp.first), od));
    if (grad_x_src != nullptr) {
      SKIFF_RETURN_IF_ERROR(
          Mm(false, true, ns, in, od, grad_z, od, Data(lp.first), od, 0.0f, grad_x_src, in));
    }
    return Status::Ok();
  }

  std::unique_ptr<model::Model> host_;  // owns the host copy of the parameters
  std::vector<model::Parameter> host_params_;
  std::vector<int64_t> offsets_;  // parameter i is [offsets_[i], offsets_[i+1]) of the stores
  CudaStream stream_;
  CublasHandle cublas_;
  BatchStaging staging_;
  GemmPrecision precision_;
  std::vector<LayerParams> layers_;
  std::vector<LayerBuffers> buffers_;
  std::vector<uint64_t> attn_seed_;  // GAT attention dropout seed per layer
  StagedBatch staged_;               // the batch being computed
  DeviceBuffer<float> params_dev_, grads_dev_, moments_dev_;
  DeviceBuffer<float> x_, grad_logits_, features_dev_;
  DeviceBuffer<LossStats> step_stats_;
  DeviceBuffer<LossSums> sums_;
  PinnedBuffer sums_host_;
  std::vector<float> host_grad_;
  Owner param_owner_ = Owner::kHost;    // the device copy is uploaded before first use
  Owner moments_owner_ = Owner::kHost;  // likewise the optimiser's moments
  int moment_slots_ = 0;                // moments per parameter on the device (adam 2, sgd 1)
  bool host_grads_current_ = false;     // after the host-facing Backward: update from host grads
  bool holds_features_ = false;
  int64_t features_rows_ = 0;
  // When the features do not fit: a device cache of feature rows (row_cache_, capacity x in_dim)
  // and the host's index of it; StageWithRows' scratch.
  std::unique_ptr<model::RowSlots> row_slots_;
  DeviceBuffer<float> row_cache_;
  std::vector<int64_t> input_slots_, missing_, missing_slots_;
  std::unique_ptr<DeviceSampler> sampler_;  // HoldGraph: batches sampled on the device
  sampler::MiniBatch seeds_only_;           // SampleOnDevice's staged batch (reused)
  std::vector<int64_t> seen_;               // CheckSeeds' scratch
  bool training_ = false;
  uint64_t dropout_seed_ = 0;
  bool ready_for_backward_ = false;
  int device_ = 0;                    // the CUDA ordinal the model lives on
  DeviceBuffer<float> step_sum_dev_;  // AccumulateGradients' sum
  bool step_empty_ = true;            // no batch in step_sum_dev_ since LoadStepGradients
  Status deferred_error_;             // from Parameters(), returned by the next call that can
};

// What the model may still place on the device: `device_bytes` (--device-memory) less what it
// holds already (`held`), or with no budget (0) the device's free memory less the margin (free
// memory already excludes what is held).
Result<uint64_t> CudaModel::DeviceMemoryFor(uint64_t device_bytes, uint64_t held) {
  if (device_bytes > 0) return device_bytes > held ? device_bytes - held : 0;
  size_t free = 0, total = 0;
  SKIFF_CUDA_RETURN(cudaMemGetInfo(&free, &total));
  const uint64_t margin = std::max<uint64_t>(kMinDeviceMargin, total / kDeviceMarginDivisor);
  return free > margin ? free - margin : 0;
}

Result<bool> CudaModel::HoldFeatures(const sampler::FeatureSource& features,
                                     uint64_t device_bytes) {
  SKIFF_RETURN_IF_ERROR(UseDevice());
  const int64_t rows = features.num_nodes(), dim = features.dim();
  if (dim != config_.in_dim) {
    return Status::InvalidArgument("CUDA model: features have " + std::to_string(dim) +
                                   " columns, the model " + std::to_string(config_.in_dim));
  }
  if (sampler_ != nullptr) {
    return Status::InvalidArgument("CUDA model: the features are held once, before the graph");
  }
  // Another call starts over: the last one's table or row cache goes first.
  holds_features_ = false;
  features_rows_ = 0;
  features_dev_ = DeviceBuffer<float>();
  row_cache_ = DeviceBuffer<float>();
  row_slots_.reset();
  if (rows == 0 || dim == 0) return false;
  const uint64_t bytes = static_cast<uint64_t>(rows) * static_cast<uint64_t>(dim) * 4;
  SKIFF_ASSIGN_OR_RETURN(const uint64_t limit, DeviceMemoryFor(device_bytes, 0));
  if (bytes > limit) return CacheRows(rows, dim, bytes, limit);
  SKIFF_ASSIGN_OR_RETURN(float* table, features_dev_.Ensure(rows * dim, "the features"));
  const int64_t chunk = std::max<int64_t>(1, static_cast<int64_t>(kUploadChunkBytes) / (dim * 4));
  SKIFF_ASSIGN_OR_RETURN(
      PinnedBuffer staging,
      PinnedBuffer::Create(static_cast<size_t>(std::min(chunk, rows) * dim * 4)));
  std::vector<int64_t> ids;
  for (int64_t first = 0; first < rows; first += chunk) {
    const int64_t n = std::min(chunk, rows - first);
    ids.resize(static_cast<size_t>(n));
    std::iota(ids.begin(), ids.end(), first);
    auto* host = static_cast<float*>(staging.data());
    SKIFF_RETURN_IF_ERROR(features.Gather(ids, host));
    SKIFF_CUDA_RETURN(cudaMemcpyAsync(table + first * dim, host, sizeof(float) * n * dim,
                                      cudaMemcpyHostToDevice, stream_.get()));
    SKIFF_RETURN_IF_ERROR(stream_.Synchronize());  // the staging buffer is refilled next
  }
  holds_features_ = true;
  features_rows_ = rows;
  return true;
}

Result<bool> CudaModel::CacheRows(int64_t rows, int64_t dim, uint64_t bytes, uint64_t limit) {
  const int64_t capacity = static_cast<int64_t>(limit / (static_cast<uint64_t>(dim) * 4));
  const std::string what = "features (" + DescribeBytes(bytes) +
                           ") exceed the device memory for them (" + DescribeBytes(limit) + "): ";
  if (capacity < kMinCacheRows || rows >= std::numeric_limits<int32_t>::max()) {
    LogInfo(what + "every batch uploads its input rows");
    return false;
  }
  SKIFF_RETURN_IF_ERROR(row_cache_.Ensure(capacity * dim, "the row cache").status());
  row_slots_ = std::make_unique<model::RowSlots>(rows, capacity);
  LogInfo(what + "a device cache of " + std::to_string(capacity) + " rows (" +
          std::to_string(100 * capacity / rows) +
          "%) keeps rows between batches, and a batch uploads the rows it misses");
  return false;
}

Result<bool> CudaModel::HoldGraph(const sampler::CsrSource& graph, uint64_t device_bytes,
                                  int max_fanout) {
  SKIFF_RETURN_IF_ERROR(UseDevice());
  if (!holds_features_) return false;  // batches would need their rows from the host
  if (const std::string why = SamplerDeclines(config_.num_layers, max_fanout); !why.empty()) {
    LogInfo(why + ": batches are sampled on the host");
    return false;
  }
  if (graph.num_nodes() != features_rows_) {
    return Status::InvalidArgument("CUDA model: the graph has " +
                                   std::to_string(graph.num_nodes()) + " nodes, the features " +
                                   std::to_string(features_rows_));
  }
  const uint64_t bytes = DeviceSampler::GraphDeviceBytes(graph.num_nodes(), graph.num_edges());
  SKIFF_ASSIGN_OR_RETURN(const uint64_t limit,
                         DeviceMemoryFor(device_bytes, features_dev_.capacity() * sizeof(float)));
  if (bytes > limit) {
    LogInfo("the graph (" + DescribeBytes(bytes) + " on the device) exceeds the device memory " +
            "left for it (" + DescribeBytes(limit) + "): batches are sampled on the host");
    return false;
  }
  SKIFF_ASSIGN_OR_RETURN(sampler_, DeviceSampler::Create(graph, kUploadChunkBytes));
  return true;
}

Status CudaModel::ApplyUpdate(const model::OptimizerConfig& config, int64_t step,
                              std::vector<std::vector<float>>& state) {
  SKIFF_RETURN_IF_ERROR(UseDevice());
  cudaStream_t s = stream_.get();
  SKIFF_RETURN_IF_ERROR(EnsureParamsOnDevice());
  const int64_t total = offsets_.back();
  if (host_grads_current_) {
    for (size_t i = 0; i < host_params_.size(); ++i) {
      SKIFF_CUDA_RETURN(cudaMemcpyAsync(Grad(i), host_params_[i].grad,
                                        sizeof(float) * host_params_[i].size(),
                                        cudaMemcpyHostToDevice, s));
    }
    SKIFF_RETURN_IF_ERROR(stream_.Synchronize());
    host_grads_current_ = false;
  }
  const bool adam = config.kind == model::OptimizerKind::kAdam;
  const int slots = model::OptimizerStateSlots(config);
  SKIFF_CHECK(state.size() == host_params_.size() * static_cast<size_t>(slots));
  if (moments_owner_ == Owner::kHost || moment_slots_ != slots) {
    SKIFF_ASSIGN_OR_RETURN(float* m, moments_dev_.Ensure(slots * total, "optimiser state"));
    for (size_t i = 0; i < host_params_.size(); ++i) {
      for (int k = 0; k < slots; ++k) {
        const std::vector<float>& h = state[i * static_cast<size_t>(slots) + k];
        SKIFF_CUDA_RETURN(cudaMemcpyAsync(m + k * total + offsets_[i], h.data(),
                                          sizeof(float) * h.size(), cudaMemcpyHostToDevice, s));
      }
    }
    SKIFF_RETURN_IF_ERROR(stream_.Synchronize());
    moments_owner_ = Owner::kDevice;
    moment_slots_ = slots;
  }
  float* m = moments_dev_.get();
  for (size_t i = 0; i < host_params_.size(); ++i) {
    const model::Parameter& p = host_params_[i];
    const float weight_decay = model::WeightDecayOf(config, p);
    if (adam) {
      cpu::AdamConfig adam_config;
      adam_config.lr = config.lr;
      adam_config.weight_decay = weight_decay;
      SKIFF_RETURN_IF_ERROR(AdamStep(p.size(), adam_config, step, Grad(i), Data(i), m + offsets_[i],
                                     m + total + offsets_[i], s));
    } else {
      SKIFF_RETURN_IF_ERROR(SgdStep(p.size(), config.lr, config.momentum, weight_decay, Grad(i),
                                    Data(i), m + offsets_[i], s));
    }
  }
  return Status::Ok();
}

Status CudaModel::ReadOptimizerState(std::vector<std::vector<float>>& state) {
  SKIFF_RETURN_IF_ERROR(UseDevice());
  if (param_owner_ == Owner::kDevice) SKIFF_RETURN_IF_ERROR(DownloadParams());
  param_owner_ = Owner::kHost;
  if (moments_owner_ == Owner::kHost) return Status::Ok();
  const int64_t total = offsets_.back();
  const auto slots = static_cast<size_t>(moment_slots_);
  SKIFF_CHECK(state.size() == host_params_.size() * slots);
  for (size_t i = 0; i < host_params_.size(); ++i) {
    for (size_t k = 0; k < slots; ++k) {
      std::vector<float>& h = state[i * slots + k];
      SKIFF_CUDA_RETURN(cudaMemcpyAsync(h.data(), moments_dev_.get() + k * total + offsets_[i],
                                        sizeof(float) * h.size(), cudaMemcpyDeviceToHost,
                                        stream_.get()));
    }
  }
  SKIFF_RETURN_IF_ERROR(stream_.Synchronize());
  moments_owner_ = Owner::kHost;  // the caller may change them (Restore)
  return Status::Ok();
}

}  // namespace

Result<model::Model::CudaPlacement> PlacementFor(uint64_t device_bytes, int64_t num_nodes,
                                                 int64_t feature_dim, int64_t num_edges,
                                                 int num_layers, int max_fanout) {
  model::Model::CudaPlacement placement;
  SKIFF_ASSIGN_OR_RETURN(placement.feature_memory, CudaModel::DeviceMemoryFor(device_bytes, 0));
  const uint64_t features =
      static_cast<uint64_t>(num_nodes) * static_cast<uint64_t>(feature_dim) * sizeof(float);
  placement.features = num_nodes > 0 && feature_dim > 0 && features <= placement.feature_memory;
  placement.graph =
      placement.features && SamplerDeclines(num_layers, max_fanout).empty() &&
      DeviceSampler::GraphDeviceBytes(num_nodes, num_edges) <= placement.feature_memory - features;
  return placement;
}

StepSumView StepSumOf(model::Model& cuda_model) {
  auto* model = dynamic_cast<CudaModel*>(&cuda_model);
  SKIFF_CHECK_MSG(model != nullptr, "StepSumOf takes a CUDA model");
  return model->step_sum();
}

Result<std::unique_ptr<model::Model>> CreateCudaModel(std::unique_ptr<model::Model> host_model,
                                                      int device) {
  SKIFF_CHECK(host_model != nullptr);
  const model::CudaMatmul matmul = host_model->config().cuda_matmul;
  SKIFF_RETURN_IF_ERROR(FirstDevice().status());
  int count = 0;
  SKIFF_CUDA_RETURN(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count) {
    return Status::InvalidArgument("CUDA model: there is no GPU " + std::to_string(device) +
                                   ": this machine has " + std::to_string(count));
  }
  SKIFF_CUDA_RETURN(cudaSetDevice(device));
  SKIFF_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  SKIFF_ASSIGN_OR_RETURN(CublasHandle cublas, CublasHandle::Create());
  SKIFF_ASSIGN_OR_RETURN(BatchStaging staging, BatchStaging::Create());
  auto model = std::make_unique<CudaModel>(
      std::move(host_model), device, std::move(stream), std::move(cublas), std::move(staging),
      matmul == model::CudaMatmul::kTf32 ? GemmPrecision::kTf32 : GemmPrecision::kFp32);
  SKIFF_RETURN_IF_ERROR(model->Init());
  return std::unique_ptr<model::Model>(std::move(model));
}

}  // namespace skiff::cuda
