// ExchangeGraph: the graph as one rank of an owned-partition job sees it while it samples its part
// of a batch. The rank holds the adjacency lists of the nodes it owns (NodeRanges, OwnedRows: in
// memory, or through its buffer pool within --memory) and fetches the others' from their owners,
// one exchange per hop.
//
// The sampler announces each hop's newly expanded nodes (GraphSource::WillExpand). The rank sends
// the remote ones to their owners in one personalised exchange (Communicator::AllToAll) and, in
// the same exchange, answers the other ranks' requests for its own nodes. For each node asked for,
// the owner returns the node's degree and either its whole row (when a block of the node takes
// every neighbour: fanout -1 or >= the degree) or only the positions and neighbours of the ordered
// sample the node will draw: the owner draws that sample itself, with the batch's draw key and the
// node's own generator (skiff/neighbor_draw.h), so it sends exactly the positions the asking rank's
// sampler will ask for. For the outermost hop of a sampler that records degrees, the degrees
// alone. The fetched rows are kept until the next batch starts (hop 0). The rank's own nodes whose
// lists are not in memory (OwnedRows::ListInMemory) are described the same way at their hop, from
// their lists read in chunks (kListChunkIds), so a batch keeps their samples, not their lists.
//
// So a rank's part of a batch is sampled exactly as one process samples the same seeds with the
// same rng seed on the whole graph (the sampler's picks depend on a node's degree, its row and the
// draw key only), and what crosses ranks per batch is the sampled neighbours of remote nodes, not
// their rows.
//
// Messages are int64 arrays. A request: hop, draw key, the number of layers, the fanouts, then
// the nodes asked for. A reply, per node asked for in order: degree, kind (0: degree only; 1: the
// whole row follows, degree IDs; 2: k, then k ascending positions, then their k neighbours).
//
// Every rank must sample the same sequence of batches, one batch at a time, and all with this
// source: each batch costs every rank the same number of exchanges (a rank with no seeds in a batch
// samples an empty one). Not thread-safe: one sampling thread, the thread that drives the
// communicator.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "skiff/dist/communicator.h"
#include "skiff/sampler/graph_source.h"
#include "skiff/sampler/ordered_draw.h"
#include "skiff/status.h"
#include "skiff/train/node_ranges.h"
#include "skiff/train/owned_rows.h"

namespace skiff::train {

// What one rank's exchanges moved (counted since construction).
struct ExchangeTraffic {
  int64_t exchanges = 0;
  int64_t rows_fetched = 0;     // remote nodes whose degree and picks (or row) this rank asked for
  int64_t rows_served = 0;      // own nodes other ranks asked for
  uint64_t bytes_sent = 0;      // requests and replies, to other ranks
  uint64_t bytes_received = 0;  // from other ranks
  void Add(uint64_t sent, uint64_t received) {
    bytes_sent += sent;
    bytes_received += received;
  }
};

class ExchangeGraph final : public sampler::GraphSource {
 public:
  // Most neighbour IDs the rank reads from its own lists at a time (to answer a request, or for a
  // hop of its own part whose lists are not in memory): 8 MiB of int64 IDs, a longer list alone.
  static constexpr int64_t kListChunkIds = int64_t{1} << 20;

  // The rank's own lists come from `own` (its range: ranges.begin(rank) .. ranges.end(rank)),
  // read `list_chunk_ids` IDs at a time where not in memory. `ranges`, `comm` and `own` must
  // outlive the graph; ranges.size() == comm->size().
  ExchangeGraph(const NodeRanges& ranges, dist::Communicator* comm, const OwnedRows* own,
                int64_t list_chunk_ids = kListChunkIds);

  int64_t num_nodes() const override { return ranges_.num_nodes(); }
  // For a node of this rank's range, or one fetched for the current batch (a programmer error
  // otherwise: the sampler announces every node before it asks).
  int64_t Degree(int64_t v) const override;
  Status NeighborsAt(int64_t v, std::span<const int64_t> positions, int64_t* out) const override;
  Status WillExpand(const sampler::ExpandRequest& request) const override;

  const ExchangeTraffic& traffic() const { return traffic_; }

 private:
  // What the sampler of a batch needs of one node expanded at some hop: its degree and, unless
  // the hop is the outermost, its whole row (a block takes every neighbour) or the ordered sample
  // the node draws (its positions, ascending, and their neighbours).
  struct Fetched {
    int64_t degree = 0;
    bool whole = false;              // neighbors is the whole row
    std::vector<int64_t> positions;  // else: the sample's positions, ascending
    std::vector<int64_t> neighbors;  // whole row, or the neighbours at `positions`
  };
  // What a request (or the rank's own WillExpand) asks of each node: its header fields.
  struct Ask {
    int hop = 0;
    uint64_t draw_key = 0;
    std::vector<int> fanouts;
  };
  using Emit = std::function<Status(size_t i, Fetched fetched)>;
  // Calls emit(i, ...) for each own nodes[i] in order, reading the lists not in memory in chunks
  // of at most list_chunk_ids_ IDs (a longer list alone).
  Status DescribeOwn(std::span<const int64_t> nodes, const Ask& ask, const Emit& emit) const;
  // The Fetched of own node v given access to its row: at(positions, out).
  Fetched Describe(int64_t v, const Ask& ask,
                   const std::function<void(std::span<const int64_t>, int64_t*)>& at) const;
  // This rank's reply to one request (the message another rank sent it).
  Result<std::vector<int64_t>> Serve(std::span<const int64_t> request) const;
  // Installs one owner's reply to the nodes this rank asked it for.
  Status Install(std::span<const int64_t> asked, std::span<const int64_t> reply, int owner) const;

  const NodeRanges& ranges_;
  dist::Communicator* comm_;
  const OwnedRows* own_;
  const int64_t list_chunk_ids_;
  // The current batch's remote nodes, and its own nodes whose lists are not in memory.
  mutable std::unordered_map<int64_t, Fetched> fetched_;
  mutable ExchangeTraffic traffic_;
  mutable sampler::OrderedDraw draw_;  // Describe's scratch
  mutable std::vector<int64_t> sample_;
};

}  // namespace skiff::train
