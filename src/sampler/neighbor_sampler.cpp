#include "skiff/sampler/neighbor_sampler.h"

#include <algorithm>
#include <span>
#include <sstream>
#include <string>

#include "skiff/neighbor_draw.h"
#include "skiff/prefetch.h"
#include "skiff/sampler/ordered_draw.h"

namespace skiff::sampler {

// Map from global node ID to local ID, in one of two forms chosen per batch:
//   dense  an array indexed by node ID, when it is no larger than the hash table would be (4 bytes
//          per graph node against 32 per expected batch node): one 4-byte lookup per pick, and on
//          a partitioned graph a node's neighbours have nearby IDs, so lookups share cache lines;
//          emptied by resetting only the entries the batch set;
//   hash   open addressing, a key and its value in one 16-byte slot (one cache line per lookup).
// Batches reach hundreds of thousands of nodes, so either table is larger than the caches and
// lookups miss: MapAll() starts the misses of the keys a few ahead of the one it maps (on
// the default model's batch the map's misses were half of the sampler's time).
class LocalIds {
 public:
  // Empties the map for a batch of about `expected` nodes of a graph of `num_nodes`. A sampler
  // thread reuses one map for every batch: its arrays keep their size (fresh ones cost page
  // faults); the hash table grows on demand and is replaced when 4x larger than `expected` needs.
  void Reset(size_t expected, int64_t num_nodes) {
    for (int64_t key : dense_keys_) dense_[static_cast<size_t>(key)] = -1;
    dense_keys_.clear();
    size_t cap = 64;
    while (cap < expected * 2) cap <<= 1;
    dense_mode_ = static_cast<uint64_t>(num_nodes) * sizeof(int32_t) <= expected * kHashBytesPerKey;
    if (dense_mode_) {
      if (dense_.size() != static_cast<size_t>(num_nodes)) {
        std::vector<int32_t>(static_cast<size_t>(num_nodes), -1).swap(dense_);
      }
      return;
    }
    if (slots_.empty() || slots_.size() > 4 * cap) {
      std::vector<Slot>(std::max<size_t>(cap / 4, 64)).swap(slots_);
    } else {
      std::fill(slots_.begin(), slots_.end(), Slot{});
    }
    size_ = 0;
  }
  // Returns the local ID of `key`, inserting `next` when absent (*inserted tells which).
  int32_t FindOrInsert(int64_t key, int32_t next, bool* inserted) {
    return dense_mode_ ? FindOrInsertDense(key, next, inserted)
                       : FindOrInsertHashed(key, next, inserted);
  }

  // Maps keys[i] to ids[i], inserting each absent key with the next local ID and appending it to
  // *nodes (whose size is the next local ID). Each lookup is prefetched a few keys ahead. The map's
  // form is chosen once for all keys (a test of it per key, and the call it left out of line, cost
  // a fifth of the sampler's time).
  void MapAll(std::span<const int64_t> keys, std::vector<int64_t>* nodes, int32_t* ids) {
    if (dense_mode_) {
      MapEach(
          keys, nodes, ids, [this](int64_t key) { PrefetchRead(dense_.data() + key); },
          [this](int64_t key, int32_t next, bool* inserted) {
            return FindOrInsertDense(key, next, inserted);
          });
    } else {
      MapEach(
          keys, nodes, ids,
          [this](int64_t key) { PrefetchRead(slots_.data() + (Hash(key) & (slots_.size() - 1))); },
          [this](int64_t key, int32_t next, bool* inserted) {
            return FindOrInsertHashed(key, next, inserted);
          });
    }
  }

 private:
  template <typename PrefetchFn, typename FindFn>
  static void MapEach(std::span<const int64_t> keys, std::vector<int64_t>* nodes, int32_t* ids,
                      PrefetchFn prefetch, FindFn find) {
    constexpr size_t kDistance = 16;  // prefetch distance, in keys
    const size_t n = keys.size();
    for (size_t i = 0; i < n; ++i) {
      if (i + kDistance < n) prefetch(keys[i + kDistance]);
      bool inserted = false;
      ids[i] = find(keys[i], static_cast<int32_t>(nodes->size()), &inserted);
      if (inserted) nodes->push_back(keys[i]);
    }
  }
  int32_t FindOrInsertDense(int64_t key, int32_t next, bool* inserted) {
    int32_t& value = dense_[static_cast<size_t>(key)];
    *inserted = value < 0;
    if (*inserted) {
      value = next;
      dense_keys_.push_back(key);
    }
    return value;
  }
  int32_t FindOrInsertHashed(int64_t key, int32_t next, bool* inserted) {
    if ((size_ + 1) * 2 > slots_.size()) Grow();
    const size_t mask = slots_.size() - 1;
    size_t i = Hash(key) & mask;
    while (true) {
      Slot& slot = slots_[i];
      if (slot.key == key) {
        *inserted = false;
        return slot.value;
      }
      if (slot.key < 0) {
        slot = Slot{key, next};
        ++size_;
        *inserted = true;
        return next;
      }
      i = (i + 1) & mask;
    }
  }

