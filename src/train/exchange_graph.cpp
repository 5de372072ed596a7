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
                             const OwnedRows* own, int64_t list_chunk_ids)
    : ranges_(ranges), comm_(comm), own_(own), list_chunk_ids_(list_chunk_ids) {
  SKIFF_CHECK(comm != nullptr && own != nullptr && ranges.size() == comm->size());
  SKIFF_CHECK(own->begin() == ranges.begin(comm->rank()) && own->end() == ranges.end(comm->rank()));
}

int64_t ExchangeGraph::Degree(int64_t v) const {
  if (own_->Owns(v)) return own_->Degree(v);
  const auto it = fetched_.find(v);
  SKIFF_CHECK_MSG(it != fetched_.end(), "a remote node was not announced before its degree");
  return it->second.degree;
}

Status ExchangeGraph::NeighborsAt(int64_t v, std::span<const int64_t> positions,
                                  int64_t* out) const {
  if (own_->Owns(v) && own_->ListInMemory(v)) {
    own_->NeighborsAt(v, positions, out);
    return Status::Ok();
  }
  const auto it = fetched_.find(v);
  SKIFF_CHECK_MSG(it != fetched_.end(), "a node was not announced before its row");
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

ExchangeGraph::Fetched ExchangeGraph::Describe(
    int64_t v, const Ask& ask,
    const std::function<void(std::span<const int64_t>, int64_t*)>& at) const {
  Fetched f;
  f.degree = own_->Degree(v);
  const int layers = static_cast<int>(ask.fanouts.size());
  if (ask.hop == layers) return f;  // degree only
  bool whole = false;
  for (int l = 0; l <= layers - 1 - ask.hop; ++l) {
    whole = whole || ask.fanouts[l] < 0 || ask.fanouts[l] >= f.degree;
  }
  if (whole) {
    f.whole = true;
    f.positions.resize(static_cast<size_t>(f.degree));
    for (int64_t p = 0; p < f.degree; ++p) f.positions[static_cast<size_t>(p)] = p;
  } else {
    const int64_t k = SampleLength(ask.fanouts.data(), layers, ask.hop, f.degree);
    if (k > 0) {
      NodeDrawRng rng = NodeDrawRngFor(ask.draw_key, v);
      sample_.resize(static_cast<size_t>(k));
      f.positions.resize(static_cast<size_t>(k));
      draw_.Draw(f.degree, k, rng, sample_.data());
      sampler::SortPositions(f.degree, k, sample_.data(), f.positions.data());
    }
  }
  f.neighbors.resize(f.positions.size());
  if (!f.positions.empty()) at(f.positions, f.neighbors.data());  // none: the row is not touched
  if (f.whole) f.positions.clear();
  return f;
}

Status ExchangeGraph::DescribeOwn(std::span<const int64_t> nodes, const Ask& ask,
                                  const Emit& emit) const {
  const bool rows = ask.hop < static_cast<int>(ask.fanouts.size());
  // The nodes whose lists are read, in order; the chunk read last covers read[first, next).
  std::vector<size_t> read;
  if (rows) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!own_->ListInMemory(nodes[i]) && own_->Degree(nodes[i]) > 0) read.push_back(i);
    }
  }
  std::vector<int64_t> chunk_nodes, indptr, lists;
  size_t first = 0, next = 0, cursor = 0;  // read[cursor] is the next node read
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int64_t v = nodes[i];
    if (!rows || own_->ListInMemory(v) || own_->Degree(v) == 0) {
      SKIFF_RETURN_IF_ERROR(emit(i, Describe(v, ask, [&](std::span<const int64_t> p, int64_t* o) {
                                   own_->NeighborsAt(v, p, o);
                                 })));
      continue;
    }
    if (cursor == next) {  // the next chunk, from node i on
      first = next;
      chunk_nodes.clear();
      int64_t ids = 0;
      while (next < read.size() &&
             (next == first || ids + own_->Degree(nodes[read[next]]) <= list_chunk_ids_)) {
        ids += own_->Degree(nodes[read[next]]);
        chunk_nodes.push_back(nodes[read[next++]]);
      }
      SKIFF_RETURN_IF_ERROR(own_->Lists(chunk_nodes, &indptr, &lists));
    }
    const int64_t* row = lists.data() + indptr[cursor++ - first];
    SKIFF_RETURN_IF_ERROR(emit(i, Describe(v, ask, [&](std::span<const int64_t> p, int64_t* o) {
                                 for (size_t q = 0; q < p.size(); ++q) o[q] = row[p[q]];
                               })));
  }
  return Status::Ok();
}

Result<std::vector<int64_t>> ExchangeGraph::Serve(std::span<const int64_t> request) const {
  std::vector<int64_t> reply;
  if (request.empty()) return reply;
  if (request.size() < 3) return Status::InvalidArgument("a request without its header");
  Ask ask;
  ask.hop = static_cast<int>(request[0]);
  ask.draw_key = static_cast<uint64_t>(request[1]);
  const int layers = static_cast<int>(request[2]);
  if (layers < 1 || request.size() < 3 + static_cast<size_t>(layers) || ask.hop < 0 ||
      ask.hop > layers) {
    return Status::InvalidArgument("a request with a malformed header");
  }
  ask.fanouts.assign(request.begin() + 3, request.begin() + 3 + layers);
  const std::span<const int64_t> nodes = request.subspan(3 + static_cast<size_t>(layers));
  for (int64_t v : nodes) {
    if (!own_->Owns(v)) return Status::InvalidArgument("a request for node " + std::to_string(v));
  }
  SKIFF_RETURN_IF_ERROR(DescribeOwn(nodes, ask, [&](size_t, Fetched f) {
    reply.push_back(f.degree);
    if (ask.hop == layers) {
      reply.push_back(kDegreeOnly);
    } else if (f.whole) {
      reply.push_back(kWholeRow);
      reply.insert(reply.end(), f.neighbors.begin(), f.neighbors.end());
    } else {
      reply.push_back(kSample);
      reply.push_back(static_cast<int64_t>(f.positions.size()));
      reply.insert(reply.end(), f.positions.begin(), f.positions.end());
      reply.insert(reply.end(), f.neighbors.begin(), f.neighbors.end());
    }
    return Status::Ok();
  }));
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
  std::vector<int64_t> own_read;  // own nodes whose lists are not in memory
  for (int64_t v : request.nodes) {
    if (!own_->Owns(v)) {
      asked[static_cast<size_t>(ranges_.OwnerOf(v))].push_back(v);
    } else if (!own_->ListInMemory(v)) {
      own_read.push_back(v);
    }
  }
  if (request.hop < static_cast<int>(request.fanouts.size()) && !own_read.empty()) {
    const Ask ask{request.hop, request.draw_key, {request.fanouts.begin(), request.fanouts.end()}};
    SKIFF_RETURN_IF_ERROR(DescribeOwn(own_read, ask, [&](size_t i, Fetched f) {
      fetched_[own_read[i]] = std::move(f);
      return Status::Ok();
    }));
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
