// LinkDecoder (include/skiff/model/link_decoder.h) on the CPU kernels: dot and DistMult through
// the pair and cross scores of kernels/cpu/link_score.h, the MLP decoder through PairHadamard,
// Gemm, BiasAdd and ReLU.
#include "skiff/model/link_decoder.h"

#include <algorithm>
#include <random>
#include <string>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/link_score.h"
#include "src/model/layer.h"

namespace skiff::model {
namespace {

// The MLP's activations for P pairs, kept from the forward for the backward; grown to the largest
// batch and reused (EnsureSize).
struct MlpScratch {
  std::vector<float> x;       // P x dim: x_src * x_dst
  std::vector<float> hidden;  // P x hidden, after ReLU
  std::vector<float> grad_hidden;
  std::vector<float> grad_x;
};

// The MLP decoder's parameters (indices into State::params).
enum MlpParam { kWeight0 = 0, kBias0 = 1, kWeight1 = 2, kBias1 = 3 };

Status CheckIndices(const char* what, std::span<const int32_t> idx, int64_t rows) {
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] < 0 || idx[i] >= rows) {
      return Status::InvalidArgument(
          std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(idx[i]) +
          " is outside the embedding rows [0, " + std::to_string(rows) + ")");
    }
  }
  return Status::Ok();
}

Status CheckEmbedding(const float* emb, int64_t rows) {
  if (rows < 0)
    return Status::InvalidArgument("negative embedding row count " + std::to_string(rows));
  if (rows > 0 && emb == nullptr) return Status::InvalidArgument("embedding matrix is null");
  return Status::Ok();
}

// Every src[i] paired with every cand[j], row-major (pair i*k+j).
void CrossPairs(std::span<const int32_t> src, std::span<const int32_t> cand,
                std::vector<int32_t>* pair_src, std::vector<int32_t>* pair_dst) {
  for (int32_t s : src) {
    for (int32_t c : cand) {
      pair_src->push_back(s);
      pair_dst->push_back(c);
    }
  }
}

}  // namespace

struct LinkDecoder::State {
  std::vector<Tensor> params;  // none (dot), the relation (distmult), or MlpParam order (mlp)
  // LossAndGrad's scratch, reused across batches.
  std::vector<int32_t> pair_src, pair_dst;  // mlp: positives, then the n x k negatives
  std::vector<float> scores, grad_scores;   // positives, then negatives (i*k+j)
  MlpScratch mlp;

  bool distmult = false;

  // DistMult's relation vector and its gradient; null for the other decoders.
  const float* relation() const { return distmult ? params[0].data.data() : nullptr; }
  float* relation_grad() { return distmult ? params[0].grad.data() : nullptr; }
};

namespace {

// scores[p] for the P pairs (src[p], dst[p]) through the MLP; keeps its activations in `s`.
void MlpForward(const std::vector<Tensor>& params, int64_t dim, int64_t hidden, const float* emb,
                const int32_t* src, const int32_t* dst, int64_t pairs, MlpScratch* s,
                float* scores) {
  float* x = EnsureSize(s->x, pairs * dim);
  float* h = EnsureSize(s->hidden, pairs * hidden);
  cpu::PairHadamard(emb, dim, src, dst, pairs, x);
  cpu::Gemm(false, false, pairs, hidden, dim, 1.0f, x, dim, params[kWeight0].data.data(), hidden,
            0.0f, h, hidden);
  cpu::BiasAdd(pairs, hidden, params[kBias0].data.data(), h);
  cpu::ReluForward(pairs * hidden, h, h);
  cpu::Gemm(false, false, pairs, 1, hidden, 1.0f, h, hidden, params[kWeight1].data.data(), 1, 0.0f,
            scores, 1);
  cpu::BiasAdd(pairs, 1, params[kBias1].data.data(), scores);
}

// Backward of MlpForward (same pairs, its activations in `s`): accumulates the parameter
// gradients and adds d/d emb into grad_emb.
void MlpBackward(std::vector<Tensor>& params, int64_t dim, int64_t hidden, const float* emb,
                 const int32_t* src, const int32_t* dst, int64_t pairs, const float* grad_scores,
                 MlpScratch* s, float* grad_emb) {
  const float* x = s->x.data();
  const float* h = s->hidden.data();
  float* grad_h = EnsureSize(s->grad_hidden, pairs * hidden);
  float* grad_x = EnsureSize(s->grad_x, pairs * dim);
  cpu::BiasGrad(pairs, 1, grad_scores, params[kBias1].grad.data());
  cpu::Gemm(true, false, hidden, 1, pairs, 1.0f, h, hidden, grad_scores, 1, 1.0f,
            params[kWeight1].grad.data(), 1);
  cpu::Gemm(false, true, pairs, hidden, 1, 1.0f, grad_scores, 1, params[kWeight1].data.data(), 1,
            0.0f, grad_h, hidden);
  cpu::ReluBackward(pairs * hidden, h, grad_h, grad_h);
  cpu::BiasGrad(pairs, hidden, grad_h, params[kBias0].grad.data());
  cpu::Gemm(true, false, dim, hidden, pairs, 1.0f, x, dim, grad_h, hidden, 1.0f,
            params[kWeight0].grad.data(), hidden);
  cpu::Gemm(false, true, pairs, dim, hidden, 1.0f, grad_h, hidden, params[kWeight0].data.data(),
            hidden, 0.0f, grad_x, dim);
  cpu::PairHadamardBackward(emb, dim, src, dst, pairs, grad_x, grad_emb);
}

}  // namespace

