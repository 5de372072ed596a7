#include "skiff/generate/sbm_model.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace skiff::generate {
namespace {

// Independent random streams derived from the one seed.
constexpr uint64_t kPermutationStream = 1;
constexpr uint64_t kEdgeStream = 2;
constexpr uint64_t kFeatureStream = 3;
constexpr uint64_t kCentroidStream = 4;

double Gaussian(Rng& rng) {
  const double u1 = rng.Uniform();
  const double u2 = rng.Uniform();
  return std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * M_PI * u2);
}

}  // namespace

// --- NodePermutation
// ------------------------------------------------------------------------------

NodePermutation::NodePermutation(uint64_t n, uint64_t seed) : n_(n) {
  SKIFF_CHECK(n >= 1 && n < (uint64_t{1} << 62));
  a_ = static_cast<uint64_t>(std::ceil(std::sqrt(static_cast<double>(n))));
  while (a_ > 1 && (a_ - 1) * (a_ - 1) >= n) --a_;  // guard the floating-point square root
  while (a_ * a_ < n) ++a_;
  b_ = (n + a_ - 1) / a_;
  for (int r = 0; r < kRounds; ++r) keys_[r] = HashKey(seed, kPermutationStream, r);
}

uint64_t NodePermutation::Round(int round, uint64_t half, uint64_t range) const {
  // Multiply-shift maps the 64-bit hash onto [0, range) without a division.
  return static_cast<uint64_t>((static_cast<__uint128_t>(Mix64(keys_[round] ^ half)) * range) >>
                               64);
}

uint64_t NodePermutation::Encrypt(uint64_t x) const {
  uint64_t hi = x / b_, lo = x % b_;
  uint64_t size_hi = a_, size_lo = b_;
  for (int r = 0; r < kRounds; ++r) {
    // (hi < size_hi, lo < size_lo) -> (lo, (hi + F(lo)) mod size_hi): the halves swap sizes.
    uint64_t next = hi + Round(r, lo, size_hi);
    if (next >= size_hi) next -= size_hi;
    hi = lo;
    lo = next;
    std::swap(size_hi, size_lo);
  }
  return hi * b_ + lo;
}

uint64_t NodePermutation::Decrypt(uint64_t y) const {
  uint64_t hi = y / b_, lo = y % b_;
  for (int r = kRounds - 1; r >= 0; --r) {
    // Round r took (h < size_r, l) to (l, (h + F(l)) mod size_r), size_r = a_ for even r.
    const uint64_t size_r = (r % 2 == 0) ? a_ : b_;
    const uint64_t f = Round(r, hi, size_r);
    const uint64_t prev_hi = lo >= f ? lo - f : lo + size_r - f;
    lo = hi;
    hi = prev_hi;
  }
  return hi * b_ + lo;
}

// Cycle walking: applying the permutation of [0, a*b) until the value lands in [0, n) restricts it
// to a permutation of [0, n). a*b - n < a, so almost always one step.
uint64_t NodePermutation::Forward(uint64_t x) const {
  SKIFF_CHECK(x < n_);
  uint64_t y = Encrypt(x);
  while (y >= n_) y = Encrypt(y);
  return y;
}

uint64_t NodePermutation::Inverse(uint64_t y) const {
  SKIFF_CHECK(y < n_);
  uint64_t x = Decrypt(y);
  while (x >= n_) x = Decrypt(x);
  return x;
}

// --- SbmModel
// -------------------------------------------------------------------------------------

