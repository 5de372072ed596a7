#include "skiff/train/owned_pass.h"

#include <xxhash.h>

#include <cinttypes>
#include <cstdio>

namespace skiff::train {

std::vector<int64_t> OwnedPart(std::span<const int64_t> batch, const NodeRanges& ranges, int rank) {
  std::vector<int64_t> part;
  for (int64_t v : batch) {
    if (v >= ranges.begin(rank) && v < ranges.end(rank)) part.push_back(v);
  }
  return part;
}

Status RunOwnedPass(const sampler::NeighborSampler& sampler, const sampler::FeatureSource& features,
                    const NodeRanges& ranges, int rank, const OwnedPassSpec& spec,
                    const std::function<Status(PreparedBatch&)>& consume) {
  PreparedBatch prepared;
  for (size_t b = 0; b < spec.plan.size(); ++b) {
    const std::vector<int64_t>& whole = spec.plan[b];
    prepared.index = static_cast<int64_t>(b);
    prepared.sample_seed = sampler::BatchSeed(spec.seed, spec.stream, spec.epoch, b);
    const std::vector<int64_t> part = OwnedPart(whole, ranges, rank);
    SKIFF_RETURN_IF_ERROR(sampler.Sample(part, prepared.sample_seed, &prepared.batch));
    sampler::MiniBatch& mb = prepared.batch;
    mb.labels.resize(mb.seeds.size());
    for (size_t i = 0; i < mb.seeds.size(); ++i) {
      mb.labels[i] = spec.labels != nullptr ? (*spec.labels)[mb.seeds[i]] : -1;
    }
    prepared.whole_labelled = 0;
    if (spec.labels != nullptr) {
      for (int64_t v : whole) prepared.whole_labelled += (*spec.labels)[v] >= 0 ? 1 : 0;
    }
    const size_t values =
        spec.gather_features ? mb.input_nodes.size() * static_cast<size_t>(features.dim()) : 0;
    prepared.features.resize(values);
    if (spec.gather_features) {
      SKIFF_RETURN_IF_ERROR(features.Gather(mb.input_nodes, prepared.features.data()));
    }
    SKIFF_RETURN_IF_ERROR(consume(prepared));
  }
  return Status::Ok();
}

namespace {

template <typename T>
void Put(XXH3_state_t* state, const std::vector<T>& values) {
  const uint64_t size = values.size();
  XXH3_64bits_update(state, &size, sizeof(size));
  XXH3_64bits_update(state, values.data(), values.size() * sizeof(T));
}

}  // namespace

std::string BatchDigestLine(uint64_t epoch, uint64_t stream, uint64_t batch, int rank,
                            const sampler::MiniBatch& mb, std::span<const float> features) {
  XXH3_state_t* state = XXH3_createState();
  SKIFF_CHECK(state != nullptr);
  XXH3_64bits_reset(state);
  Put(state, mb.seeds);
  Put(state, mb.input_nodes);
  for (const sampler::Block& block : mb.blocks) {
    const int64_t sizes[2] = {block.num_dst, block.num_src};
    XXH3_64bits_update(state, sizes, sizeof(sizes));
    Put(state, block.indptr);
    Put(state, block.indices);
    Put(state, block.src_degree);
  }
  const uint64_t graph = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  const uint64_t rows = XXH3_64bits(features.data(), features.size_bytes());
  char line[256];
  std::snprintf(line, sizeof(line),
                "epoch %" PRIu64 " stream %" PRIu64 " batch %" PRIu64
                " rank %d seeds %zu inputs %zu graph %016" PRIx64 " features %016" PRIx64,
                epoch, stream, batch, rank, mb.seeds.size(), mb.input_nodes.size(), graph, rows);
  return line;
}

}  // namespace skiff::train