  static constexpr uint64_t kHashBytesPerKey = 32;  // 16-byte slots at <= 50% load
  struct Slot {
    int64_t key = -1;  // -1: empty
    int32_t value = 0;
  };
  static size_t Hash(int64_t key) {
    uint64_t x = static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(x ^ (x >> 32));
  }
  void Grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.key < 0) continue;
      size_t i = Hash(s.key) & mask;
      while (slots_[i].key >= 0) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }
  bool dense_mode_ = false;
  std::vector<int32_t> dense_;       // dense: local ID per node, -1 when absent
  std::vector<int64_t> dense_keys_;  // dense: the keys set since the last Reset
  std::vector<Slot> slots_;          // hash
  size_t size_ = 0;                  // hash: keys held
};

Result<std::vector<int>> ParseFanouts(const std::string& text) {
  std::vector<int> fanouts;
  std::stringstream ss(text);
  std::string item;
  int index = 0;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(item, &used);
    } catch (...) {
      used = 0;
    }
    // 0 samples no neighbours: with GraphSAGE's root weight that is an MLP on the node's own
    // features, the baseline a GNN has to beat.
    if (used == 0 || used != item.size() || value < -1) {
      return Status::InvalidArgument("fanouts \"" + text + "\": element " + std::to_string(index) +
                                     " (\"" + item + "\") is not a non-negative integer or -1");
    }
    fanouts.push_back(value);
    ++index;
  }
  if (fanouts.empty()) return Status::InvalidArgument("fanouts \"" + text + "\" is empty");
  return fanouts;
}

std::string FanoutsToString(const std::vector<int>& fanouts) {
  std::string s;
  for (size_t i = 0; i < fanouts.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(fanouts[i]);
  }
  return s;
}

uint64_t BatchSeed(uint64_t seed, uint64_t stream, uint64_t epoch, uint64_t batch) {
  uint64_t state = seed;
  uint64_t h = SplitMix64Next(state);
  for (uint64_t part : {stream, epoch, batch}) {
    state = h ^ (part + 0x632BE59BD9B4E019ull);
    h = SplitMix64Next(state);
  }
  return h;
}

NeighborSampler::NeighborSampler(const GraphSource& graph, std::vector<int> fanouts,
                                 bool record_degrees)
    : graph_(graph), fanouts_(std::move(fanouts)), record_degrees_(record_degrees) {
  SKIFF_CHECK_MSG(!fanouts_.empty(), "a sampler needs at least one layer");
}

// One batch's sampling state between hops (SampleGroup interleaves batches hop by hop).
struct NeighborSampler::BatchState {
  explicit BatchState(uint64_t rng_seed) : draw_key(NodeDrawKey(rng_seed)) {}
  uint64_t draw_key;    // each node draws from NodeDrawRngFor(draw_key, node)
  size_t expected = 0;  // frontier the ID map is sized for
  // hop_begin[h]: first local ID of hop h; hop L+1's end is the batch's input_nodes.size().
  std::vector<int64_t> hop_begin;
  // Per node (local ID order): its whole-graph degree, and one uniformly random *ordered* sample of
  // row positions, drawn when the node is first expanded and long enough for every block the node
  // is a destination of. Block l takes the first fanouts_[l] of it (a uniform subset of that size),
  // so each node is sampled once and its picks in different layers are nested.
  std::vector<int64_t> degree;
  std::vector<int64_t> order_ptr{0}, order;
  std::vector<int64_t> picks;  // one hop's picks, global IDs (scratch)
};

namespace {

// The sampler thread's ID map: reused across batches (sized per batch by Reset).
LocalIds& ThreadLocalIds() {
  thread_local LocalIds local;
  return local;
}

}  // namespace

Status NeighborSampler::Sample(std::span<const int64_t> seeds, uint64_t rng_seed,
                               sampler::MiniBatch* out) const {
  const std::span<const int64_t> group[1] = {seeds};
  const uint64_t rng_seeds[1] = {rng_seed};
  sampler::MiniBatch* const outs[1] = {out};
  return SampleGroup(group, rng_seeds, outs);
}