LinkDecoder::LinkDecoder(const DecoderConfig& config)
    : config_(config), state_(std::make_unique<State>()) {
  const int64_t dim = config.dim, hidden = config.hidden_dim;
  std::mt19937_64 rng(config.seed);
  switch (config.kind) {
    case DecoderKind::kDot:
      break;
    case DecoderKind::kDistMult:
      state_->distmult = true;
      state_->params.emplace_back("decoder.relation", std::vector<int64_t>{dim}, 1.0f);
      break;
    case DecoderKind::kMlp:
      state_->params.emplace_back("decoder.mlp0.weight", std::vector<int64_t>{dim, hidden});
      state_->params.emplace_back("decoder.mlp0.bias", std::vector<int64_t>{hidden});
      state_->params.emplace_back("decoder.mlp1.weight", std::vector<int64_t>{hidden, 1});
      state_->params.emplace_back("decoder.mlp1.bias", std::vector<int64_t>{1});
      state_->params[kWeight0].GlorotUniform(dim, hidden, rng);
      state_->params[kWeight1].GlorotUniform(hidden, 1, rng);
      break;
  }
}

LinkDecoder::~LinkDecoder() = default;

Result<std::unique_ptr<LinkDecoder>> LinkDecoder::Create(const DecoderConfig& config) {
  if (config.dim <= 0) {
    return Status::InvalidArgument("link decoder: embedding dim must be positive, got " +
                                   std::to_string(config.dim));
  }
  if (config.kind == DecoderKind::kMlp && config.hidden_dim <= 0) {
    return Status::InvalidArgument("link decoder: mlp hidden_dim must be positive, got " +
                                   std::to_string(config.hidden_dim));
  }
  return std::unique_ptr<LinkDecoder>(new LinkDecoder(config));
}

Status LinkDecoder::ScorePairs(const float* emb, int64_t rows, std::span<const int32_t> src,
                               std::span<const int32_t> dst, std::vector<float>* scores) const {
  SKIFF_RETURN_IF_ERROR(CheckEmbedding(emb, rows));
  if (src.size() != dst.size()) {
    return Status::InvalidArgument("ScorePairs: " + std::to_string(src.size()) + " sources but " +
                                   std::to_string(dst.size()) + " destinations");
  }
  SKIFF_RETURN_IF_ERROR(CheckIndices("src", src, rows));
  SKIFF_RETURN_IF_ERROR(CheckIndices("dst", dst, rows));
  const auto n = static_cast<int64_t>(src.size());
  scores->resize(src.size());
  if (config_.kind == DecoderKind::kMlp) {
    MlpScratch scratch;
    MlpForward(state_->params, config_.dim, config_.hidden_dim, emb, src.data(), dst.data(), n,
               &scratch, scores->data());
  } else {
    cpu::PairScores(emb, config_.dim, src.data(), dst.data(), n, state_->relation(),
                    scores->data());
  }
  return Status::Ok();
}

Status LinkDecoder::ScoreCross(const float* emb, int64_t rows, std::span<const int32_t> src,
                               std::span<const int32_t> cand, std::vector<float>* scores) const {
  SKIFF_RETURN_IF_ERROR(CheckEmbedding(emb, rows));
  SKIFF_RETURN_IF_ERROR(CheckIndices("src", src, rows));
  SKIFF_RETURN_IF_ERROR(CheckIndices("cand", cand, rows));
  const auto n = static_cast<int64_t>(src.size()), k = static_cast<int64_t>(cand.size());
  scores->resize(static_cast<size_t>(n * k));
  if (config_.kind == DecoderKind::kMlp) {
    std::vector<int32_t> pair_src, pair_dst;
    CrossPairs(src, cand, &pair_src, &pair_dst);
    MlpScratch scratch;
    MlpForward(state_->params, config_.dim, config_.hidden_dim, emb, pair_src.data(),
               pair_dst.data(), n * k, &scratch, scores->data());
  } else {
    cpu::CrossScores(emb, config_.dim, src.data(), n, cand.data(), k, state_->relation(),
                     scores->data());
  }
  return Status::Ok();
}

