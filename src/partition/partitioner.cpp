#include "skiff/partition/partitioner.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <thread>

#include "skiff/enum_names.h"
#include "skiff/log.h"
#include "skiff/progress.h"
#include "skiff/random.h"
#include "src/partition/fm_refine.h"
#include "src/partition/multilevel.h"
#include "src/partition/pair_counts.h"

namespace skiff::partition {

namespace {
constexpr EnumName<Algorithm> kAlgorithms[] = {{Algorithm::kGrem, "grem"},
                                               {Algorithm::kFennel, "fennel"},
                                               {Algorithm::kLdg, "ldg"},
                                               {Algorithm::kRandom, "random"},
                                               {Algorithm::kRandom, "hash"}};
constexpr EnumName<StreamOrder> kStreamOrders[] = {{StreamOrder::kNatural, "natural"},
                                                   {StreamOrder::kRandom, "random"},
                                                   {StreamOrder::kBfs, "bfs"}};
}  // namespace

const char* AlgorithmName(Algorithm a) { return NameOf(kAlgorithms, a); }

Result<Algorithm> ParseAlgorithm(const std::string& name) {
  return ParseName(kAlgorithms, "partitioning algorithm", name, /*listed=*/4);
}

const char* StreamOrderName(StreamOrder o) { return NameOf(kStreamOrders, o); }

Result<StreamOrder> ParseStreamOrder(const std::string& name) {
  return ParseName(kStreamOrders, "stream order", name);
}

double Partitioning::imbalance() const {
  const int64_t k = static_cast<int64_t>(part_sizes.size());
  if (k == 0) return 0;
  const int64_t n = std::accumulate(part_sizes.begin(), part_sizes.end(), int64_t{0});
  if (n == 0) return 0;
  const int64_t ideal = (n + k - 1) / k;
  const int64_t max_size = *std::max_element(part_sizes.begin(), part_sizes.end());
  return static_cast<double>(max_size) / static_cast<double>(ideal) - 1.0;
}

namespace {

// Fisher-Yates with SplitMix64, so the permutation is the same on every platform.
template <typename T>
void Shuffle(std::vector<T>& v, uint64_t seed) {
  uint64_t state = seed;
  for (size_t i = v.size(); i > 1; --i) {
    state = Mix64(state);
    const size_t j = static_cast<size_t>(state % i);
    std::swap(v[i - 1], v[j]);
  }
}

// Index of the lightest part (ties: lowest index) under point updates: a min segment tree.
class LightestPart {
 public:
  explicit LightestPart(const std::vector<int64_t>& sizes) : k_(sizes.size()) {
    leaves_ = 1;
    while (leaves_ < k_) leaves_ *= 2;
    tree_.assign(2 * leaves_, -1);
    sizes_ = &sizes;
    for (size_t p = 0; p < k_; ++p) tree_[leaves_ + p] = static_cast<int32_t>(p);
    for (size_t i = leaves_ - 1; i >= 1; --i) tree_[i] = Better(tree_[2 * i], tree_[2 * i + 1]);
  }
  void Update(int32_t p) {
    for (size_t i = (leaves_ + p) / 2; i >= 1; i /= 2) {
      tree_[i] = Better(tree_[2 * i], tree_[2 * i + 1]);
    }
  }
  int32_t Get() const { return tree_[1]; }

 private:
  int32_t Better(int32_t a, int32_t b) const {
    if (a < 0) return b;
    if (b < 0) return a;
    const int64_t sa = (*sizes_)[a], sb = (*sizes_)[b];
    return (sb < sa) ? b : a;  // a < b in index when both are real leaves in order
  }
  size_t k_;
  size_t leaves_;
  const std::vector<int64_t>* sizes_;
  std::vector<int32_t> tree_;
};

// Neighbour counts per part for one vertex, sparse (only touched parts are reset).
struct PartCounter {
  std::vector<int32_t> count;
  std::vector<int32_t> touched;
  int32_t placed = 0;  // neighbours with a part
  explicit PartCounter(int k) : count(k, 0) {}
  void Fill(std::span<const int64_t> row, int64_t self, const std::vector<int32_t>& part) {
    for (int32_t p : touched) count[p] = 0;
    touched.clear();
    placed = 0;
    for (int64_t u : row) {
      if (u == self) continue;
      const int32_t p = part[u];
      if (p < 0) continue;
      ++placed;
      if (count[p]++ == 0) touched.push_back(p);
    }
  }
};

class StreamPartitioner {
 public:
  StreamPartitioner(const GraphSource& g, const PartitionerOptions& o)
      : g_(g), o_(o), n_(g.num_nodes()), k_(o.k) {}

  Result<Partitioning> Run();

 private:
  // Stream order ----------------------------------------------------------------------------------
  Status BuildBfsOrder();
  // Fills `ids` with chunk `c` of pass `pass`; returns false after the last chunk.
  bool ChunkIds(int pass, int64_t c, std::vector<int64_t>* ids) const;