Status NeighborSampler::SampleGroup(std::span<const std::span<const int64_t>> seeds,
                                    std::span<const uint64_t> rng_seeds,
                                    std::span<sampler::MiniBatch* const> out) const {
  SKIFF_CHECK(seeds.size() == rng_seeds.size() && seeds.size() == out.size());
  LocalIds& local = ThreadLocalIds();
  std::vector<BatchState> states;
  states.reserve(seeds.size());
  for (size_t b = 0; b < seeds.size(); ++b) {
    states.emplace_back(rng_seeds[b]);
    SKIFF_RETURN_IF_ERROR(Begin(seeds[b], &states[b], out[b], &local));
  }
  for (int hop = 0; hop < num_layers(); ++hop) {
    graph_.BeginHop(hop);
    for (size_t b = 0; b < seeds.size(); ++b) {
      // The map holds the previous step's batch; rebuild it from this batch's nodes so far.
      if (seeds.size() > 1) {
        local.Reset(states[b].expected, graph_.num_nodes());
        const std::vector<int64_t>& nodes = out[b]->input_nodes;
        bool inserted = false;
        for (size_t i = 0; i < nodes.size(); ++i) {
          local.FindOrInsert(nodes[i], static_cast<int32_t>(i), &inserted);
        }
      }
      SKIFF_RETURN_IF_ERROR(Hop(hop, &states[b], out[b], &local));
    }
  }
  for (size_t b = 0; b < seeds.size(); ++b) SKIFF_RETURN_IF_ERROR(Finish(&states[b], out[b]));
  return Status::Ok();
}

Status NeighborSampler::Begin(std::span<const int64_t> seeds, BatchState* state,
                              sampler::MiniBatch* out, LocalIds* local) const {
  const int64_t n = graph_.num_nodes();
  out->seeds.assign(seeds.begin(), seeds.end());
  out->labels.clear();
  std::vector<int64_t>& nodes = out->input_nodes;
  nodes.clear();
  // Size the ID map for the expected frontier (seeds times the running product of fanouts; at most
  // the graph, and at most 2M nodes up front), so that a batch that reaches most of a large graph
  // does not rehash ~8 times on the way.
  double expected = static_cast<double>(seeds.size()), frontier = expected;
  for (int fanout : fanouts_) {
    frontier *= fanout < 0 ? 16.0 : static_cast<double>(fanout);
    expected += frontier;
  }
  state->expected =
      static_cast<size_t>(std::min({expected, static_cast<double>(n), double{1 << 21}}));
  local->Reset(state->expected, n);
  for (int64_t s : seeds) {
    if (s < 0 || s >= n) {
      return Status::InvalidArgument("seed node " + std::to_string(s) + " is not in [0, " +
                                     std::to_string(n) + ")");
    }
    bool inserted = false;
    local->FindOrInsert(s, static_cast<int32_t>(nodes.size()), &inserted);
    if (!inserted) return Status::InvalidArgument("seed node " + std::to_string(s) + " repeated");
    nodes.push_back(s);
  }
  state->hop_begin = {0, static_cast<int64_t>(nodes.size())};
  out->blocks.resize(static_cast<size_t>(num_layers()));
  return Status::Ok();
}

// Prefetch distance of the walks over a hop's nodes, in nodes.
constexpr int64_t kNodesAhead = 8;
// The most picks per node a hop reserves room for up front: a fanout far above any degree (a
// user's "1000000" for "all") must not reserve fanout x nodes; longer samples grow the vector.
constexpr int kMaxReservedFanout = 256;

void NeighborSampler::DrawSamples(int hop, BatchState* state,
                                  const std::vector<int64_t>& nodes) const {
  // A node first expanded now is a destination of blocks 0 .. L-1-hop. Blocks whose fanout is
  // below the node's degree take a prefix of its ordered sample, so the sample is as long as the
  // largest such fanout; the others (-1, or >= degree) take the whole row.
  const int64_t begin = state->hop_begin[hop], end = state->hop_begin[hop + 1];
  // Room for the hop up front (grown one node at a time, their reallocations' copies were a few
  // per cent of the sampler's time).
  int max_fanout = 0;
  for (int l = 0; l <= num_layers() - 1 - hop; ++l) max_fanout = std::max(max_fanout, fanouts_[l]);
  const auto hop_nodes = static_cast<size_t>(end - begin);
  state->degree.reserve(state->degree.size() + hop_nodes);
  state->order_ptr.reserve(state->order_ptr.size() + hop_nodes);
  state->order.reserve(state->order.size() +
                       hop_nodes * static_cast<size_t>(std::min(max_fanout, kMaxReservedFanout)));
  OrderedDraw draw;
  for (int64_t u = begin; u < end; ++u) {
    if (u + kNodesAhead < end) graph_.Prefetch(nodes[u + kNodesAhead], /*row=*/false);
    const int64_t d = graph_.Degree(nodes[u]);
    state->degree.push_back(d);
    const int64_t longest = SampleLength(fanouts_.data(), num_layers(), hop, d);
    if (longest > 0) {
      // A uniformly ordered sample of the row's positions (neighbor_draw.h).
      NodeDrawRng rng = NodeDrawRngFor(state->draw_key, nodes[u]);
      const size_t at = state->order.size();
      state->order.resize(at + static_cast<size_t>(longest));
      draw.Draw(d, longest, rng, state->order.data() + at);
    }
    state->order_ptr.push_back(static_cast<int64_t>(state->order.size()));
  }
}

