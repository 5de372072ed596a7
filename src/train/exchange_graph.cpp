#include "skiff/train/exchange_graph.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "skiff/neighbor_draw.h"
#include "skiff/sampler/ordered_draw.h"

namespace skiff::train {
namespace {

// Reply kinds (exchange_graph.h).
constexpr int64_t kDegreeOnly = 0;
constexpr int64_t kWholeRow = 1;
constexpr int64_t kSample = 2;

std::string ToBytes(const std::vector<int64_t>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t));
}

// Copied out: a message's bytes need not be aligned for int64.
std::vector<int64_t> FromBytes(const std::string& bytes) {
  std::vector<int64_t> values(bytes.size() / sizeof(int64_t));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(int64_t));
  return values;
}

Status Malformed(int rank, const std::string& what) {
  return Status::Internal("rank " + std::to_string(rank) + " sent a malformed row exchange: " +
                          what + " (the ranks run different builds or options)");
}

}  // namespace

ExchangeGraph::ExchangeGraph(const NodeRanges& ranges, dist::Communicator* comm,
                             std::vector<int64_t> offsets, std::vector<int64_t> neighbors)
    : ranges_(ranges),
      comm_(comm),
      begin_(ranges.begin(comm->rank())),
      end_(ranges.end(comm->rank())),
      offsets_(std::move(offsets)),
      neighbors_(std::move(neighbors)) {}

Result<std::unique_ptr<ExchangeGraph>> ExchangeGraph::FromRows(const NodeRanges& ranges,
                                                               dist::Communicator* comm,
                                                               std::vector<int64_t> offsets,
                                                               std::vector<int64_t> neighbors) {
  SKIFF_CHECK(comm != nullptr && ranges.size() == comm->size());
  const int rank = comm->rank();
  const int64_t count = ranges.end(rank) - ranges.begin(rank);
  if (static_cast<int64_t>(offsets.size()) != count + 1 || offsets.front() != 0 ||
      offsets.back() != static_cast<int64_t>(neighbors.size())) {
    return Status::InvalidArgument("rank " + std::to_string(rank) + " owns " +
                                   std::to_string(count) + " nodes but was given " +
                                   std::to_string(offsets.size()) + " offsets and " +
                                   std::to_string(neighbors.size()) + " neighbours");
  }
  return std::unique_ptr<ExchangeGraph>(
      new ExchangeGraph(ranges, comm, std::move(offsets), std::move(neighbors)));
}

Result<std::unique_ptr<ExchangeGraph>> ExchangeGraph::Load(const format::Dataset& dataset,
                                                           const NodeRanges& ranges,
                                                           dist::Communicator* comm) {
  SKIFF_CHECK(comm != nullptr);
  if (ranges.num_nodes() != dataset.manifest().num_nodes) {
    return Status::InvalidArgument("the node ranges cover " + std::to_string(ranges.num_nodes()) +
                                   " nodes, the dataset has " +
                                   std::to_string(dataset.manifest().num_nodes));
  }
  const int rank = comm->rank();
  std::vector<int64_t> offsets, neighbors;
  SKIFF_RETURN_IF_ERROR(dataset.LoadGraphRange(
      ranges.begin(rank), ranges.end(rank) - ranges.begin(rank), &offsets, &neighbors));
  return FromRows(ranges, comm, std::move(offsets), std::move(neighbors));
}

int64_t ExchangeGraph::Degree(int64_t v) const {
  if (Owns(v)) return OwnDegree(v);
  const auto it = fetched_.find(v);
  SKIFF_CHECK_MSG(it != fetched_.end(), "a remote node was not announced before its degree");
  return it->second.degree;
}

Status ExchangeGraph::NeighborsAt(int64_t v, std::span<const int64_t> positions,
                                  int64_t* out) const {
  if (Owns(v)) {
    const int64_t* row = Row(v);
    for (size_t i = 0; i < positions.size(); ++i) out[i] = row[positions[i]];
    return Status::Ok();
  }
  const auto it = fetched_.find(v);
  SKIFF_CHECK_MSG(it != fetched_.end(), "a remote node was not announced before its row");
  const Fetched& f = it->second;
  if (f.whole) {
    for (size_t i = 0; i < positions.size(); ++i) out[i] = f.neighbors[positions[i]];
    return Status::Ok();
  }
  // Both ascending: one walk.
  size_t at = 0;
  for (size_t i = 0; i < positions.size(); ++i) {
    while (at < f.positions.size() && f.positions[at] < positions[i]) ++at;
    if (at == f.positions.size() || f.positions[at] != positions[i]) {
      return Status::Internal("node " + std::to_string(v) + ": position " +
                              std::to_string(positions[i]) +
                              " was not among the sample its owner sent");
    }
    out[i] = f.neighbors[at];
  }
  return Status::Ok();
}