namespace {

// r orthonormal vectors of dimension f (column-major: column j at j * f), drawn from `rng`:
// Gaussian columns, each made orthogonal to the earlier ones (Gram-Schmidt) and normalised.
std::vector<double> RandomOrthonormalBasis(int64_t f, int64_t r, Rng& rng) {
  std::vector<double> basis(static_cast<size_t>(f * r));
  for (int64_t j = 0; j < r; ++j) {
    double* col = &basis[static_cast<size_t>(j * f)];
    for (int64_t k = 0; k < f; ++k) col[k] = Gaussian(rng);
    for (int64_t prev = 0; prev < j; ++prev) {
      const double* p = &basis[static_cast<size_t>(prev * f)];
      double dot = 0;
      for (int64_t k = 0; k < f; ++k) dot += col[k] * p[k];
      for (int64_t k = 0; k < f; ++k) col[k] -= dot * p[k];
    }
    double norm = 0;
    for (int64_t k = 0; k < f; ++k) norm += col[k] * col[k];
    norm = std::sqrt(norm);
    for (int64_t k = 0; k < f; ++k) col[k] = norm > 0 ? col[k] / norm : 0;
  }
  return basis;
}

// c unit vectors (c x f, row-major), each a Gaussian combination of the basis's r columns.
std::vector<float> RandomCentroids(int64_t c, int64_t f, int64_t r,
                                   const std::vector<double>& basis, Rng& rng) {
  std::vector<float> centroids(static_cast<size_t>(c * f), 0.0f);
  std::vector<double> mu(static_cast<size_t>(f));
  for (int64_t cls = 0; cls < c; ++cls) {
    std::fill(mu.begin(), mu.end(), 0.0);
    for (int64_t j = 0; j < r; ++j) {
      const double z = Gaussian(rng);
      for (int64_t k = 0; k < f; ++k) {
        mu[static_cast<size_t>(k)] += z * basis[static_cast<size_t>(j * f + k)];
      }
    }
    double norm = 0;
    for (double x : mu) norm += x * x;
    norm = std::sqrt(norm);
    for (int64_t k = 0; k < f; ++k) {
      centroids[static_cast<size_t>(cls * f + k)] =
          static_cast<float>(norm > 0 ? mu[static_cast<size_t>(k)] / norm : 0.0);
    }
  }
  return centroids;
}

}  // namespace

SbmModel::SbmModel(const GenerateOptions& options)
    : options_(options),
      n_(options.num_nodes),
      c_(options.num_classes),
      perm_(static_cast<uint64_t>(options.num_nodes), options.seed) {
  alpha_ = 1.0 / (options_.power_law_exponent - 1.0);
  FitWeightOffset();
  offset_pow_ = std::pow(offset_, 1.0 - alpha_);
  total_weight_small_ = Cumulative(static_cast<double>(n_ / c_));
  total_weight_large_ = Cumulative(static_cast<double>(n_ / c_ + 1));
  // Class centroids: unit vectors in a random r-dimensional subspace, r = min(F, C).
  const int64_t f = options_.feature_dim;
  const int64_t r = std::min(f, c_);
  Rng rng(HashKey(options_.seed, kCentroidStream, 0));
  const std::vector<double> basis = RandomOrthonormalBasis(f, r, rng);
  centroids_ = RandomCentroids(c_, f, r, basis, rng);
}

void SbmModel::FitWeightOffset() {
  // The largest expected degree is the structural cutoff sqrt(N * avg_degree) (larger hubs would
  // force degree correlations), never below the mean; found by bisection on log10(offset).
  const int64_t class_size = (n_ + c_ - 1) / c_;
  const double target =
      std::max(options_.avg_degree, std::sqrt(static_cast<double>(n_) * options_.avg_degree));
  double lo = -6, hi = 15;  // log10(offset); the top degree decreases as the offset grows
  auto top_degree = [&](double log_offset) {
    offset_ = std::pow(10.0, log_offset);
    return ExpectedOutDegreeOfRank(0, class_size);
  };
  if (top_degree(lo) <= target) {
    offset_ = std::pow(10.0, lo);
  } else if (top_degree(hi) >= target) {
    offset_ = std::pow(10.0, hi);
  } else {
    for (int iter = 0; iter < 200 && hi - lo > 1e-9; ++iter) {
      const double mid = 0.5 * (lo + hi);
      (top_degree(mid) > target ? lo : hi) = mid;
    }
    offset_ = std::pow(10.0, hi);
  }
}

double SbmModel::Cumulative(double x) const {
  if (std::fabs(alpha_ - 1.0) < 1e-9) return std::log1p(x / offset_);
  const double e = 1.0 - alpha_;
  return (std::pow(x + offset_, e) - std::pow(offset_, e)) / e;
}

