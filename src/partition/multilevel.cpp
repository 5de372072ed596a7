#include "src/partition/multilevel.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace skiff::partition {
namespace {

// Size-bounded label propagation over a weighted graph; returns dense cluster IDs.
std::vector<int32_t> ClusterWeighted(const WeightedGraph& g, int64_t bound, int32_t* num_clusters) {
  const int32_t n = g.size();
  std::vector<int32_t> cluster(n);
  std::iota(cluster.begin(), cluster.end(), 0);
  std::vector<int64_t> csize(g.weight);
  std::vector<int64_t> conn(n, 0);
  std::vector<int32_t> touched;
  for (int pass = 0; pass < 5; ++pass) {
    int64_t changed = 0;
    for (int32_t v = 0; v < n; ++v) {
      const int32_t cur = cluster[v];
      touched.clear();
      for (int64_t e = g.offsets[v]; e < g.offsets[v + 1]; ++e) {
        const int32_t c = cluster[g.adj[e]];
        if (conn[c] == 0) touched.push_back(c);
        conn[c] += g.edge_weight[e];
      }
      int32_t best = cur;
      int64_t best_conn = conn[cur];
      for (int32_t c : touched) {
        if (c == cur || csize[c] + g.weight[v] > bound) continue;
        if (conn[c] > best_conn) {
          best = c;
          best_conn = conn[c];
        }
      }
      for (int32_t c : touched) conn[c] = 0;
      if (best != cur) {
        csize[cur] -= g.weight[v];
        csize[best] += g.weight[v];
        cluster[v] = best;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  std::vector<int32_t> dense(n, -1);
  int32_t next = 0;
  for (int32_t v = 0; v < n; ++v) {
    if (dense[cluster[v]] < 0) dense[cluster[v]] = next++;
    cluster[v] = dense[cluster[v]];
  }
  *num_clusters = next;
  return cluster;
}

WeightedGraph Contract(const WeightedGraph& g, const std::vector<int32_t>& cluster, int32_t nc) {
  WeightedGraph c;
  c.weight.assign(nc, 0);
  for (int32_t v = 0; v < g.size(); ++v) c.weight[cluster[v]] += g.weight[v];
  // Sized up front: the finer level's edges bound the pairs, the sorted pairs the distinct ones.
  std::vector<std::pair<int64_t, int64_t>> edges;
  edges.reserve(g.adj.size());
  for (int32_t v = 0; v < g.size(); ++v) {
    for (int64_t e = g.offsets[v]; e < g.offsets[v + 1]; ++e) {
      const int64_t a = cluster[v], b = cluster[g.adj[e]];
      if (a != b) edges.push_back({(a << 32) | b, g.edge_weight[e]});
    }
  }
  std::sort(edges.begin(), edges.end());
  size_t distinct = 0;
  for (size_t i = 0; i < edges.size(); ++i)
    distinct += i == 0 || edges[i].first != edges[i - 1].first;
  c.adj.reserve(distinct);
  c.edge_weight.reserve(distinct);
  c.offsets.assign(nc + 1, 0);
  for (size_t i = 0; i < edges.size(); ++i) {
    if (i > 0 && edges[i].first == edges[i - 1].first) {
      c.edge_weight.back() += edges[i].second;
      continue;
    }
    c.adj.push_back(static_cast<int32_t>(edges[i].first & 0xffffffff));
    c.edge_weight.push_back(edges[i].second);
    ++c.offsets[(edges[i].first >> 32) + 1];
  }
  for (int32_t v = 0; v < nc; ++v) c.offsets[v + 1] += c.offsets[v];
  return c;
}

// Fennel marginal cost of adding `w` vertices to a part of `size` (gamma = 1.5).
double FennelCost(double alpha, int64_t size, int64_t w) {
  const double a = static_cast<double>(size), b = static_cast<double>(size + w);
  return alpha * (b * std::sqrt(b) - a * std::sqrt(a));
}

// Moves vertices of `g` between parts while the Fennel objective improves and the part fits.
void RefineWeighted(const WeightedGraph& g, int k, int64_t cap, double alpha,
                    std::vector<int32_t>& part, std::vector<int64_t>& sizes) {
  std::vector<double> conn(k, 0.0);
  std::vector<int32_t> touched;
  for (int pass = 0; pass < 10; ++pass) {
    int64_t moves = 0;
    for (int32_t v = 0; v < g.size(); ++v) {
      touched.clear();
      for (int64_t e = g.offsets[v]; e < g.offsets[v + 1]; ++e) {
        const int32_t p = part[g.adj[e]];
        if (conn[p] == 0) touched.push_back(p);
        conn[p] += static_cast<double>(g.edge_weight[e]);
      }
      const int32_t cur = part[v];
      const int64_t w = g.weight[v];
      const double stay = conn[cur] - FennelCost(alpha, sizes[cur] - w, w);
      int32_t best = -1;
      double best_score = stay;
      for (int32_t p : touched) {
        if (p == cur || sizes[p] + w > cap) continue;
        const double s = conn[p] - FennelCost(alpha, sizes[p], w);
        if (s > best_score + 1e-9) {
          best = p;
          best_score = s;
        }
      }
      for (int32_t p : touched) conn[p] = 0;
      if (best >= 0) {
        sizes[cur] -= w;
        sizes[best] += w;
        part[v] = best;
        ++moves;
      }
    }
    if (moves == 0) break;
  }
}

}  // namespace

namespace {

// The vertices of g in breadth-first order, component by component from the lowest ID.
std::vector<int32_t> BfsOrder(const WeightedGraph& g) {
  const int32_t n = g.size();
  std::vector<int32_t> order;
  order.reserve(n);
  std::vector<uint8_t> seen(n, 0);
  for (int32_t start = 0; start < n; ++start) {
    if (seen[start]) continue;
    seen[start] = 1;
    order.push_back(start);
    for (size_t h = order.size() - 1; h < order.size(); ++h) {
      const int32_t c = order[h];
      for (int64_t e = g.offsets[c]; e < g.offsets[c + 1]; ++e) {
        if (!seen[g.adj[e]]) {
          seen[g.adj[e]] = 1;
          order.push_back(g.adj[e]);
        }
      }
    }
  }
  return order;
}

// Places g's vertices greedily in `order`: each goes to the part with the best Fennel score that
// still fits it under `cap` (the lightest part where none does; refinement rebalances). *sizes
// (k entries, zero) gets the parts' weights.
std::vector<int32_t> GreedyPlace(const WeightedGraph& g, const std::vector<int32_t>& order, int k,
                                 int64_t cap, double alpha, std::vector<int64_t>* sizes) {
  std::vector<int32_t> part(g.size(), -1);
  std::vector<double> conn(k, 0.0);
  for (int32_t c : order) {
    std::fill(conn.begin(), conn.end(), 0.0);
    for (int64_t e = g.offsets[c]; e < g.offsets[c + 1]; ++e) {
      const int32_t p = part[g.adj[e]];
      if (p >= 0) conn[p] += static_cast<double>(g.edge_weight[e]);
    }
    int32_t best = -1;
    double best_score = 0;
    int32_t lightest = 0;
    for (int32_t p = 0; p < k; ++p) {
      if ((*sizes)[p] < (*sizes)[lightest]) lightest = p;
      if ((*sizes)[p] + g.weight[c] > cap) continue;
      const double s = conn[p] - FennelCost(alpha, (*sizes)[p], g.weight[c]);
      if (best < 0 || s > best_score) {
        best = p;
        best_score = s;
      }
    }
    if (best < 0) best = lightest;
    part[c] = best;
    (*sizes)[best] += g.weight[c];
  }
  return part;
}

}  // namespace

std::vector<int32_t> MultilevelPlace(const WeightedGraph& fine, int k, int64_t cap, double alpha) {
  std::vector<WeightedGraph> levels;
  std::vector<std::vector<int32_t>> maps;  // maps[i]: level i vertex -> level i+1 vertex
  const WeightedGraph* g = &fine;
  // Coarse clusters up to half a part: the coarsest graph then has a few vertices per part.
  const int64_t bound = std::max<int64_t>(1, cap / 2);
  while (g->size() > 2 * k) {
    int32_t nc = 0;
    std::vector<int32_t> cluster = ClusterWeighted(*g, bound, &nc);
    if (nc > g->size() * 9 / 10) break;  // no longer shrinking
    levels.push_back(Contract(*g, cluster, nc));
    maps.push_back(std::move(cluster));
    g = &levels.back();
  }
  std::vector<int64_t> sizes(k, 0);
  std::vector<int32_t> part = GreedyPlace(*g, BfsOrder(*g), k, cap, alpha, &sizes);
  RefineWeighted(*g, k, cap, alpha, part, sizes);
  // Projected back level by level, refined at each.
  for (size_t level = levels.size(); level-- > 0;) {
    const WeightedGraph& finer = level == 0 ? fine : levels[level - 1];
    std::vector<int32_t> projected(finer.size());
    for (int32_t v = 0; v < finer.size(); ++v) projected[v] = part[maps[level][v]];
    part = std::move(projected);
    RefineWeighted(finer, k, cap, alpha, part, sizes);
  }
  return part;
}

}  // namespace skiff::partition
