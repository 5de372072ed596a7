#include "skiff/train/candidate_ranking.h"

#include <algorithm>
#include <string>

namespace skiff::train {
namespace {

Status CheckNodes(std::span<const int64_t> nodes, int64_t num_nodes, const char* what) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] < 0 || nodes[i] >= num_nodes) {
      return Status::InvalidArgument(std::string(what) + " " + std::to_string(i) + " is node " +
                                     std::to_string(nodes[i]) + ", outside [0, " +
                                     std::to_string(num_nodes) + ")");
    }
  }
  return Status::Ok();
}

Status CheckInput(const CandidateRankingInput& in) {
  if (in.count < 0 || in.k < 1 || in.batch_nodes < 1 || in.dim < 1) {
    return Status::InvalidArgument("candidate ranking: " + std::to_string(in.count) + " pairs, " +
                                   std::to_string(in.k) + " candidates each, batches of " +
                                   std::to_string(in.batch_nodes) + " nodes, dim " +
                                   std::to_string(in.dim));
  }
  if (static_cast<int64_t>(in.pairs.size()) < 2 * in.count ||
      static_cast<int64_t>(in.candidates.size()) < in.count * in.k) {
    return Status::InvalidArgument("candidate ranking: " + std::to_string(in.count) +
                                   " pairs need " + std::to_string(in.count * in.k) +
                                   " candidates; " + std::to_string(in.candidates.size()) +
                                   " given");
  }
  SKIFF_RETURN_IF_ERROR(
      CheckNodes(in.pairs.first(static_cast<size_t>(2 * in.count)), in.num_nodes, "pair end"));
  return CheckNodes(in.candidates.first(static_cast<size_t>(in.count * in.k)), in.num_nodes,
                    "candidate");
}

// One bit per node.
class NodeSet {
 public:
  explicit NodeSet(int64_t n) : words_(static_cast<size_t>((n + 63) / 64), 0) {}
  void Add(int64_t v) { words_[static_cast<size_t>(v >> 6)] |= uint64_t{1} << (v & 63); }
  // Appends the members of [lo, hi) to *out, ascending.
  void Collect(int64_t lo, int64_t hi, std::vector<int64_t>* out) const {
    for (int64_t v = lo; v < hi; ++v) {
      const uint64_t word = words_[static_cast<size_t>(v >> 6)];
      if ((v & 63) == 0 && word == 0) {
        v += 63;  // a whole empty word (the loop adds the last one)
        continue;
      }
      if ((word >> (v & 63)) & 1) out->push_back(v);
    }
  }

 private:
  std::vector<uint64_t> words_;
};

// The representations of `nodes` (sorted, distinct) into rows of `out`, in that order.
Status EncodeRows(const BatchEncoder& encode, std::span<const int64_t> nodes, int64_t batch_nodes,
                  size_t dim, float* out) {
  std::vector<int64_t> batches;
  for (const int64_t v : nodes) {
    if (batches.empty() || batches.back() != v / batch_nodes) batches.push_back(v / batch_nodes);
  }
  return encode(batches, [&](std::span<const int64_t> batch, const float* rows) -> Status {
    for (size_t i = 0; i < batch.size(); ++i) {
      const auto at = std::lower_bound(nodes.begin(), nodes.end(), batch[i]);
      if (at == nodes.end() || *at != batch[i]) continue;
      std::copy_n(rows + i * dim, dim, out + static_cast<size_t>(at - nodes.begin()) * dim);
    }
    return Status::Ok();
  });
}

// Row of `v` among sorted `nodes` (present), offset by `first`.
int32_t RowOf(std::span<const int64_t> nodes, int64_t v, size_t first) {
  return static_cast<int32_t>(
      first + static_cast<size_t>(std::lower_bound(nodes.begin(), nodes.end(), v) - nodes.begin()));
}

}  // namespace