Result<LinkLossResult> LinkDecoder::LossAndGrad(const float* emb, int64_t rows,
                                                const EdgeBatchRows& batch, LinkLoss loss,
                                                float* grad_emb) {
  SKIFF_RETURN_IF_ERROR(CheckEmbedding(emb, rows));
  if (grad_emb == nullptr) return Status::InvalidArgument("LossAndGrad: grad_emb is null");
  if (batch.pos_src.size() != batch.pos_dst.size()) {
    return Status::InvalidArgument("LossAndGrad: " + std::to_string(batch.pos_src.size()) +
                                   " positive sources but " + std::to_string(batch.pos_dst.size()) +
                                   " destinations");
  }
  if (batch.pos_src.empty()) return Status::InvalidArgument("LossAndGrad: no positive edges");
  if (batch.neg_dst.empty()) {
    return Status::InvalidArgument("LossAndGrad: no negative destinations (k == 0)");
  }
  SKIFF_RETURN_IF_ERROR(CheckIndices("pos_src", batch.pos_src, rows));
  SKIFF_RETURN_IF_ERROR(CheckIndices("pos_dst", batch.pos_dst, rows));
  SKIFF_RETURN_IF_ERROR(CheckIndices("neg_dst", batch.neg_dst, rows));

  const int64_t dim = config_.dim, hidden = config_.hidden_dim;
  const auto n = static_cast<int64_t>(batch.pos_src.size());
  const auto k = static_cast<int64_t>(batch.neg_dst.size());
  const int64_t pairs = n + n * k;
  State& st = *state_;
  st.scores.resize(static_cast<size_t>(pairs));
  st.grad_scores.resize(static_cast<size_t>(pairs));
  float* pos_scores = st.scores.data();
  float* neg_scores = pos_scores + n;
  std::fill(grad_emb, grad_emb + rows * dim, 0.0f);

  // Forward: n positive scores, then the n x k negatives.
  if (config_.kind == DecoderKind::kMlp) {
    st.pair_src.assign(batch.pos_src.begin(), batch.pos_src.end());
    st.pair_dst.assign(batch.pos_dst.begin(), batch.pos_dst.end());
    CrossPairs(batch.pos_src, batch.neg_dst, &st.pair_src, &st.pair_dst);
    MlpForward(st.params, dim, hidden, emb, st.pair_src.data(), st.pair_dst.data(), pairs, &st.mlp,
               pos_scores);
  } else {
    cpu::PairScores(emb, dim, batch.pos_src.data(), batch.pos_dst.data(), n, st.relation(),
                    pos_scores);
    cpu::CrossScores(emb, dim, batch.pos_src.data(), n, batch.neg_dst.data(), k, st.relation(),
                     neg_scores);
  }

  // Loss and d loss / d scores.
  LinkLossResult result;
  result.num_positive = n;
  result.num_negative = n * k;
  float* grad_pos = st.grad_scores.data();
  float* grad_neg = grad_pos + n;
  const double inv_n = 1.0 / static_cast<double>(n);
  switch (loss) {
    case LinkLoss::kBce: {
      const double inv_nk = 1.0 / static_cast<double>(n * k);
      const double pos_sum =
          cpu::BceWithLogits(pos_scores, n, 1.0f, static_cast<float>(inv_n), grad_pos);
      const double neg_sum =
          cpu::BceWithLogits(neg_scores, n * k, 0.0f, static_cast<float>(inv_nk), grad_neg);
      result.loss = pos_sum * inv_n + neg_sum * inv_nk;
      break;
    }
    case LinkLoss::kSoftmax:
      result.loss = cpu::SoftmaxNegatives(pos_scores, neg_scores, n, k, static_cast<float>(inv_n),
                                          grad_pos, grad_neg) *
                    inv_n;
      break;
  }

  // Backward.
  if (config_.kind == DecoderKind::kMlp) {
    MlpBackward(st.params, dim, hidden, emb, st.pair_src.data(), st.pair_dst.data(), pairs,
                grad_pos, &st.mlp, grad_emb);
  } else {
    cpu::PairScoresBackward(emb, dim, batch.pos_src.data(), batch.pos_dst.data(), n, st.relation(),
                            grad_pos, grad_emb, st.relation_grad());
    cpu::CrossScoresBackward(emb, dim, batch.pos_src.data(), n, batch.neg_dst.data(), k,
                             st.relation(), grad_neg, grad_emb, st.relation_grad());
  }
  return result;
}

std::vector<Parameter> LinkDecoder::Parameters() {
  std::vector<Parameter> out;
  for (Tensor& t : state_->params) out.push_back(t.AsParameter());
  return out;
}

void LinkDecoder::ZeroGrad() {
  for (Tensor& t : state_->params) std::fill(t.grad.begin(), t.grad.end(), 0.0f);
}

}  // namespace skiff::model
