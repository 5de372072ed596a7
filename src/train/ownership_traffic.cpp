#include "skiff/train/ownership_traffic.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <utility>

#include "skiff/random.h"
#include "skiff/sampler/minibatch.h"
#include "skiff/sampler/neighbor_sampler.h"
#include "skiff/train/batch_plan.h"

namespace skiff::train {
namespace {

// The stream of RandomOwners' hash ("OWNR"), apart from every other use of the seed.
constexpr uint64_t kOwnerStream = 0x4f574e52ull;

// One batch a rank samples: its seeds and its one-process batch number.
struct RankBatch {
  int rank = 0;
  uint64_t number = 0;
  std::vector<int64_t> seeds;
};

std::vector<RankBatch> RankBatches(std::span<const int64_t> train, std::span<const int32_t> owners,
                                   int ranks, const TrafficOptions& o) {
  std::vector<std::vector<int64_t>> plan = PlanBatches(train, o.batch_size, true, o.seed, o.epoch);
  std::vector<RankBatch> out;
  if (o.rule == SeedRule::kRoundRobin) {
    for (int rank = 0; rank < ranks; ++rank) {
      std::vector<uint64_t> numbers;
      std::vector<std::vector<int64_t>> own = ShardBatches(plan, rank, ranks, &numbers);
      for (size_t i = 0; i < own.size(); ++i) {
        out.push_back(RankBatch{rank, numbers[i], std::move(own[i])});
      }
    }
    return out;
  }
  for (size_t number = 0; number < plan.size(); ++number) {
    std::vector<std::vector<int64_t>> parts(static_cast<size_t>(ranks));
    for (int64_t seed : plan[number]) parts[static_cast<size_t>(owners[seed])].push_back(seed);
    for (int rank = 0; rank < ranks; ++rank) {
      if (parts[rank].empty()) continue;
      out.push_back(RankBatch{rank, number, std::move(parts[rank])});
    }
  }
  return out;
}

// Adds one sampled batch of `rank` to *t.
void CountBatch(const sampler::MiniBatch& mb, std::span<const int32_t> owners, int rank,
                RankTraffic* t) {
  t->seeds += static_cast<int64_t>(mb.seeds.size());
  t->batches += 1;
  const auto remote = [&](int64_t local) { return owners[mb.input_nodes[local]] != rank; };
  // Block 0 (the input layer) has the most destinations: every node whose list the batch reads.
  const int64_t expanded = mb.blocks.empty() ? 0 : mb.blocks.front().num_dst;
  std::vector<int64_t> picks(static_cast<size_t>(expanded), 0);
  for (const sampler::Block& block : mb.blocks) {
    for (int64_t dst = 0; dst < block.num_dst; ++dst) {
      const int64_t row = block.indptr[dst + 1] - block.indptr[dst];
      t->neighbors += row;
      if (remote(dst)) t->remote_neighbors += row;
      picks[dst] = std::max(picks[dst], row);
    }
  }
  for (int64_t node = 0; node < expanded; ++node) {
    t->rows_expanded += 1;
    t->picks += picks[node];
    if (remote(node)) {
      t->remote_rows += 1;
      t->remote_picks += picks[node];
    }
  }
  const int64_t inputs = static_cast<int64_t>(mb.input_nodes.size());
  t->input_rows += inputs;
  for (int64_t node = 0; node < inputs; ++node) {
    if (remote(node)) t->remote_input_rows += 1;
  }
}

}  // namespace

const char* SeedRuleName(SeedRule rule) {
  return rule == SeedRule::kOwned ? "owned" : "round-robin";
}

Result<std::vector<int32_t>> PartitionOwners(std::span<const int64_t> boundaries,
                                             std::span<const int64_t> train, int ranks,
                                             std::vector<int>* first_partition) {
  if (boundaries.size() < 2 || boundaries.front() != 0) {
    return Status::InvalidArgument("partition boundaries must start at 0 and name a partition");
  }
  const int k = static_cast<int>(boundaries.size()) - 1;
  if (ranks < 1 || ranks > k) {
    return Status::InvalidArgument("cannot give " + std::to_string(ranks) + " ranks a range of " +
                                   std::to_string(k) +
                                   " partitions each: partition the dataset into at least as "
                                   "many partitions as ranks (skiff partition -k)");
  }
  // before[p]: training nodes in partitions [0, p).
  std::vector<int64_t> before(static_cast<size_t>(k) + 1, 0);
  size_t next = 0;
  for (int p = 0; p < k; ++p) {
    if (boundaries[p + 1] < boundaries[p]) {
      return Status::InvalidArgument("partition boundaries decrease at partition " +
                                     std::to_string(p));
    }
    int64_t count = 0;
    while (next < train.size() && train[next] < boundaries[p + 1]) {
      ++count;
      ++next;
    }
    before[p + 1] = before[p] + count;
  }
  if (next != train.size()) {
    return Status::InvalidArgument("training node " + std::to_string(train[next]) +
                                   " lies past the last partition");
  }
  const double total = static_cast<double>(before[k]);
  std::vector<int> first(static_cast<size_t>(ranks) + 1, 0);
  first[ranks] = k;
  for (int rank = 1; rank < ranks; ++rank) {
    const double target = total * rank / ranks;
    // Leave at least one partition for each rank before and after the cut.
    const int lo = first[rank - 1] + 1, hi = k - (ranks - rank);
    int best = lo;
    for (int p = lo; p <= hi; ++p) {
      if (std::abs(static_cast<double>(before[p]) - target) <
          std::abs(static_cast<double>(before[best]) - target)) {
        best = p;
      }
    }
    first[rank] = best;
  }
  std::vector<int32_t> owners(static_cast<size_t>(boundaries[k]));
  for (int rank = 0; rank < ranks; ++rank) {
    std::fill(owners.begin() + boundaries[first[rank]],
              owners.begin() + boundaries[first[rank + 1]], rank);
  }
  if (first_partition != nullptr) *first_partition = std::move(first);
  return owners;
}

std::vector<int32_t> RandomOwners(int64_t num_nodes, int ranks, uint64_t seed) {
  SKIFF_CHECK(ranks >= 1);
  std::vector<int32_t> owners(static_cast<size_t>(num_nodes));
  for (int64_t node = 0; node < num_nodes; ++node) {
    owners[node] = static_cast<int32_t>(HashKey(seed, kOwnerStream, static_cast<uint64_t>(node)) %
                                        static_cast<uint64_t>(ranks));
  }
  return owners;
}

uint64_t RankTraffic::remote_adjacency_bytes() const {
  return static_cast<uint64_t>(remote_picks + remote_rows) * sizeof(int64_t);
}

uint64_t RankTraffic::remote_feature_bytes(uint64_t feature_row_bytes) const {
  return static_cast<uint64_t>(remote_input_rows) * feature_row_bytes;
}

void RankTraffic::Add(const RankTraffic& o) {
  seeds += o.seeds;
  batches += o.batches;
  neighbors += o.neighbors;
  remote_neighbors += o.remote_neighbors;
  rows_expanded += o.rows_expanded;
  remote_rows += o.remote_rows;
  picks += o.picks;
  remote_picks += o.remote_picks;
  input_rows += o.input_rows;
  remote_input_rows += o.remote_input_rows;
}

Result<std::vector<RankTraffic>> MeasureOwnershipTraffic(const sampler::GraphSource& graph,
                                                         std::span<const int64_t> train,
                                                         std::span<const int32_t> owners, int ranks,
                                                         const TrafficOptions& options) {
  if (ranks < 1) return Status::InvalidArgument("ranks must be at least 1");
  if (options.batch_size < 1) return Status::InvalidArgument("the batch size must be positive");
  if (static_cast<int64_t>(owners.size()) != graph.num_nodes()) {
    return Status::InvalidArgument("ownership covers " + std::to_string(owners.size()) +
                                   " nodes but the graph has " + std::to_string(graph.num_nodes()));
  }
  for (size_t node = 0; node < owners.size(); ++node) {
    if (owners[node] < 0 || owners[node] >= ranks) {
      return Status::InvalidArgument("node " + std::to_string(node) + " is owned by rank " +
                                     std::to_string(owners[node]) + " of " + std::to_string(ranks));
    }
  }
  for (int64_t seed : train) {
    if (seed < 0 || seed >= graph.num_nodes()) {
      return Status::InvalidArgument("training node " + std::to_string(seed) + " out of range");
    }
  }
  const sampler::NeighborSampler sampler(graph, options.fanouts);
  const std::vector<RankBatch> batches = RankBatches(train, owners, ranks, options);

  const int threads = std::max(1, options.threads);
  std::vector<std::vector<RankTraffic>> partial(
      static_cast<size_t>(threads), std::vector<RankTraffic>(static_cast<size_t>(ranks)));
  std::vector<Status> errors(static_cast<size_t>(threads));
  std::atomic<size_t> next{0};
  const auto work = [&](int thread) {
    sampler::MiniBatch mb;
    for (size_t i = next.fetch_add(1); i < batches.size(); i = next.fetch_add(1)) {
      const RankBatch& b = batches[i];
      const uint64_t rng_seed =
          sampler::BatchSeed(options.seed, kTrainStream, options.epoch, b.number);
      Status st = sampler.Sample(b.seeds, rng_seed, &mb);
      if (!st.ok()) {
        errors[thread] = std::move(st);
        next.store(batches.size());
        return;
      }
      CountBatch(mb, owners, b.rank, &partial[thread][b.rank]);
    }
  };
  std::vector<std::thread> pool;
  for (int thread = 1; thread < threads; ++thread) pool.emplace_back(work, thread);
  work(0);
  for (std::thread& t : pool) t.join();
  for (Status& st : errors) {
    if (!st.ok()) return std::move(st);
  }
  std::vector<RankTraffic> total(static_cast<size_t>(ranks));
  for (const auto& per_thread : partial) {
    for (int rank = 0; rank < ranks; ++rank) total[rank].Add(per_thread[rank]);
  }
  return total;
}

}  // namespace skiff::train