Result<std::vector<double>> RankAmongCandidates(const CandidateRankingInput& in,
                                                const BatchEncoder& encode,
                                                const CrossScorer& score,
                                                const KnownFilter& known) {
  SKIFF_RETURN_IF_ERROR(CheckInput(in));
  const auto count = static_cast<size_t>(in.count), k = static_cast<size_t>(in.k);
  const auto dim = static_cast<size_t>(in.dim);
  std::vector<uint8_t> left_out;  // filtered ranking: 1 for a candidate it leaves out
  if (known) {
    left_out.assign(count * k, 0);
    for (size_t i = 0; i < count; ++i) {
      SKIFF_RETURN_IF_ERROR(known(in.pairs[2 * i], in.candidates.subspan(i * k, k),
                                  std::span<uint8_t>(left_out).subspan(i * k, k)));
    }
  }
  // The pairs' ends, kept as the first rows of `emb` throughout.
  std::vector<int64_t> ends(in.pairs.begin(), in.pairs.begin() + static_cast<ptrdiff_t>(2 * count));
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  std::vector<float> emb(ends.size() * dim);
  SKIFF_RETURN_IF_ERROR(EncodeRows(encode, ends, in.batch_nodes, dim, emb.data()));

  NodeSet needed(in.num_nodes);
  for (size_t c = 0; c < count * k; ++c) {
    if (left_out.empty() || left_out[c] == 0) needed.Add(in.candidates[c]);
  }
  const uint64_t row_bytes = dim * sizeof(float) + sizeof(int64_t);
  const int64_t cap = in.chunk_bytes > 0
                          ? std::max<int64_t>(1, static_cast<int64_t>(in.chunk_bytes / row_bytes))
                          : INT64_MAX;
  const int64_t batches = (in.num_nodes + in.batch_nodes - 1) / in.batch_nodes;
  auto batch_end = [&](int64_t b) { return std::min(in.num_nodes, (b + 1) * in.batch_nodes); };
  std::vector<int32_t> above(count, 0), tied(count, 0);
  std::vector<int64_t> nodes;  // the chunk's candidate nodes, ascending
  std::vector<int32_t> rows;
  std::vector<float> scores;
  for (int64_t first = 0; first < batches;) {
    // The chunk: node batches [first, last) whose candidates fit the cap (one batch at least).
    nodes.clear();
    int64_t last = first;
    while (last < batches) {
      const size_t held = nodes.size();
      needed.Collect(last * in.batch_nodes, batch_end(last), &nodes);
      if (held > 0 && static_cast<int64_t>(nodes.size()) > cap) {
        nodes.resize(held);  // batch `last` opens the next chunk
        break;
      }
      ++last;
    }
    const int64_t lo = first * in.batch_nodes, hi = batch_end(last - 1);
    first = last;
    if (nodes.empty()) continue;
    emb.resize((ends.size() + nodes.size()) * dim);
    SKIFF_RETURN_IF_ERROR(
        EncodeRows(encode, nodes, in.batch_nodes, dim, emb.data() + ends.size() * dim));
    const auto total = static_cast<int64_t>(ends.size() + nodes.size());
    for (size_t i = 0; i < count; ++i) {
      // The destination first, then its candidates in this chunk: one call scores them alike (a
      // candidate equal to the destination ties it exactly).
      rows.assign(1, RowOf(ends, in.pairs[2 * i + 1], 0));
      for (size_t j = 0; j < k; ++j) {
        const int64_t v = in.candidates[i * k + j];
        if (v < lo || v >= hi || (!left_out.empty() && left_out[i * k + j] != 0)) continue;
        rows.push_back(RowOf(nodes, v, ends.size()));
      }
      if (rows.size() == 1) continue;
      SKIFF_RETURN_IF_ERROR(
          score(emb.data(), total, RowOf(ends, in.pairs[2 * i], 0), rows, &scores));
      for (size_t j = 1; j < scores.size(); ++j) {
        above[i] += scores[j] > scores[0] ? 1 : 0;
        tied[i] += scores[j] == scores[0] ? 1 : 0;
      }
    }
  }
  std::vector<double> ranks(count);
  for (size_t i = 0; i < count; ++i) ranks[i] = 1.0 + above[i] + 0.5 * tied[i];
  return ranks;
}

}  // namespace skiff::train