  // Scoring ---------------------------------------------------------------------------------------
  double Penalty(int64_t size) const;  // marginal cost of adding one vertex to a part of `size`
  bool HasRoom(int32_t p, bool is_train) const {
    if (size_[p] >= room_cap_) return false;
    if (is_train && balance_train_ && train_size_[p] >= train_room_cap_) return false;
    return true;
  }
  bool IsTrain(int64_t v) const { return o_.train_mask && (*o_.train_mask)[v] != 0; }
  int32_t GreedyPlace(int64_t v, const PartCounter& c) const;
  // Best move of a placed vertex: target part (or -1) and the gain of the objective.
  int32_t BestMove(int64_t v, const PartCounter& c, double* gain) const;
  void Assign(int64_t v, int32_t p);
  void Unassign(int64_t v);

  // Passes ----------------------------------------------------------------------------------------
  // Reads the graph chunk by chunk in `pass`'s order and calls `fn` on each, with progress
  // labelled "<what> pass <pass + 1>".
  Status ForEachChunk(int pass, const std::string& what,
                      const std::function<Status(const RowChunk&)>& fn);
  Status PlacePass(int pass);
  Status RestreamPass(int pass);
  Status RefinePass(int pass);
  // GREM's first placement on a coarsened stream: size-bounded label-propagation clusters found
  // in streaming passes, then the cluster graph placed greedily (Fennel objective, weights) and
  // refined in memory. Returns false (nothing placed) when the cluster graph exceeds the budget.
  Result<bool> ClusterPlace();
  // Run's steps: the options checked and the bounds, chunk size and Fennel's alpha derived
  // (Setup); the refinement passes after the first placement (Refine).
  Status Setup();
  Status Refine(bool placed_by_clusters);
  // ClusterPlace's steps. Clusters of at most `bound` vertices by label propagation (each vertex
  // moves to the cluster most of its neighbours are in), numbered densely; `weight` gets each
  // cluster's vertex count.
  Result<std::vector<int32_t>> Cluster(int64_t bound, std::vector<int64_t>* weight);
  // The graph between the clusters (edge weights: the edges between them), or nullopt when it does
  // not fit in the cluster-graph budget.
  Result<std::optional<WeightedGraph>> ContractClusters(const std::vector<int32_t>& cluster,
                                                        std::vector<int64_t> weight);
  // GREM's in-memory steps share one budget: the cluster graph's, then FM's.
  int64_t InMemoryEntries() const {
    return std::max<int64_t>(
        o_.cluster_graph_entries > 0 ? o_.cluster_graph_entries : o_.chunk_edges, 1 << 16);
  }
  // GREM's last step: FM refinement (fm_refine.h) over the whole graph, symmetrised, when it and
  // FM's own state fit in the in-memory budget (skipped otherwise).
  Status FmRefineInMemory();
  // Every stored edge in both endpoints' rows (self-loops dropped), unit weights; nullopt when
  // that and FM's state would pass `budget_bytes`.
  Result<std::optional<WeightedGraph>> SymmetricGraph(uint64_t budget_bytes);
  // Moves vertices out of parts above cap_ into parts with room; `lossless` moves only vertices
  // that lose no cut edge by moving. Returns with every part <= cap_ when !lossless.
  Status RebalancePass(int pass, bool lossless);
  bool Overloaded() const {
    for (int p = 0; p < k_; ++p) {
      if (size_[p] > cap_ || (balance_train_ && train_size_[p] > train_cap_)) return true;
    }
    return false;
  }
  // Re-scores the vertices of `chunk` (parallel scoring against a snapshot, then sequential
  // re-validation and application in chunk order, so the result is independent of thread count).
  void Sweep(const RowChunk& chunk);
  Status RevisitQueued();