double SbmModel::InverseCumulative(double u) const {
  if (std::fabs(alpha_ - 1.0) < 1e-9) return offset_ * std::expm1(u);
  const double e = 1.0 - alpha_;
  const double base = offset_pow_ + e * u;
  if (base <= 0) return std::numeric_limits<double>::max();  // clamped by the caller
  return std::pow(base, 1.0 / e) - offset_;
}

double SbmModel::ExpectedOutDegreeOfRank(int64_t rank, int64_t class_size) const {
  const double total = Cumulative(static_cast<double>(class_size));
  const double w =
      Cumulative(static_cast<double>(rank + 1)) - Cumulative(static_cast<double>(rank));
  return options_.avg_degree * static_cast<double>(class_size) * w / total;
}

int64_t SbmModel::SampleRank(Rng& rng, int64_t class_size) const {
  const double total = class_size == n_ / c_ ? total_weight_small_ : total_weight_large_;
  const double x = InverseCumulative(rng.Uniform() * total);
  if (!(x >= 0)) return 0;
  if (x >= static_cast<double>(class_size - 1)) return class_size - 1;
  return static_cast<int64_t>(x);
}

int32_t SbmModel::ClassOf(int64_t node) const {
  return static_cast<int32_t>(perm_.Inverse(static_cast<uint64_t>(node)) %
                              static_cast<uint64_t>(c_));
}

double SbmModel::ExpectedOutDegree(int64_t node) const {
  const auto internal = static_cast<int64_t>(perm_.Inverse(static_cast<uint64_t>(node)));
  return ExpectedOutDegreeOfRank(internal / c_, ClassSize(internal % c_));
}

int64_t SbmModel::Row(int64_t node, std::vector<int64_t>* row,
                      std::vector<uint64_t>* scratch) const {
  const auto internal = static_cast<int64_t>(perm_.Inverse(static_cast<uint64_t>(node)));
  const int64_t cls = internal % c_;
  const double expected = ExpectedOutDegreeOfRank(internal / c_, ClassSize(cls));
  Rng rng(HashKey(options_.seed, kEdgeStream, static_cast<uint64_t>(node)));
  const double whole = std::floor(expected);
  const auto degree = static_cast<int64_t>(whole) + (rng.Uniform() < expected - whole ? 1 : 0);
  scratch->clear();
  for (int64_t e = 0; e < degree; ++e) {
    int64_t target_cls = cls;
    if (c_ > 1 && rng.Uniform() >= options_.homophily) {
      target_cls = (cls + 1 + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(c_ - 1)))) % c_;
    }
    const int64_t rank = SampleRank(rng, ClassSize(target_cls));
    const auto target =
        static_cast<int64_t>(perm_.Forward(static_cast<uint64_t>(target_cls + rank * c_)));
    if (target == node) continue;
    // The low bit records "same class" so the count survives de-duplication.
    scratch->push_back((static_cast<uint64_t>(target) << 1) | (target_cls == cls ? 1u : 0u));
  }
  std::sort(scratch->begin(), scratch->end());
  scratch->erase(std::unique(scratch->begin(), scratch->end()), scratch->end());
  row->resize(scratch->size());
  int64_t same = 0;
  for (size_t k = 0; k < scratch->size(); ++k) {
    (*row)[k] = static_cast<int64_t>((*scratch)[k] >> 1);
    same += static_cast<int64_t>((*scratch)[k] & 1);
  }
  return same;
}

void SbmModel::Features(int64_t node, float* out) const {
  const int64_t cls = ClassOf(node);
  const float* mu = &centroids_[static_cast<size_t>(cls * options_.feature_dim)];
  const auto sigma = static_cast<float>(options_.feature_noise);
  Rng rng(HashKey(options_.seed, kFeatureStream, static_cast<uint64_t>(node)));
  for (int64_t k = 0; k < options_.feature_dim; ++k) out[k] = mu[k] + sigma * rng.Normalish();
}

}  // namespace skiff::generate
