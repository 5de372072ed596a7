// LinkDecoder (include/skiff/model/link_decoder.h) on the CPU kernels: dot and DistMult through
// the pair and cross scores of kernels/cpu/link_score.h, the MLP decoder through PairHadamard,
// Gemm, BiasAdd and ReLU.
#include "skiff/model/link_decoder.h"

#include <algorithm>
#include <numeric>
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

// The positive cells of the gae loss's rows x rows score matrix, as sorted distinct indices
// u * rows + v: every self pair and each positive in both directions.
std::vector<int64_t> GaePositiveCells(const EdgeBatchRows& batch, int64_t rows) {
  std::vector<int64_t> cells;
  cells.reserve(2 * batch.pos_src.size() + static_cast<size_t>(rows));
  for (size_t i = 0; i < batch.pos_src.size(); ++i) {
    const int64_t u = batch.pos_src[i], v = batch.pos_dst[i];
    cells.push_back(u * rows + v);
    cells.push_back(v * rows + u);
  }
  for (int64_t u = 0; u < rows; ++u) cells.push_back(u * rows + u);
  std::sort(cells.begin(), cells.end());
  cells.erase(std::unique(cells.begin(), cells.end()), cells.end());
  return cells;
}

// The gae loss (link_decoder.h) over `rows` rows with the given positive cells, for dot and
// DistMult: scores every ordered pair as one GEMM, writes each cell's gradient over its score
// (every cell as a negative first, then the positives corrected), and adds d loss / d emb into
// grad_emb and d loss / d relation into `grad_rel` (may be null). Returns the loss.
double GaeLoss(const float* emb, int64_t dim, int64_t rows, std::span<const int64_t> positives,
               const float* rel, float* grad_rel, std::vector<int32_t>* all_rows,
               std::vector<float>* scores, std::vector<float>* positive_scores, float* grad_emb) {
  const int64_t cells = rows * rows;
  const auto p = static_cast<int64_t>(positives.size());
  SKIFF_CHECK(p > 0 && p < cells);
  all_rows->resize(static_cast<size_t>(rows));
  std::iota(all_rows->begin(), all_rows->end(), 0);
  float* s = EnsureSize(*scores, cells);
  cpu::CrossScores(emb, dim, all_rows->data(), rows, all_rows->data(), rows, rel, s);
  float* pos = EnsureSize(*positive_scores, p);
  for (int64_t i = 0; i < p; ++i) pos[i] = s[positives[static_cast<size_t>(i)]];

  const double pos_weight = static_cast<double>(cells - p) / static_cast<double>(p);
  const double norm = static_cast<double>(cells) / (2.0 * static_cast<double>(cells - p));
  const double scale = norm / static_cast<double>(cells);  // norm x the mean over the cells
  // BceWithLogits reads each score before it writes that cell's gradient, so s is its own output.
  double sum = cpu::BceWithLogits(s, cells, 0.0f, static_cast<float>(scale), s);
  for (int64_t i = 0; i < p; ++i) {
    float grad = 0;
    const double as_positive =
        cpu::BceWithLogits(&pos[i], 1, 1.0f, static_cast<float>(scale * pos_weight), &grad);
    const double as_negative = cpu::BceWithLogits(&pos[i], 1, 0.0f, 0.0f, nullptr);
    sum += pos_weight * as_positive - as_negative;
    s[positives[static_cast<size_t>(i)]] = grad;
  }
  cpu::CrossScoresBackward(emb, dim, all_rows->data(), rows, all_rows->data(), rows, rel, s,
                           grad_emb, grad_rel);
  return sum * scale;
}

}  // namespace

Status CheckLossFor(DecoderKind decoder, LinkLoss loss) {
  if (loss == LinkLoss::kGae && decoder == DecoderKind::kMlp) {
    return Status::InvalidArgument(
        "--link-loss gae scores every pair of a batch's nodes, which the mlp decoder would "
        "evaluate pair by pair; use --decoder dot or distmult with it");
  }
  return Status::Ok();
}