Status NeighborSampler::CollectPicks(int fanout, int64_t end, BatchState* state,
                                     const std::vector<int64_t>& nodes,
                                     sampler::Block* block) const {
  std::vector<int64_t>& flat = state->picks;
  flat.clear();
  size_t picks = 0;
  for (int64_t u = 0; u < end; ++u) {
    const int64_t d = state->degree[static_cast<size_t>(u)];
    picks += static_cast<size_t>(fanout < 0 || fanout >= d ? d : fanout);
  }
  flat.reserve(picks);
  block->indptr.assign(1, 0);
  block->indptr.reserve(static_cast<size_t>(end) + 1);
  std::vector<int64_t> positions, picked;
  for (int64_t u = 0; u < end; ++u) {
    // Two stages: a node's degree entry, then (loaded by then) its row.
    if (u + 2 * kNodesAhead < end) graph_.Prefetch(nodes[u + 2 * kNodesAhead], /*row=*/false);
    if (u + kNodesAhead < end) graph_.Prefetch(nodes[u + kNodesAhead], /*row=*/true);
    const int64_t v = nodes[u];
    const int64_t d = state->degree[u];
    if (fanout < 0 || fanout >= d) {
      SKIFF_RETURN_IF_ERROR(graph_.Neighbors(v, &picked));
      flat.insert(flat.end(), picked.begin(), picked.end());
    } else {
      // The first `fanout` of the node's ordered sample, in row order.
      positions.resize(static_cast<size_t>(fanout));
      SortPositions(d, fanout, state->order.data() + state->order_ptr[u], positions.data());
      const size_t at = flat.size();
      flat.resize(at + positions.size());
      SKIFF_RETURN_IF_ERROR(graph_.NeighborsAt(v, positions, flat.data() + at));
    }
    block->indptr.push_back(static_cast<int64_t>(flat.size()));
  }
  return Status::Ok();
}

Status NeighborSampler::Hop(int hop, BatchState* state, sampler::MiniBatch* out,
                            LocalIds* local) const {
  std::vector<int64_t>& nodes = out->input_nodes;
  const int block_index = num_layers() - 1 - hop;  // this hop builds the sources of this block
  const int64_t first = state->hop_begin[hop];
  SKIFF_RETURN_IF_ERROR(
      graph_.WillExpand({.hop = hop,
                         .draw_key = state->draw_key,
                         .fanouts = fanouts_,
                         .nodes = std::span<const int64_t>(nodes).subspan(
                             static_cast<size_t>(first), state->hop_begin[hop + 1] - first)}));
  DrawSamples(hop, state, nodes);
  sampler::Block& block = out->blocks[block_index];
  const int64_t end = state->hop_begin[hop + 1];
  block.num_dst = end;
  SKIFF_RETURN_IF_ERROR(CollectPicks(fanouts_[block_index], end, state, nodes, &block));
  block.indices.resize(state->picks.size());
  local->MapAll(state->picks, &nodes, block.indices.data());
  state->hop_begin.push_back(static_cast<int64_t>(nodes.size()));
  block.num_src = state->hop_begin.back();
  return Status::Ok();
}

Status NeighborSampler::Finish(BatchState* state, sampler::MiniBatch* out) const {
  std::vector<int64_t>& degree = state->degree;
  const std::vector<int64_t>& nodes = out->input_nodes;
  if (record_degrees_) {
    SKIFF_RETURN_IF_ERROR(
        graph_.WillExpand({.hop = num_layers(),
                           .draw_key = state->draw_key,
                           .fanouts = fanouts_,
                           .nodes = std::span<const int64_t>(nodes).subspan(degree.size())}));
    // Nodes of the outermost hop were never expanded; ask for their degrees now.
    for (size_t u = degree.size(); u < nodes.size(); ++u) degree.push_back(graph_.Degree(nodes[u]));
  }
  for (sampler::Block& b : out->blocks) {
    if (record_degrees_) {
      b.src_degree.assign(degree.begin(), degree.begin() + b.num_src);
    } else {
      b.src_degree.clear();
    }
  }
  return Status::Ok();
}

}  // namespace skiff::sampler