Result<std::vector<int64_t>> ExchangeGraph::Serve(std::span<const int64_t> request) const {
  std::vector<int64_t> reply;
  if (request.empty()) return reply;
  if (request.size() < 3) return Status::InvalidArgument("a request without its header");
  const int hop = static_cast<int>(request[0]);
  const auto draw_key = static_cast<uint64_t>(request[1]);
  const int layers = static_cast<int>(request[2]);
  if (layers < 1 || request.size() < 3 + static_cast<size_t>(layers) || hop < 0 || hop > layers) {
    return Status::InvalidArgument("a request with a malformed header");
  }
  std::vector<int> fanouts(request.begin() + 3, request.begin() + 3 + layers);
  std::vector<int64_t> sample, sorted;
  sampler::OrderedDraw draw;
  for (size_t i = 3 + static_cast<size_t>(layers); i < request.size(); ++i) {
    const int64_t v = request[i];
    if (!Owns(v)) return Status::InvalidArgument("a request for node " + std::to_string(v));
    const int64_t d = OwnDegree(v);
    reply.push_back(d);
    if (hop == layers) {
      reply.push_back(kDegreeOnly);
      continue;
    }
    bool whole = false;
    for (int l = 0; l <= layers - 1 - hop; ++l) whole = whole || fanouts[l] < 0 || fanouts[l] >= d;
    const int64_t* row = Row(v);
    if (whole) {
      reply.push_back(kWholeRow);
      reply.insert(reply.end(), row, row + d);
      continue;
    }
    const int64_t k = SampleLength(fanouts.data(), layers, hop, d);
    reply.push_back(kSample);
    reply.push_back(k);
    if (k == 0) continue;
    NodeDrawRng rng = NodeDrawRngFor(draw_key, v);
    sample.resize(static_cast<size_t>(k));
    sorted.resize(static_cast<size_t>(k));
    draw.Draw(d, k, rng, sample.data());
    sampler::SortPositions(d, k, sample.data(), sorted.data());
    reply.insert(reply.end(), sorted.begin(), sorted.end());
    for (int64_t p : sorted) reply.push_back(row[p]);
  }
  return reply;
}

Status ExchangeGraph::Install(std::span<const int64_t> asked, std::span<const int64_t> reply,
                              int owner) const {
  size_t at = 0;
  auto take = [&](size_t count) -> Result<std::span<const int64_t>> {
    if (reply.size() - at < count) return Malformed(owner, "a reply ends early");
    const std::span<const int64_t> out = reply.subspan(at, count);
    at += count;
    return out;
  };
  for (int64_t v : asked) {
    SKIFF_ASSIGN_OR_RETURN(const auto head, take(2));
    Fetched f;
    f.degree = head[0];
    if (f.degree < 0) return Malformed(owner, "a negative degree");
    if (head[1] == kWholeRow) {
      SKIFF_ASSIGN_OR_RETURN(const auto row, take(static_cast<size_t>(f.degree)));
      f.whole = true;
      f.neighbors.assign(row.begin(), row.end());
    } else if (head[1] == kSample) {
      SKIFF_ASSIGN_OR_RETURN(const auto k, take(1));
      if (k[0] < 0 || k[0] > f.degree) return Malformed(owner, "a sample longer than its row");
      SKIFF_ASSIGN_OR_RETURN(const auto positions, take(static_cast<size_t>(k[0])));
      SKIFF_ASSIGN_OR_RETURN(const auto neighbors, take(static_cast<size_t>(k[0])));
      f.positions.assign(positions.begin(), positions.end());
      f.neighbors.assign(neighbors.begin(), neighbors.end());
    } else if (head[1] != kDegreeOnly) {
      return Malformed(owner, "an unknown reply kind");
    }
    fetched_[v] = std::move(f);
  }
  if (at != reply.size()) return Malformed(owner, "a reply longer than its request");
  return Status::Ok();
}

Status ExchangeGraph::WillExpand(const sampler::ExpandRequest& request) const {
  if (request.hop == 0) fetched_.clear();  // a new batch
  const int ranks = comm_->size(), self = comm_->rank();
  std::vector<int64_t> header = {request.hop, static_cast<int64_t>(request.draw_key),
                                 static_cast<int64_t>(request.fanouts.size())};
  header.insert(header.end(), request.fanouts.begin(), request.fanouts.end());
  std::vector<std::vector<int64_t>> asked(static_cast<size_t>(ranks));
  for (int64_t v : request.nodes) {
    if (!Owns(v)) asked[static_cast<size_t>(ranges_.OwnerOf(v))].push_back(v);
  }
  std::vector<std::string> requests(static_cast<size_t>(ranks));
  uint64_t sent = 0;
  for (int r = 0; r < ranks; ++r) {
    if (asked[r].empty()) continue;
    std::vector<int64_t> message = header;
    message.insert(message.end(), asked[r].begin(), asked[r].end());
    requests[r] = ToBytes(message);
    sent += requests[r].size();
    traffic_.rows_fetched += static_cast<int64_t>(asked[r].size());
  }
  const std::string what = "rows of hop " + std::to_string(request.hop);
  SKIFF_ASSIGN_OR_RETURN(std::vector<std::string> incoming,
                         comm_->AllToAll(std::move(requests), what));
  std::vector<std::string> replies(static_cast<size_t>(ranks));
  uint64_t received = 0;
  for (int r = 0; r < ranks; ++r) {
    if (r == self || incoming[r].empty()) continue;
    received += incoming[r].size();
    const std::vector<int64_t> message = FromBytes(incoming[r]);
    auto reply = Serve(message);
    if (!reply.ok()) return Malformed(r, reply.status().message());
    traffic_.rows_served += static_cast<int64_t>(message.size()) - 3 - message[2];
    replies[r] = ToBytes(*reply);
    sent += replies[r].size();
  }
  SKIFF_ASSIGN_OR_RETURN(std::vector<std::string> answers,
                         comm_->AllToAll(std::move(replies), what + " (replies)"));
  for (int r = 0; r < ranks; ++r) {
    if (r == self) continue;
    received += answers[r].size();
    SKIFF_RETURN_IF_ERROR(Install(asked[r], FromBytes(answers[r]), r));
  }
  traffic_.exchanges += 1;
  traffic_.Add(sent, received);
  return Status::Ok();
}

}  // namespace skiff::train