  const GraphSource& g_;
  const PartitionerOptions& o_;
  const int64_t n_;
  const int k_;
  int passes_ = 1;
  int64_t chunk_vertices_ = 1;
  int64_t cap_ = 0, train_cap_ = 0;
  // The caps HasRoom enforces now: cap_/train_cap_, or relaxed ones during early refinement.
  int64_t room_cap_ = 0, train_room_cap_ = 0;
  bool balance_train_ = false;
  double alpha_ = 0;
  std::vector<int32_t> part_;
  std::vector<int64_t> size_, train_size_;
  std::unique_ptr<LightestPart> lightest_;
  std::vector<int64_t> bfs_order_;
  // GREM history: bit 0 = placed with fewer than half its neighbours placed ("low confidence"),
  // bit 1 = queued for a revisit.
  std::vector<uint8_t> flags_;
  std::vector<int64_t> revisit_;
  int64_t moves_ = 0;
  double relax_ = 0.1;
  PartCounter counter_{1};
};

double StreamPartitioner::Penalty(int64_t size) const {
  // Fennel with gamma = 1.5: c(s) = alpha * s^1.5; marginal cost of one more vertex.
  const double s = static_cast<double>(size);
  return alpha_ * ((s + 1) * std::sqrt(s + 1) - s * std::sqrt(s));
}

void StreamPartitioner::Assign(int64_t v, int32_t p) {
  part_[v] = p;
  ++size_[p];
  if (!train_size_.empty() && IsTrain(v)) ++train_size_[p];
  lightest_->Update(p);
}

void StreamPartitioner::Unassign(int64_t v) {
  const int32_t p = part_[v];
  part_[v] = -1;
  --size_[p];
  if (!train_size_.empty() && IsTrain(v)) --train_size_[p];
  lightest_->Update(p);
}

int32_t StreamPartitioner::GreedyPlace(int64_t v, const PartCounter& c) const {
  const bool is_train = IsTrain(v);
  int32_t fallback = lightest_->Get();
  if (!HasRoom(fallback, is_train)) {
    // The lightest part has no room for a training vertex: take the lightest part that does,
    // else (the training bound cannot be met) the lightest part by size.
    int32_t best = -1;
    for (int32_t p = 0; p < k_; ++p) {
      if (HasRoom(p, is_train) && (best < 0 || size_[p] < size_[best])) best = p;
    }
    if (best >= 0) fallback = best;
  }
  if (o_.algorithm == Algorithm::kRandom) {
    const int32_t p = static_cast<int32_t>(Mix64(static_cast<uint64_t>(v) ^ (o_.seed << 1)) %
                                           static_cast<uint64_t>(k_));
    return HasRoom(p, is_train) ? p : fallback;
  }
  int32_t best = fallback;
  double best_score;
  auto score = [&](int32_t p) -> double {
    const double cnt = c.count[p];
    if (o_.algorithm == Algorithm::kLdg) {
      return cnt * (1.0 - static_cast<double>(size_[p]) / static_cast<double>(cap_));
    }
    return cnt - Penalty(size_[p]);
  };
  best_score = score(best);
  for (int32_t p : c.touched) {
    if (!HasRoom(p, is_train)) continue;
    const double s = score(p);
    if (s > best_score ||
        (s == best_score && (size_[p] < size_[best] || (size_[p] == size_[best] && p < best)))) {
      best = p;
      best_score = s;
    }
  }
  return best;
}

int32_t StreamPartitioner::BestMove(int64_t v, const PartCounter& c, double* gain) const {
  const int32_t cur = part_[v];
  const bool is_train = IsTrain(v);
  const double stay = c.count[cur] - Penalty(size_[cur] - 1);
  int32_t best = -1;
  double best_score = stay;
  auto consider = [&](int32_t p) {
    if (p == cur || !HasRoom(p, is_train)) return;
    const double s = c.count[p] - Penalty(size_[p]);
    if (s > best_score + 1e-9 || (best >= 0 && s == best_score && p < best)) {
      best = p;
      best_score = s;
    }
  };
  for (int32_t p : c.touched) consider(p);
  consider(lightest_->Get());
  *gain = best_score - stay;
  return best;
}

Status StreamPartitioner::BuildBfsOrder() {
  bfs_order_.clear();
  bfs_order_.reserve(static_cast<size_t>(n_));
  std::vector<bool> visited(static_cast<size_t>(n_), false);
  // Start from a seeded vertex; restart from the next unvisited vertex in natural order.
  int64_t scan = n_ ? static_cast<int64_t>(Mix64(o_.seed) % static_cast<uint64_t>(n_)) : 0;
  int64_t scanned = 0;
  size_t head = 0;
  RowChunk chunk;
  std::vector<int64_t> frontier;
  while (static_cast<int64_t>(bfs_order_.size()) < n_) {
    if (head == bfs_order_.size()) {
      while (visited[scan]) {
        scan = (scan + 1) % n_;
        ++scanned;
        SKIFF_CHECK(scanned <= n_);
      }
      visited[scan] = true;
      bfs_order_.push_back(scan);
    }
    const size_t end = std::min(bfs_order_.size(), head + static_cast<size_t>(chunk_vertices_));
    frontier.assign(bfs_order_.begin() + head, bfs_order_.begin() + end);
    std::sort(frontier.begin(), frontier.end());  // coalesces reads of consecutive IDs
    SKIFF_RETURN_IF_ERROR(g_.ReadRows(frontier, &chunk));
    // Append in BFS order (the order vertices were discovered), not sorted order.
    std::vector<int64_t> pos(frontier.size());
    for (size_t i = head; i < end; ++i) {
      const auto it = std::lower_bound(frontier.begin(), frontier.end(), bfs_order_[i]);
      const size_t r = static_cast<size_t>(it - frontier.begin());
      for (int64_t u : chunk.Row(r)) {
        if (!visited[u]) {
          visited[u] = true;
          bfs_order_.push_back(u);
        }
      }
    }
    head = end;
  }
  return Status::Ok();
}

bool StreamPartitioner::ChunkIds(int pass, int64_t c, std::vector<int64_t>* ids) const {
  const int64_t num_chunks = (n_ + chunk_vertices_ - 1) / chunk_vertices_;
  if (c >= num_chunks) return false;
  ids->clear();
  switch (o_.order) {
    case StreamOrder::kNatural: {
      const int64_t first = c * chunk_vertices_;
      const int64_t last = std::min(n_, first + chunk_vertices_);
      for (int64_t v = first; v < last; ++v) ids->push_back(v);
      break;
    }
    case StreamOrder::kRandom: {
      // Blocks of chunk_vertices_ consecutive IDs in a seeded order, shuffled inside: random
      // enough to break ID locality while each chunk stays one sequential read.
      std::vector<int64_t> blocks(static_cast<size_t>(num_chunks));
      std::iota(blocks.begin(), blocks.end(), 0);
      Shuffle(blocks, o_.seed * 7919 + static_cast<uint64_t>(pass));
      const int64_t first = blocks[c] * chunk_vertices_;
      const int64_t last = std::min(n_, first + chunk_vertices_);
      for (int64_t v = first; v < last; ++v) ids->push_back(v);
      Shuffle(*ids, Mix64(o_.seed + static_cast<uint64_t>(c) * 131 + pass));
      break;
    }
    case StreamOrder::kBfs: {
      const int64_t first = c * chunk_vertices_;
      const int64_t last = std::min(n_, first + chunk_vertices_);
      ids->assign(bfs_order_.begin() + first, bfs_order_.begin() + last);
      break;
    }
  }
  return true;
}

void StreamPartitioner::Sweep(const RowChunk& chunk) {
  const size_t m = chunk.size();
  std::vector<uint8_t> candidate(m, 0);
  auto score_range = [&](size_t begin, size_t end) {
    PartCounter c(k_);
    for (size_t i = begin; i < end; ++i) {
      const int64_t v = chunk.vertices[i];
      if (part_[v] < 0) continue;
      c.Fill(chunk.Row(i), v, part_);
      double gain = 0;
      if (BestMove(v, c, &gain) >= 0 && gain > 0) candidate[i] = 1;
    }
  };
  const int threads = std::max(1, o_.threads);
  if (threads == 1 || m < 4096) {
    score_range(0, m);
  } else {
    std::vector<std::thread> workers;
    const size_t per = (m + threads - 1) / threads;
    for (int t = 1; t < threads; ++t) {
      const size_t b = std::min(m, per * t), e = std::min(m, per * (t + 1));
      workers.emplace_back(score_range, b, e);
    }
    score_range(0, std::min(m, per));
    for (auto& w : workers) w.join();
  }
  // Sequential application: each candidate is re-scored against the current state, so every move
  // strictly improves the objective and no two stale moves undo each other.
  for (size_t i = 0; i < m; ++i) {
    const int64_t v = chunk.vertices[i];
    if (!candidate[i] && flags_.empty()) continue;
    if (part_[v] < 0) continue;
    if (!candidate[i] && !(flags_[v] & 1)) continue;
    counter_.Fill(chunk.Row(i), v, part_);
    if (!flags_.empty()) {
      const int64_t degree = static_cast<int64_t>(chunk.Row(i).size());
      if (2 * static_cast<int64_t>(counter_.placed) >= degree) flags_[v] &= ~uint8_t{1};
    }
    double gain = 0;
    const int32_t target = BestMove(v, counter_, &gain);
    if (target >= 0 && gain > 0) {
      Unassign(v);
      Assign(v, target);
      ++moves_;
    }
  }
}

Status StreamPartitioner::RevisitQueued() {
  if (revisit_.empty()) return Status::Ok();
  std::sort(revisit_.begin(), revisit_.end());
  RowChunk rows;
  SKIFF_RETURN_IF_ERROR(g_.ReadRows(revisit_, &rows));
  for (int64_t v : revisit_) flags_[v] &= ~uint8_t{2};
  revisit_.clear();
  Sweep(rows);
  return Status::Ok();
}

Status StreamPartitioner::ForEachChunk(int pass, const std::string& what,
                                       const std::function<Status(const RowChunk&)>& fn) {
  OptionalProgress progress(o_.show_progress, what + " pass " + std::to_string(pass + 1), n_,
                            "nodes");
  std::vector<int64_t> ids;
  RowChunk chunk;
  for (int64_t c = 0; ChunkIds(pass, c, &ids); ++c) {
    SKIFF_RETURN_IF_ERROR(g_.ReadRows(ids, &chunk));
    SKIFF_RETURN_IF_ERROR(fn(chunk));
    progress.Add(chunk.size());
  }
  progress.Finish();
  return Status::Ok();
}

Status StreamPartitioner::PlacePass(int pass) {
  const bool grem_refine = o_.algorithm == Algorithm::kGrem && o_.refine;
  return ForEachChunk(pass, "partition", [&](const RowChunk& chunk) -> Status {
    for (size_t i = 0; i < chunk.size(); ++i) {
      const int64_t v = chunk.vertices[i];
      const auto row = chunk.Row(i);
      counter_.Fill(row, v, part_);
      Assign(v, GreedyPlace(v, counter_));
      if (grem_refine) {
        if (2 * static_cast<int64_t>(counter_.placed) < static_cast<int64_t>(row.size())) {
          flags_[v] |= 1;
        }
        // Placed neighbours that were placed blindly are re-scored now that v is placed.
        for (int64_t u : row) {
          if (u != v && part_[u] >= 0 && (flags_[u] & 3) == 1 &&
              static_cast<int64_t>(revisit_.size()) < chunk_vertices_) {
            flags_[u] |= 2;
            revisit_.push_back(u);
          }
        }
      }
    }
    if (grem_refine) {
      Sweep(chunk);
      SKIFF_RETURN_IF_ERROR(RevisitQueued());
    }
    return Status::Ok();
  });
}

Status StreamPartitioner::RestreamPass(int pass) {
  return ForEachChunk(pass, "restream", [&](const RowChunk& chunk) {
    for (size_t i = 0; i < chunk.size(); ++i) {
      const int64_t v = chunk.vertices[i];
      const int32_t before = part_[v];
      Unassign(v);
      counter_.Fill(chunk.Row(i), v, part_);
      const int32_t p = GreedyPlace(v, counter_);
      Assign(v, p);
      if (p != before) ++moves_;
    }
    return Status::Ok();
  });
}

Status StreamPartitioner::RefinePass(int pass) {
  return ForEachChunk(pass, "refine", [&](const RowChunk& chunk) {
    Sweep(chunk);
    return Status::Ok();
  });
}

Result<std::vector<int32_t>> StreamPartitioner::Cluster(int64_t bound,
                                                        std::vector<int64_t>* weight) {
  std::vector<int32_t> cluster(static_cast<size_t>(n_));
  std::iota(cluster.begin(), cluster.end(), 0);
  std::vector<int32_t> csize(static_cast<size_t>(n_), 1);
  std::vector<int32_t> ccount(static_cast<size_t>(n_), 0);
  std::vector<int32_t> touched;
  std::vector<int64_t> ids;
  RowChunk chunk;
  const int lp_passes = 3;
  for (int pass = 0; pass < lp_passes; ++pass) {
    int64_t changed = 0;
    for (int64_t c = 0; ChunkIds(pass, c, &ids); ++c) {
      SKIFF_RETURN_IF_ERROR(g_.ReadRows(ids, &chunk));
      for (size_t i = 0; i < chunk.size(); ++i) {
        const int64_t v = chunk.vertices[i];
        const int32_t cur = cluster[v];
        touched.clear();
        for (int64_t u : chunk.Row(i)) {
          if (u == v) continue;
          const int32_t cu = cluster[u];
          if (ccount[cu]++ == 0) touched.push_back(cu);
        }
        int32_t best = cur;
        int32_t best_count = ccount[cur];
        for (int32_t cu : touched) {
          if (cu == cur || csize[cu] + 1 > bound) continue;
          if (ccount[cu] > best_count || (ccount[cu] == best_count && cu < best && best != cur)) {
            best = cu;
            best_count = ccount[cu];
          }
        }
        for (int32_t cu : touched) ccount[cu] = 0;
        if (best != cur) {
          --csize[cur];
          ++csize[best];
          cluster[v] = best;
          ++changed;
        }
      }
    }
    if (changed <= n_ / 1000) break;
  }
  // Renumber the clusters densely (reusing ccount as the map).
  int32_t num_clusters = 0;
  for (int64_t v = 0; v < n_; ++v) {
    if (csize[v] > 0) ccount[v] = num_clusters++;
  }
  weight->assign(num_clusters, 0);
  for (int64_t v = 0; v < n_; ++v) {
    cluster[v] = ccount[cluster[v]];
    ++(*weight)[cluster[v]];
  }
  return cluster;
}

Result<std::optional<WeightedGraph>> StreamPartitioner::ContractClusters(
    const std::vector<int32_t>& cluster, std::vector<int64_t> weight) {
  const auto num_clusters = static_cast<int32_t>(weight.size());
  // Half the entry budget for distinct pairs: with the counts' buffer and the CSR built from them
  // the whole step stays within the budget's 16 bytes per entry (pair_counts.h).
  const int64_t entry_budget = InMemoryEntries();
  PairCounts counts(static_cast<size_t>(
      std::min<int64_t>(entry_budget / 2, std::max<int64_t>(g_.num_edges(), 1))));
  std::vector<int64_t> ids;
  RowChunk chunk;
  int64_t between = 0;
  for (int64_t c = 0; ChunkIds(0, c, &ids) && !counts.full(); ++c) {
    SKIFF_RETURN_IF_ERROR(g_.ReadRows(ids, &chunk));
    for (size_t i = 0; i < chunk.size(); ++i) {
      const int32_t cv = cluster[chunk.vertices[i]];
      for (int64_t u : chunk.Row(i)) {
        const int32_t cu = cluster[u];
        if (cu == cv) continue;
        counts.Add(static_cast<uint32_t>(cv), static_cast<uint32_t>(cu));
        ++between;
      }
    }
  }
  chunk = RowChunk();  // the rows are done with: the cluster graph takes their memory
  if (!counts.Finish()) {
    LogDebug("cluster graph: more than " + std::to_string(entry_budget / 2) +
             " pairs of clusters; placing vertex by vertex");
    return std::optional<WeightedGraph>();
  }
  const std::vector<PairCounts::Entry>& pairs = counts.entries();
  LogDebug("cluster graph: " + std::to_string(num_clusters) + " clusters, " +
           std::to_string(between) + " edges between them, " + std::to_string(pairs.size()) +
           " distinct pairs");
  WeightedGraph wg;
  wg.weight = std::move(weight);
  wg.offsets.assign(num_clusters + 1, 0);
  for (const PairCounts::Entry& e : pairs) ++wg.offsets[e.first() + 1];
  for (int32_t c = 0; c < num_clusters; ++c) wg.offsets[c + 1] += wg.offsets[c];
  wg.adj.resize(pairs.size());
  wg.edge_weight.resize(pairs.size());
  for (size_t e = 0; e < pairs.size(); ++e) {
    wg.adj[e] = static_cast<int32_t>(pairs[e].second());
    wg.edge_weight[e] = pairs[e].count;
  }
  return std::optional<WeightedGraph>(std::move(wg));
}

Result<bool> StreamPartitioner::ClusterPlace() {
  if (n_ > std::numeric_limits<int32_t>::max()) return false;  // cluster IDs are int32
  // Clusters hold at most N / (32 k) vertices: small enough that a part is made of many of them
  // (so balance is easy to meet), large enough to carry the graph's local structure.
  const int64_t bound = std::max<int64_t>(1, n_ / (int64_t{32} * k_));
  std::vector<int64_t> weight;
  SKIFF_ASSIGN_OR_RETURN(const std::vector<int32_t> cluster, Cluster(bound, &weight));
  SKIFF_ASSIGN_OR_RETURN(std::optional<WeightedGraph> wg,
                         ContractClusters(cluster, std::move(weight)));
  if (!wg.has_value()) return false;  // the cluster graph does not fit
  const std::vector<int32_t> cpart = MultilevelPlace(*wg, k_, cap_, alpha_);
  std::fill(size_.begin(), size_.end(), 0);
  for (size_t c = 0; c < cpart.size(); ++c) size_[cpart[c]] += wg->weight[c];
  for (int32_t p = 0; p < k_; ++p) lightest_->Update(p);
  for (int64_t v = 0; v < n_; ++v) {
    part_[v] = cpart[cluster[v]];
    if (!train_size_.empty() && IsTrain(v)) ++train_size_[part_[v]];
  }
  return true;
}

Result<std::optional<WeightedGraph>> StreamPartitioner::SymmetricGraph(uint64_t budget_bytes) {
  const uint64_t n = static_cast<uint64_t>(n_);
  const uint64_t entries = 2 * static_cast<uint64_t>(g_.num_edges());
  // Offsets, rows, vertex weights and the fill cursors, beside FM's state.
  const uint64_t bytes = 8 * (n + 1) + 4 * entries + 8 * n + 8 * n + FmRefineBytes(n_, k_);
  if (n_ > std::numeric_limits<int32_t>::max() || bytes > budget_bytes) {
    LogDebug("FM refinement skipped: the graph in memory would take " + std::to_string(bytes) +
             " bytes, over the budget's " + std::to_string(budget_bytes));
    return std::optional<WeightedGraph>();
  }
  WeightedGraph wg;
  wg.offsets.assign(n + 1, 0);
  SKIFF_RETURN_IF_ERROR(ForEachChunk(0, "FM graph", [&](const RowChunk& chunk) -> Status {
    for (size_t i = 0; i < chunk.size(); ++i) {
      const int64_t v = chunk.vertices[i];
      for (int64_t u : chunk.Row(i)) {
        if (u == v) continue;
        ++wg.offsets[v + 1];
        ++wg.offsets[u + 1];
      }
    }
    return Status::Ok();
  }));
  for (uint64_t v = 0; v < n; ++v) wg.offsets[v + 1] += wg.offsets[v];
  wg.adj.resize(static_cast<size_t>(wg.offsets[n]));
  std::vector<int64_t> next(wg.offsets.begin(), wg.offsets.end() - 1);
  SKIFF_RETURN_IF_ERROR(ForEachChunk(1, "FM graph", [&](const RowChunk& chunk) -> Status {
    for (size_t i = 0; i < chunk.size(); ++i) {
      const int64_t v = chunk.vertices[i];
      for (int64_t u : chunk.Row(i)) {
        if (u == v) continue;
        wg.adj[next[v]++] = static_cast<int32_t>(u);
        wg.adj[next[u]++] = static_cast<int32_t>(v);
      }
    }
    return Status::Ok();
  }));
  wg.weight.assign(n, 1);
  return std::optional<WeightedGraph>(std::move(wg));
}

Status StreamPartitioner::FmRefineInMemory() {
  SKIFF_ASSIGN_OR_RETURN(std::optional<WeightedGraph> g,
                         SymmetricGraph(static_cast<uint64_t>(InMemoryEntries()) * 16));
  if (!g.has_value()) return Status::Ok();
  const FmResult r = FmRefine(*g, k_, cap_, FmOptions{}, &part_, &size_);
  for (int32_t p = 0; p < k_; ++p) lightest_->Update(p);
  moves_ += r.moves;
  LogDebug("FM refinement: " + std::to_string(r.gain) + " fewer cut edges, " +
           std::to_string(r.moves) + " moves kept, passes run: " + std::to_string(r.passes));
  return Status::Ok();
}

Status StreamPartitioner::RebalancePass(int pass, bool lossless) {
  std::vector<int64_t> ids;
  RowChunk chunk;
  for (int64_t c = 0; ChunkIds(pass, c, &ids); ++c) {
    SKIFF_RETURN_IF_ERROR(g_.ReadRows(ids, &chunk));
    for (size_t i = 0; i < chunk.size(); ++i) {
      const int64_t v = chunk.vertices[i];
      const int32_t cur = part_[v];
      const bool is_train = IsTrain(v);
      const bool over =
          size_[cur] > cap_ || (is_train && balance_train_ && train_size_[cur] > train_cap_);
      if (!over) continue;
      counter_.Fill(chunk.Row(i), v, part_);
      Unassign(v);
      const int32_t p = GreedyPlace(v, counter_);
      if (!HasRoom(p, is_train) || (lossless && counter_.count[p] < counter_.count[cur])) {
        Assign(v, cur);
        continue;
      }
      Assign(v, p);
      if (p != cur) ++moves_;
    }
    if (!Overloaded()) break;
  }
  return Status::Ok();
}

Status StreamPartitioner::Setup() {
  if (k_ < 1) return Status::InvalidArgument("number of partitions must be >= 1");
  if (n_ > 0 && k_ > n_) {
    return Status::InvalidArgument("cannot split " + std::to_string(n_) + " nodes into " +
                                   std::to_string(k_) + " non-empty partitions");
  }
  if (!(o_.eps >= 0) || o_.eps > 10) {
    return Status::InvalidArgument("imbalance eps must be in [0, 10]");
  }
  if (o_.train_mask && static_cast<int64_t>(o_.train_mask->size()) != n_) {
    return Status::InvalidArgument("training mask has " + std::to_string(o_.train_mask->size()) +
                                   " entries for " + std::to_string(n_) + " nodes");
  }
  if (o_.chunk_edges < 1) return Status::InvalidArgument("chunk_edges must be >= 1");
  passes_ = o_.passes > 0 ? o_.passes : (o_.algorithm == Algorithm::kGrem ? 8 : 1);
  if (o_.algorithm == Algorithm::kRandom) passes_ = 1;  // restreaming a hash changes nothing
  const int64_t e = g_.num_edges();
  chunk_vertices_ = std::max<int64_t>(
      256, static_cast<int64_t>(static_cast<double>(o_.chunk_edges) * static_cast<double>(n_) /
                                std::max<double>(1.0, static_cast<double>(e))));
  chunk_vertices_ =
      std::max<int64_t>(1, std::min<int64_t>(chunk_vertices_, std::max<int64_t>(1, n_)));
  const int64_t ideal = (n_ + k_ - 1) / k_;
  cap_ = std::max<int64_t>(ideal, static_cast<int64_t>(std::floor((1.0 + o_.eps) * ideal)));
  if (o_.train_mask) {
    int64_t num_train = 0;
    for (uint8_t t : *o_.train_mask) num_train += t != 0;
    train_size_.assign(k_, 0);
    const int64_t train_ideal = (num_train + k_ - 1) / k_;
    train_cap_ = std::max<int64_t>(train_ideal,
                                   static_cast<int64_t>(std::floor((1.0 + o_.eps) * train_ideal)));
    balance_train_ = o_.balance_train;
  }
  // Fennel: alpha = sqrt(k) * m / n^1.5 with m the undirected edge count.
  const double m_undirected = static_cast<double>(e) / 2.0;
  alpha_ = n_ > 0 ? std::sqrt(static_cast<double>(k_)) * m_undirected /
                        std::pow(static_cast<double>(n_), 1.5)
                  : 0.0;
  part_.assign(static_cast<size_t>(n_), -1);
  size_.assign(k_, 0);
  lightest_ = std::make_unique<LightestPart>(size_);
  counter_ = PartCounter(k_);
  if (o_.algorithm == Algorithm::kGrem && o_.refine) flags_.assign(static_cast<size_t>(n_), 0);
  if (o_.order == StreamOrder::kBfs) SKIFF_RETURN_IF_ERROR(BuildBfsOrder());
  room_cap_ = cap_;
  train_room_cap_ = train_cap_;
  return Status::Ok();
}

Status StreamPartitioner::Refine(bool placed_by_clusters) {
  if (placed_by_clusters) relax_ = 0;  // clusters already carry the structure; refine strictly
  if (o_.algorithm != Algorithm::kGrem || !o_.refine || passes_ <= 1) {
    for (int pass = 1; pass < passes_; ++pass) {
      const int64_t moves_before = moves_;
      SKIFF_RETURN_IF_ERROR(RestreamPass(pass));
      if (moves_ - moves_before <= n_ / 10000) break;  // converged
    }
    return Status::Ok();
  }
  // Refinement passes run under a relaxed cap so that whole groups of vertices can migrate
  // between parts that are full; a rebalancing sweep then restores the exact bound and a final
  // pass refines under it.
  room_cap_ = cap_ + static_cast<int64_t>(cap_ * relax_);
  // Training counts stay under their exact bound throughout: a relaxed training bound could
  // leave overloads that only swaps could undo.
  train_room_cap_ = train_cap_;
  for (int pass = 1; pass + 1 < passes_; ++pass) {
    const int64_t moves_before = moves_;
    SKIFF_RETURN_IF_ERROR(RefinePass(pass));
    if (moves_ - moves_before <= n_ / 10000) break;  // converged
  }
  room_cap_ = cap_;
  train_room_cap_ = train_cap_;
  if (Overloaded()) SKIFF_RETURN_IF_ERROR(RebalancePass(passes_, /*lossless=*/true));
  if (Overloaded()) SKIFF_RETURN_IF_ERROR(RebalancePass(passes_, /*lossless=*/false));
  SKIFF_CHECK(!Overloaded() || balance_train_);  // a non-training vertex can always move
  return RefinePass(passes_ - 1);
}

Result<Partitioning> StreamPartitioner::Run() {
  SKIFF_RETURN_IF_ERROR(Setup());
  bool placed = false;
  // Cluster placement balances vertices only; with a training bound as well, vertex-level
  // placement (which checks both bounds at every step) is used instead.
  if (o_.algorithm == Algorithm::kGrem && o_.refine && !balance_train_) {
    SKIFF_ASSIGN_OR_RETURN(placed, ClusterPlace());
  }
  if (!placed) SKIFF_RETURN_IF_ERROR(PlacePass(0));
  SKIFF_RETURN_IF_ERROR(Refine(placed));
  if (o_.algorithm == Algorithm::kGrem && o_.refine && !balance_train_ && k_ > 1 && n_ > 0) {
    SKIFF_RETURN_IF_ERROR(FmRefineInMemory());
  }

  Partitioning result;
  result.part = std::move(part_);
  result.part_sizes = size_;
  result.train_sizes = train_size_;
  result.capacity = cap_;
  result.moves = moves_;
  result.num_edges = g_.num_edges();
  SKIFF_ASSIGN_OR_RETURN(result.cut_edges, CountCutEdges(g_, result.part, o_.chunk_edges));
  return result;
}

}  // namespace

Result<Partitioning> PartitionGraph(const GraphSource& graph, const PartitionerOptions& options) {
  StreamPartitioner p(graph, options);
  return p.Run();
}

Result<int64_t> CountCutEdges(const GraphSource& graph, const std::vector<int32_t>& part,
                              int64_t chunk_edges) {
  const int64_t n = graph.num_nodes();
  SKIFF_CHECK(static_cast<int64_t>(part.size()) == n);
  const int64_t per = std::max<int64_t>(
      256, static_cast<int64_t>(static_cast<double>(chunk_edges) * static_cast<double>(n) /
                                std::max<double>(1.0, static_cast<double>(graph.num_edges()))));
  RowChunk chunk;
  std::vector<int64_t> ids;
  int64_t cut = 0;
  for (int64_t first = 0; first < n; first += per) {
    const int64_t last = std::min(n, first + per);
    ids.resize(static_cast<size_t>(last - first));
    std::iota(ids.begin(), ids.end(), first);
    SKIFF_RETURN_IF_ERROR(graph.ReadRows(ids, &chunk));
    for (size_t i = 0; i < chunk.size(); ++i) {
      const int32_t pv = part[chunk.vertices[i]];
      for (int64_t u : chunk.Row(i)) cut += part[u] != pv;
    }
  }
  return cut;
}

}  // namespace skiff::partition
