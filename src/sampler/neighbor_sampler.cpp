#include "skiff/sampler/neighbor_sampler.h"

#include <algorithm>
#include <sstream>
#include <string>

namespace skiff::sampler {
namespace {

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// xoshiro256** seeded through SplitMix64.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& w : s_) w = SplitMix64(seed);
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n), n > 0 (Lemire's multiply-shift; the bias is < n / 2^64).
  int64_t Below(int64_t n) {
    return static_cast<int64_t>(
        (static_cast<unsigned __int128>(Next()) * static_cast<uint64_t>(n)) >> 64);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// Open-addressing map from global node ID to local ID.
class LocalIds {
 public:
  explicit LocalIds(size_t expected) {
    size_t cap = 64;
    while (cap < expected * 2) cap <<= 1;
    keys_.assign(cap, -1);
    values_.resize(cap);
  }
  // Returns the local ID of `key`, inserting `next` when absent (*inserted tells which).
  int32_t FindOrInsert(int64_t key, int32_t next, bool* inserted) {
    if ((size_ + 1) * 2 > keys_.size()) Grow();
    size_t mask = keys_.size() - 1;
    size_t i = Hash(key) & mask;
    while (true) {
      if (keys_[i] == key) {
        *inserted = false;
        return values_[i];
      }
      if (keys_[i] < 0) {
        keys_[i] = key;
        values_[i] = next;
        ++size_;
        *inserted = true;
        return next;
      }
      i = (i + 1) & mask;
    }
  }

 private:
  static size_t Hash(int64_t key) {
    uint64_t x = static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(x ^ (x >> 32));
  }
  void Grow() {
    std::vector<int64_t> old_keys(keys_.size() * 2, -1);
    std::vector<int32_t> old_values(keys_.size() * 2);
    old_keys.swap(keys_);
    old_values.swap(values_);
    const size_t mask = keys_.size() - 1;
    for (size_t j = 0; j < old_keys.size(); ++j) {
      if (old_keys[j] < 0) continue;
      size_t i = Hash(old_keys[j]) & mask;
      while (keys_[i] >= 0) i = (i + 1) & mask;
      keys_[i] = old_keys[j];
      values_[i] = old_values[j];
    }
  }
  std::vector<int64_t> keys_;
  std::vector<int32_t> values_;
  size_t size_ = 0;
};

// k distinct positions of [0, d) chosen uniformly (Floyd), ascending. Requires 0 < k < d.
void FloydSample(int64_t d, int64_t k, Rng& rng, std::vector<int64_t>* out) {
  out->clear();
  for (int64_t j = d - k; j < d; ++j) {
    const int64_t t = rng.Below(j + 1);
    const bool seen = std::find(out->begin(), out->end(), t) != out->end();
    out->push_back(seen ? j : t);
  }
  std::sort(out->begin(), out->end());
}

}  // namespace

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
  uint64_t h = SplitMix64(state);
  for (uint64_t part : {stream, epoch, batch}) {
    state = h ^ (part + 0x632BE59BD9B4E019ull);
    h = SplitMix64(state);
  }
  return h;
}

NeighborSampler::NeighborSampler(const GraphSource& graph, std::vector<int> fanouts,
                                 bool record_degrees)
    : graph_(graph), fanouts_(std::move(fanouts)), record_degrees_(record_degrees) {
  SKIFF_CHECK_MSG(!fanouts_.empty(), "a sampler needs at least one layer");
}

Status NeighborSampler::Sample(std::span<const int64_t> seeds, uint64_t rng_seed,
                               train::MiniBatch* out) const {
  const int num_layers = this->num_layers();
  const int64_t n = graph_.num_nodes();
  Rng rng(rng_seed);
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
  expected = std::min({expected, static_cast<double>(n), double{1 << 21}});
  LocalIds local(static_cast<size_t>(expected));
  for (int64_t s : seeds) {
    if (s < 0 || s >= n) {
      return Status::InvalidArgument("seed node " + std::to_string(s) + " is not in [0, " +
                                     std::to_string(n) + ")");
    }
    bool inserted = false;
    local.FindOrInsert(s, static_cast<int32_t>(nodes.size()), &inserted);
    if (!inserted) return Status::InvalidArgument("seed node " + std::to_string(s) + " repeated");
    nodes.push_back(s);
  }
  // hop_begin[h]: first local ID of hop h; hop L+1's end is nodes.size().
  std::vector<int64_t> hop_begin{0, static_cast<int64_t>(nodes.size())};
  // Per node (local ID order): its whole-graph degree, and one uniformly random *ordered* sample of
  // row positions, drawn when the node is first expanded and long enough for every block the node
  // is a destination of. Block l takes the first fanouts_[l] of it (a uniform subset of that size),
  // so each node is sampled once and its picks in different layers are nested.
  std::vector<int64_t> degree;
  std::vector<int64_t> order_ptr{0}, order;
  std::vector<int64_t> positions, picked;
  out->blocks.resize(num_layers);
  for (int hop = 0; hop < num_layers; ++hop) {
    const int block_index = num_layers - 1 - hop;  // this hop builds the sources of this block
    const int fanout = fanouts_[block_index];
    // A node first expanded now is a destination of blocks 0 .. block_index. Blocks whose fanout
    // is below the node's degree take a prefix of its ordered sample, so the sample is as long as
    // the largest such fanout; the others (-1, or >= degree) take the whole row.
    graph_.BeginHop(hop);
    const int64_t begin = hop_begin[hop], end = hop_begin[hop + 1];
    for (int64_t u = begin; u < end; ++u) {
      const int64_t d = graph_.Degree(nodes[u]);
      degree.push_back(d);
      int64_t longest = 0;
      for (int l = 0; l <= block_index; ++l) {
        if (fanouts_[l] < d) longest = std::max<int64_t>(longest, fanouts_[l]);
      }
      if (longest > 0) {
        // Floyd's uniform subset, then a Fisher-Yates shuffle: a uniformly ordered sample.
        FloydSample(d, longest, rng, &positions);
        for (int64_t i = longest - 1; i > 0; --i) {
          std::swap(positions[i], positions[rng.Below(i + 1)]);
        }
        order.insert(order.end(), positions.begin(), positions.end());
      }
      order_ptr.push_back(static_cast<int64_t>(order.size()));
    }
    train::Block& block = out->blocks[block_index];
    block.num_dst = end;
    block.indptr.assign(1, 0);
    block.indices.clear();
    for (int64_t u = 0; u < end; ++u) {
      const int64_t v = nodes[u];
      const int64_t d = degree[u];
      if (fanout < 0 || fanout >= d) {
        SKIFF_RETURN_IF_ERROR(graph_.Neighbors(v, &picked));
      } else {
        // The first `fanout` of the node's ordered sample, in row order.
        positions.assign(order.begin() + order_ptr[u], order.begin() + order_ptr[u] + fanout);
        std::sort(positions.begin(), positions.end());
        picked.resize(positions.size());
        SKIFF_RETURN_IF_ERROR(graph_.NeighborsAt(v, positions, picked.data()));
      }
      for (int64_t w : picked) {
        bool inserted = false;
        const int32_t id = local.FindOrInsert(w, static_cast<int32_t>(nodes.size()), &inserted);
        if (inserted) nodes.push_back(w);
        block.indices.push_back(id);
      }
      block.indptr.push_back(static_cast<int64_t>(block.indices.size()));
    }
    hop_begin.push_back(static_cast<int64_t>(nodes.size()));
    block.num_src = hop_begin.back();
  }
  if (record_degrees_) {
    // Nodes of the outermost hop were never expanded; ask for their degrees now.
    for (size_t u = degree.size(); u < nodes.size(); ++u) degree.push_back(graph_.Degree(nodes[u]));
  }
  for (int l = 0; l < num_layers; ++l) {
    train::Block& b = out->blocks[l];
    if (record_degrees_) {
      b.src_degree.assign(degree.begin(), degree.begin() + b.num_src);
    } else {
      b.src_degree.clear();
    }
  }
  return Status::Ok();
}

}  // namespace skiff::sampler
