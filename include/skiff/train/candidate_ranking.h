// Ranking held-out pairs among their own candidates (a dataset's per-pair ranking candidates:
// OGB ogbl-citation2's protocol, K per pair) within a bound on the representations held.
//
// Every node a pair or a candidate names needs the encoder's output, and with K = 1000 the
// candidates of a few thousand pairs name nearly every node of the graph: more than a memory
// budget holds at once. So the ranks are summed over chunks. First the pairs' sources and
// destinations are encoded and kept (2 x pairs rows). Then the node batches that hold candidates
// are walked in ID order, as many at a time as `chunk_bytes` of representations allow; for each
// chunk, every pair scores its destination together with those of its candidates that the chunk
// holds, in one decoder call, and counts the candidates above it and tied with it. A pair's rank
// is 1 + above + ties / 2 (link_metrics.h, RankAmong), and the counts add over chunks, so the
// result does not depend on the chunking: with a decoder that scores each pair on its own (dot,
// DistMult) the ranks equal the unchunked ones exactly; the MLP's batched arithmetic may move
// near-ties by float rounding. Each node batch is encoded once for the candidates (and once more
// when it also holds a source or destination): the same work as encoding them all at once.
//
// Memory: the candidates as given, the kept rows (2 x pairs x dim floats), one chunk (at most
// `chunk_bytes`: rows of dim floats plus an 8-byte node ID each), a bitmap of the needed nodes
// (N / 8 bytes), two int32 counters per pair, and with a filter one byte per candidate.
//
// Thread safety: a plain function; the callbacks are called on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "skiff/status.h"

namespace skiff::train {

struct CandidateRankingInput {
  std::span<const int64_t> pairs;       // (source, destination) interleaved; the first `count`
  int64_t count = 0;                    // pairs ranked
  std::span<const int64_t> candidates;  // `k` per pair, row-major in pair order
  int64_t k = 0;
  int64_t num_nodes = 0;
  int64_t batch_nodes = 0;   // nodes per batch of the encoder (batch c: [c x batch_nodes, ...))
  int64_t dim = 0;           // floats per representation
  uint64_t chunk_bytes = 0;  // representations held per chunk (0: every candidate at once)
};

// Hands the representations of node batches `batches` (ascending) to `sink`, batch by batch
// (LinkTrainer::EncodeBatches).
using BatchEncoder = std::function<Status(
    std::span<const int64_t> batches,
    const std::function<Status(std::span<const int64_t> nodes, const float* rows)>& sink)>;
// The decoder's score of source row `src` against each of `cand` rows of `emb` (`rows` rows),
// into *scores (LinkDecoder::ScoreCross).
using CrossScorer =
    std::function<Status(const float* emb, int64_t rows, int32_t src, std::span<const int32_t> cand,
                         std::vector<float>* scores)>;
// Marks (1) in `known` the candidates of source `s` that filtered ranking leaves out; null: raw.
using KnownFilter =
    std::function<Status(int64_t s, std::span<const int64_t> nodes, std::span<uint8_t> known)>;

// Each pair's rank among its candidates (see above), in pair order. InvalidArgument for a node ID
// outside [0, num_nodes) or too few candidates; the callbacks' errors.
Result<std::vector<double>> RankAmongCandidates(const CandidateRankingInput& in,
                                                const BatchEncoder& encode,
                                                const CrossScorer& score,
                                                const KnownFilter& known = nullptr);

}  // namespace skiff::train
