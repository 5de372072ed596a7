#include "src/partition/fm_refine.h"

#include <algorithm>
#include <queue>

#include "skiff/status.h"

namespace skiff::partition {
namespace {

// The best move of one vertex: the part it would go to (-1: none with room next to it) and the cut
// weight the move removes (negative when it adds).
struct Move {
  int32_t to = -1;
  int64_t gain = 0;
};

// A heap entry: higher gain first, then the lower vertex (so passes are deterministic).
struct Entry {
  int64_t gain;
  int32_t v;
  bool operator<(const Entry& o) const { return gain < o.gain || (gain == o.gain && v > o.v); }
};

class FmPass {
 public:
  // `*work_left`: adjacency entries the pass may still visit; it is charged for what it visits.
  FmPass(const WeightedGraph& g, int k, int64_t cap, const FmOptions& o, std::vector<int32_t>& part,
         std::vector<int64_t>& sizes, int64_t* work_left)
      : g_(g),
        cap_(cap),
        o_(o),
        part_(part),
        sizes_(sizes),
        conn_(k, 0),
        locked_(static_cast<size_t>(g.size()), 0),
        work_left_(*work_left) {}

  // One pass; returns the gain kept (0: every move undone) and adds the moves kept to *moves.
  int64_t Run(int64_t* moves) {
    FillHeap();
    int64_t cum = 0, best = 0;
    size_t best_len = 0;
    int64_t since_best = 0;
    while (!heap_.empty() && work_left_ > 0 && since_best <= o_.stall_moves) {
      const Entry top = heap_.top();
      heap_.pop();
      if (locked_[top.v]) continue;
      const Move m = BestMove(top.v);
      if (m.to < 0) continue;
      if (m.gain != top.gain) {  // stale: re-queued at its current gain
        heap_.push({m.gain, top.v});
        continue;
      }
      Apply(top.v, m.to);
      cum += m.gain;
      if (cum > best) {
        best = cum;
        best_len = log_.size();
        since_best = 0;
      } else {
        ++since_best;
      }
      QueueNeighbours(top.v);
    }
    Rollback(best_len);
    *moves += static_cast<int64_t>(best_len);
    return best;
  }

 private:
  bool Movable(int32_t v) const {
    return !locked_[v] &&
           (o_.max_degree <= 0 || g_.offsets[v + 1] - g_.offsets[v] <= o_.max_degree);
  }

  int64_t Weight(int64_t e) const { return g_.edge_weight.empty() ? 1 : g_.edge_weight[e]; }

  Move BestMove(int32_t v) {
    touched_.clear();
    for (int64_t e = g_.offsets[v]; e < g_.offsets[v + 1]; ++e) {
      const int32_t p = part_[g_.adj[e]];
      if (conn_[p] == 0) touched_.push_back(p);
      conn_[p] += Weight(e);
    }
    work_left_ -= g_.offsets[v + 1] - g_.offsets[v];
    const int32_t own = part_[v];
    Move best;
    for (int32_t p : touched_) {
      if (p == own || sizes_[p] + g_.weight[v] > cap_) continue;
      // Ties go to the lighter part, then the lower one.
      if (best.to < 0 || conn_[p] > best.gain ||
          (conn_[p] == best.gain &&
           (sizes_[p] < sizes_[best.to] || (sizes_[p] == sizes_[best.to] && p < best.to)))) {
        best = {p, conn_[p]};
      }
    }
    if (best.to >= 0) best.gain -= conn_[own];
    for (int32_t p : touched_) conn_[p] = 0;
    return best;
  }

  // Every movable vertex with a neighbour in another part.
  void FillHeap() {
    heap_ = {};
    for (int32_t v = 0; v < g_.size(); ++v) Queue(v);
  }

  void Queue(int32_t v) {
    if (!Movable(v)) return;
    const Move m = BestMove(v);
    if (m.to >= 0) heap_.push({m.gain, v});
  }

  void QueueNeighbours(int32_t v) {
    // Stale entries pile up; past 4 per vertex the heap is rebuilt from the current gains, which
    // re-scores the neighbours with everything else.
    if (heap_.size() > 4 * static_cast<size_t>(g_.size()) + 16) {
      FillHeap();
      return;
    }
    for (int64_t e = g_.offsets[v]; e < g_.offsets[v + 1]; ++e) Queue(g_.adj[e]);
  }

  void Apply(int32_t v, int32_t to) {
    log_.push_back({v, part_[v]});
    sizes_[part_[v]] -= g_.weight[v];
    sizes_[to] += g_.weight[v];
    part_[v] = to;
    locked_[v] = 1;
  }

  void Rollback(size_t keep) {
    while (log_.size() > keep) {
      const auto [v, from] = log_.back();
      log_.pop_back();
      sizes_[part_[v]] -= g_.weight[v];
      sizes_[from] += g_.weight[v];
      part_[v] = from;
    }
  }

  const WeightedGraph& g_;
  const int64_t cap_;
  const FmOptions& o_;
  std::vector<int32_t>& part_;
  std::vector<int64_t>& sizes_;
  std::vector<int64_t> conn_;
  std::vector<int32_t> touched_;
  std::vector<uint8_t> locked_;
  std::priority_queue<Entry> heap_;
  std::vector<std::pair<int32_t, int32_t>> log_;  // (vertex, the part it left)
  int64_t& work_left_;
};

}  // namespace

uint64_t FmRefineBytes(int64_t num_vertices, int k) {
  const uint64_t n = static_cast<uint64_t>(std::max<int64_t>(num_vertices, 0));
  // Heap (up to 4n + 16 entries, and a rebuilt one beside it while it is replaced), locks, log.
  return 2 * (4 * n + 16) * sizeof(Entry) + n + n * 8 + static_cast<uint64_t>(k) * 12;
}

FmResult FmRefine(const WeightedGraph& g, int k, int64_t cap, const FmOptions& options,
                  std::vector<int32_t>* part, std::vector<int64_t>* sizes) {
  SKIFF_CHECK(static_cast<int64_t>(part->size()) == g.size());
  SKIFF_CHECK(static_cast<int>(sizes->size()) == k);
  FmResult result;
  const double entries = static_cast<double>(g.adj.size());
  int64_t work_left =
      std::max(options.min_work, static_cast<int64_t>(options.work_per_entry * entries));
  for (int pass = 0; pass < options.max_passes && work_left > 0; ++pass) {
    FmPass fm(g, k, cap, options, *part, *sizes, &work_left);
    const int64_t gain = fm.Run(&result.moves);
    ++result.passes;
    result.gain += gain;
    if (gain <= 0) break;
  }
  return result;
}

}  // namespace skiff::partition
