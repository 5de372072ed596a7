#include "skiff/train/batch_stream.h"

#include <chrono>

#include "skiff/mutex.h"

namespace skiff::train {

BatchStream::BatchStream(const sampler::NeighborSampler& sampler,
                         const sampler::FeatureSource& features, const std::vector<int32_t>* labels,
                         std::vector<std::vector<int64_t>> batches, BatchStreamOptions options)
    : sampler_(sampler),
      features_(features),
      labels_(labels),
      batches_(std::move(batches)),
      options_(options) {
  SKIFF_CHECK(options_.threads >= 1 && options_.capacity >= 1);
  slots_.resize(options_.capacity);
  const int threads =
      static_cast<int>(std::min<int64_t>(options_.threads, std::max<int64_t>(1, num_batches())));
  for (int t = 0; t < threads; ++t) workers_.emplace_back([this] { Worker(); });
}

BatchStream::~BatchStream() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  for (auto& w : workers_) w.join();
}

bool BatchStream::ClaimReady() const {
  return stop_ || next_to_claim_ >= num_batches() ||
         next_to_claim_ < next_to_deliver_ + static_cast<int64_t>(options_.capacity);
}

bool BatchStream::DeliveryReady() const {
  if (slots_[next_to_deliver_ % options_.capacity].has_value()) return true;
  if (!stop_) return false;
  // A stopped stream may never fill this slot: the error sits in an earlier-claimed slot.
  for (const auto& s : slots_) {
    if (s.has_value() && !s->ok()) return true;
  }
  return false;
}

void BatchStream::Worker() {
  using Clock = std::chrono::steady_clock;
  PreparedBatch prepared;
  while (Claim(&prepared)) {
    const auto t0 = Clock::now();
    Status st = Status::Ok();
    if (options_.sample) {
      st = sampler_.Sample(batches_[prepared.index], prepared.sample_seed, &prepared.batch);
    } else {
      prepared.batch.seeds = batches_[prepared.index];  // the model samples it
    }
    const auto t1 = Clock::now();
    if (st.ok()) st = LabelAndGather(&prepared);
    const auto t2 = Clock::now();
    Deliver(std::move(prepared), st, std::chrono::duration<double, std::nano>(t1 - t0).count(),
            std::chrono::duration<double, std::nano>(t2 - t1).count());
    prepared = PreparedBatch();
  }
}

bool BatchStream::Claim(PreparedBatch* prepared) {
  {
    MutexLock lock(&mu_);
    while (!ClaimReady()) cv_.Wait(&mu_);
    if (stop_ || next_to_claim_ >= num_batches()) return false;
    prepared->index = next_to_claim_++;
    if (!free_features_.empty()) {
      prepared->features = std::move(free_features_.back());
      free_features_.pop_back();
    }
  }
  const auto b = static_cast<size_t>(prepared->index);
  const uint64_t number = options_.batch_numbers.empty() ? b : options_.batch_numbers[b];
  prepared->sample_seed =
      sampler::BatchSeed(options_.seed, options_.stream, options_.epoch, number);
  prepared->unsampled = !options_.sample;
  return true;
}

Status BatchStream::LabelAndGather(PreparedBatch* prepared) const {
  sampler::MiniBatch& b = prepared->batch;
  b.labels.resize(b.seeds.size());
  for (size_t i = 0; i < b.seeds.size(); ++i) {
    b.labels[i] = labels_ != nullptr ? (*labels_)[b.seeds[i]] : -1;
  }
  const size_t values =
      options_.gather_features ? b.input_nodes.size() * static_cast<size_t>(features_.dim()) : 0;
  if (prepared->features.capacity() < values) {
    // Too small to reuse: drop it rather than copy it over, and leave headroom.
    prepared->features = FloatBuffer();
    prepared->features.reserve(values + values / 8);
  }
  prepared->features.resize(values);
  if (values == 0) return Status::Ok();
  return features_.Gather(b.input_nodes, prepared->features.data());
}

void BatchStream::Deliver(PreparedBatch prepared, const Status& status, double sample_ns,
                          double gather_ns) {
  {
    MutexLock lock(&mu_);
    sample_ns_ += sample_ns;
    gather_ns_ += gather_ns;
    const int64_t index = prepared.index;
    auto& slot = slots_[index % options_.capacity];
    if (status.ok()) {
      slot.emplace(std::move(prepared));
    } else {
      slot.emplace(status.WithContext("batch " + std::to_string(index)));
      stop_ = true;  // no further claims; the consumer reports this error when it is due
    }
  }
  cv_.SignalAll();
}

Result<std::optional<PreparedBatch>> BatchStream::Next() {
  MutexLock lock(&mu_);
  if (next_to_deliver_ >= num_batches()) return std::optional<PreparedBatch>();
  auto& slot = slots_[next_to_deliver_ % options_.capacity];
  const auto start = std::chrono::steady_clock::now();
  while (!DeliveryReady()) cv_.Wait(&mu_);
  consumer_wait_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!slot.has_value()) {
    for (auto& s : slots_) {
      if (s.has_value() && !s->ok()) return s->status();
    }
  }
  Result<PreparedBatch> r = std::move(*slot);
  slot.reset();
  if (!r.ok()) {
    next_to_deliver_ = num_batches();
    return r.status();
  }
  ++next_to_deliver_;
  lock.Unlock();
  cv_.SignalAll();
  return std::optional<PreparedBatch>(std::move(r).value());
}

void BatchStream::Recycle(PreparedBatch&& done) {
  MutexLock lock(&mu_);
  if (free_features_.size() < options_.capacity && done.features.capacity() > 0) {
    free_features_.push_back(std::move(done.features));
  }
}

double BatchStream::sample_busy_seconds() const {
  MutexLock lock(&mu_);
  return sample_ns_ * 1e-9;
}
double BatchStream::gather_busy_seconds() const {
  MutexLock lock(&mu_);
  return gather_ns_ * 1e-9;
}

}  // namespace skiff::train