int64_t LossScratchBytes(const DecoderConfig& config, LinkLoss loss, int64_t rows, int64_t n,
                         int64_t k) {
  constexpr int64_t kFloat = sizeof(float);
  if (loss == LinkLoss::kGae) {
    // The R x R scores (gradients written over them), each positive cell's index and score (at
    // most 2n + R), the row list, and CrossScores' gathered rows (2 R dim floats backward); in
    // double, saturated, since R^2 of a huge batch passes int64's range.
    const double r = static_cast<double>(rows);
    const double bytes = r * r * kFloat + (2.0 * static_cast<double>(n) + r) * (8 + kFloat) +
                         r * 4 + 2 * r * static_cast<double>(config.dim) * kFloat;
    constexpr double kMost = static_cast<double>(int64_t{1} << 62);
    return static_cast<int64_t>(std::min(bytes, kMost));
  }
  const int64_t pairs = n + n * k;
  int64_t bytes = 2 * pairs * kFloat + 2 * (n + k) * config.dim * kFloat;
  if (config.kind == DecoderKind::kMlp) {
    bytes += 2 * pairs * 4 + pairs * 2 * (config.dim + config.hidden_dim) * kFloat;
  }
  return bytes;
}

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

Status LinkDecoder::Cross(const float* emb, int64_t rows, std::span<const int32_t> src,
                          std::span<const int32_t> cand, bool alone,
                          std::vector<float>* scores) const {
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
  } else if (alone) {
    // Each score alone (not one GEMM): candidates equal to each other tie exactly, whatever the
    // number of candidates of the call, so rankings do not depend on how they were chunked.
    cpu::CrossPairScores(emb, config_.dim, src.data(), n, cand.data(), k, state_->relation(),
                         scores->data());
  } else {
    cpu::CrossScores(emb, config_.dim, src.data(), n, cand.data(), k, state_->relation(),
                     scores->data());
  }
  return Status::Ok();
}

Status LinkDecoder::ScoreCross(const float* emb, int64_t rows, std::span<const int32_t> src,
                               std::span<const int32_t> cand, std::vector<float>* scores) const {
  return Cross(emb, rows, src, cand, /*alone=*/false, scores);
}

Status LinkDecoder::ScoreCandidates(const float* emb, int64_t rows, int32_t src,
                                    std::span<const int32_t> cand,
                                    std::vector<float>* scores) const {
  return Cross(emb, rows, std::span<const int32_t>(&src, 1), cand, /*alone=*/true, scores);
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
  SKIFF_RETURN_IF_ERROR(CheckLossFor(config_.kind, loss));
  if (loss == LinkLoss::kGae) return GaeLossAndGrad(emb, rows, batch, grad_emb);

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
    case LinkLoss::kGae:
      SKIFF_CHECK(false);  // GaeLossAndGrad
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

Result<LinkLossResult> LinkDecoder::GaeLossAndGrad(const float* emb, int64_t rows,
                                                   const EdgeBatchRows& batch, float* grad_emb) {
  const std::vector<int64_t> positives = GaePositiveCells(batch, rows);
  const int64_t cells = rows * rows;
  const auto p = static_cast<int64_t>(positives.size());
  if (p == cells) {
    return Status::InvalidArgument("LossAndGrad: every pair of the batch's " +
                                   std::to_string(rows) +
                                   " nodes is positive, so the gae loss has no negative pair");
  }
  State& st = *state_;
  std::fill(grad_emb, grad_emb + rows * config_.dim, 0.0f);
  LinkLossResult result;
  result.num_positive = p;
  result.num_negative = cells - p;
  result.loss = GaeLoss(emb, config_.dim, rows, positives, st.relation(), st.relation_grad(),
                        &st.pair_src, &st.scores, &st.grad_scores, grad_emb);
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
