#include "tools/skiff/link_predict.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "skiff/io/atomic_file.h"
#include "skiff/io/npy_writer.h"
#include "skiff/io/staged_dir.h"
#include "skiff/progress.h"
#include "skiff/train/export.h"
#include "skiff/train/gather_rows.h"

namespace skiff::cli {
namespace {

// Raw IDs read from a text file, `fields` per line, with the line each came from.
struct IdLines {
  std::vector<std::string> ids;
  std::vector<int64_t> lines;  // per line read: its line number (1-based)
};

Result<IdLines> ReadIdLines(const std::string& path, size_t fields) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read " + path);
  IdLines out;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream words(line);
    std::vector<std::string> got;
    for (std::string w; words >> w;) got.push_back(w);
    if (got.empty() || got[0][0] == '#') continue;
    if (got.size() != fields) {
      return Status::InvalidArgument(
          path + " line " + std::to_string(number) + ": " + std::to_string(got.size()) +
          " fields, expected " + std::to_string(fields) +
          (fields == 2 ? " (a pair of raw node IDs)" : " (a raw node ID)"));
    }
    out.ids.insert(out.ids.end(), got.begin(), got.end());
    out.lines.push_back(number);
  }
  if (in.bad()) return Status::IOError("reading " + path);
  if (out.lines.empty()) return Status::InvalidArgument(path + " names no nodes");
  return out;
}

// The dense IDs of the file's raw IDs, refusing one the dataset lacks with its line.
Result<std::vector<int64_t>> DenseIdsIn(const format::Dataset& dataset, const std::string& path,
                                        size_t fields) {
  SKIFF_ASSIGN_OR_RETURN(const IdLines read, ReadIdLines(path, fields));
  return train::DenseIdsOf(dataset, read.ids, [&](size_t i) {
    return path + " line " + std::to_string(read.lines[i / fields]);
  });
}

// The canonical encoding batches (LinkTrainer::EncodeBatches) of `batch_nodes` nodes.
int64_t BatchCount(const format::Dataset& dataset, int64_t batch_nodes) {
  return (dataset.manifest().num_nodes + batch_nodes - 1) / batch_nodes;
}

// This rank's share of `items` (ranks of `comm` take every W-th, from their rank; all of them
// without one).
template <typename T>
std::vector<T> ShareOf(const std::vector<T>& items, const dist::Communicator* comm) {
  if (comm == nullptr || comm->size() == 1) return items;
  std::vector<T> mine;
  for (size_t i = static_cast<size_t>(comm->rank()); i < items.size();
       i += static_cast<size_t>(comm->size())) {
    mine.push_back(items[i]);
  }
  return mine;
}

bool Lead(const dist::Communicator* comm) { return comm == nullptr || comm->rank() == 0; }

// The encoder's output for `nodes` (any order, repeats allowed) into *rows, one row per entry,
// from the canonical batches that hold them. With `comm` of several ranks (every rank passing the
// same nodes), each rank encodes every W-th of those batches and the rows reach rank 0
// (RowsToLead): *rows is complete on rank 0 and empty on the others. `show_progress`: a progress
// line.
Status EncodeNodes(train::LinkTrainer& trainer, std::span<const int64_t> nodes, int64_t batch_nodes,
                   const std::string& label, std::vector<float>* rows, dist::Communicator* comm,
                   bool show_progress) {
  const auto dim = static_cast<size_t>(trainer.options().link.out_dim);
  std::vector<std::pair<int64_t, size_t>> wanted(nodes.size());  // (node, entry)
  for (size_t i = 0; i < nodes.size(); ++i) wanted[i] = {nodes[i], i};
  std::sort(wanted.begin(), wanted.end());
  std::vector<int64_t> batches;
  for (const auto& [v, i] : wanted) {
    if (batches.empty() || batches.back() != v / batch_nodes) batches.push_back(v / batch_nodes);
  }
  const bool shared = comm != nullptr && comm->size() > 1;
  std::vector<int32_t> unused;
  std::optional<train::RowsToLead> to_lead;
  if (shared) {
    to_lead.emplace(*comm, static_cast<int64_t>(nodes.size()), static_cast<int64_t>(dim), &unused,
                    rows);
  } else {
    rows->assign(nodes.size() * dim, 0.0f);
  }
  OptionalProgress progress(show_progress, label + (shared ? " (rank 0's share)" : ""),
                            shared ? 0 : nodes.size(), "nodes");
  auto it = wanted.begin();
  SKIFF_RETURN_IF_ERROR(trainer.EncodeBatches(
      ShareOf(batches, comm), batch_nodes,
      [&](std::span<const int64_t> batch, const float* out) -> Status {
        const int64_t first = batch.front(), end = batch.back() + 1;
        while (it != wanted.end() && it->first < first) ++it;  // another rank's batch
        uint64_t copied = 0;
        for (; it != wanted.end() && it->first < end; ++it, ++copied) {
          const float* row = out + static_cast<size_t>(it->first - first) * dim;
          if (shared) {
            SKIFF_RETURN_IF_ERROR(to_lead->Add(static_cast<int64_t>(it->second), 0, {row, dim}));
          } else {
            std::copy(row, row + dim, rows->begin() + it->second * dim);
          }
        }
        progress.Add(copied);
        return Status::Ok();
      }));
  progress.Finish();
  if (!shared) return Status::Ok();
  SKIFF_RETURN_IF_ERROR(to_lead->SendAll());
  return to_lead->Finish();
}

std::vector<int64_t> SortedDistinct(std::vector<int64_t> nodes) {
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

int32_t PositionIn(const std::vector<int64_t>& sorted, int64_t v) {
  return static_cast<int32_t>(std::lower_bound(sorted.begin(), sorted.end(), v) - sorted.begin());
}

Status PublishInto(const std::string& out_dir,
                   const std::function<Status(const std::string& dir)>& write) {
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::absolute(out_dir, ec).parent_path();
  std::filesystem::create_directories(parent, ec);
  if (ec) return Status::IOError("create " + parent.string() + ": " + ec.message());
  SKIFF_ASSIGN_OR_RETURN(auto staged,
                         io::StagedDirectory::Create(out_dir, train::ExportReplaceable));
  SKIFF_RETURN_IF_ERROR(write(staged->staging()));
  return staged->Publish().WithContext("publishing " + out_dir);
}

Status ScorePairsOf(const format::Dataset& dataset, train::LinkTrainer& trainer,
                    int64_t batch_nodes, const std::string& pairs_path, const std::string& out_dir,
                    dist::Communicator* comm) {
  // Every rank reads the pairs (the nodes to encode); rank 0 scores and writes them.
  SKIFF_ASSIGN_OR_RETURN(const std::vector<int64_t> pairs, DenseIdsIn(dataset, pairs_path, 2));
  const std::vector<int64_t> nodes = SortedDistinct(pairs);
  std::vector<float> rows;
  SKIFF_RETURN_IF_ERROR(
      EncodeNodes(trainer, nodes, batch_nodes, "encode", &rows, comm, Lead(comm)));
  if (!Lead(comm)) return Status::Ok();
  std::vector<int32_t> src(pairs.size() / 2), dst(pairs.size() / 2);
  for (size_t i = 0; i < src.size(); ++i) {
    src[i] = PositionIn(nodes, pairs[2 * i]);
    dst[i] = PositionIn(nodes, pairs[2 * i + 1]);
  }
  std::vector<float> scores;
  SKIFF_RETURN_IF_ERROR(trainer.decoder().ScorePairs(
      rows.data(), static_cast<int64_t>(nodes.size()), src, dst, &scores));
  return PublishInto(out_dir, [&](const std::string& dir) {
    return io::WriteNpy(dir + "/scores.npy", scores.data(), {static_cast<int64_t>(scores.size())});
  });
}

// The best k candidates of one query: a min-heap on (score, then the larger node number first
// out), so that ties go to the smaller node number.
struct Candidate {
  float score;
  int64_t node;
};
bool Better(const Candidate& a, const Candidate& b) {
  return a.score > b.score || (a.score == b.score && a.node < b.node);
}

class TopK {
 public:
  explicit TopK(size_t k) : k_(k) {}
  void Offer(Candidate c) {
    if (heap_.size() < k_) {
      heap_.push_back(c);
      std::push_heap(heap_.begin(), heap_.end(), Better);
    } else if (Better(c, heap_.front())) {
      std::pop_heap(heap_.begin(), heap_.end(), Better);
      heap_.back() = c;
      std::push_heap(heap_.begin(), heap_.end(), Better);
    }
  }
  // The candidates kept, in no order.
  const std::vector<Candidate>& kept() const { return heap_; }
  std::vector<Candidate> Sorted() const {
    std::vector<Candidate> out = heap_;
    std::sort(out.begin(), out.end(), Better);
    return out;
  }

 private:
  size_t k_;
  std::vector<Candidate> heap_;
};

// Every rank's candidates of each query offered to rank 0's (`comm` of several ranks): the best k
// of the union are the best k of the whole, whatever the order they are offered in, since Better
// orders every pair of candidates.
Status MergeOnLead(dist::Communicator& comm, std::vector<TopK>* best) {
  std::string mine;
  for (const TopK& t : *best) {
    const auto count = static_cast<uint64_t>(t.kept().size());
    mine.append(reinterpret_cast<const char*>(&count), sizeof(count));
    mine.append(reinterpret_cast<const char*>(t.kept().data()),
                t.kept().size() * sizeof(Candidate));
  }
  SKIFF_ASSIGN_OR_RETURN(const std::vector<std::string> all,
                         comm.AllGather(mine, "top-k candidates"));
  if (comm.rank() != 0) return Status::Ok();
  for (size_t r = 1; r < all.size(); ++r) {
    const std::string& from = all[r];
    size_t at = 0;
    for (TopK& t : *best) {
      uint64_t count = 0;
      SKIFF_CHECK(at + sizeof(count) <= from.size());
      std::memcpy(&count, from.data() + at, sizeof(count));
      at += sizeof(count);
      SKIFF_CHECK(at + count * sizeof(Candidate) <= from.size());
      for (uint64_t j = 0; j < count; ++j) {
        Candidate c;
        std::memcpy(&c, from.data() + at, sizeof(c));
        at += sizeof(c);
        t.Offer(c);
      }
    }
  }
  return Status::Ok();
}

// Scores every node against the queries (`query_rows`, one per node of `queries`) batch by
// batch, offering each query its candidates. With `comm` of several ranks each rank scores every
// W-th batch, and rank 0's *best ends with every rank's (MergeOnLead).
Status OfferAllNodes(const format::Dataset& dataset, train::LinkTrainer& trainer,
                     const sampler::GraphSource& graph, int64_t batch_nodes, bool keep_known,
                     const std::vector<int64_t>& queries, const std::vector<float>& query_rows,
                     std::vector<TopK>* best, dist::Communicator* comm) {
  const auto dim = static_cast<size_t>(trainer.options().link.out_dim);
  const auto q = static_cast<int32_t>(queries.size());
  std::vector<std::vector<int64_t>> known(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    if (!keep_known) SKIFF_RETURN_IF_ERROR(graph.Neighbors(queries[i], &known[i]));
    known[i].push_back(queries[i]);
    std::sort(known[i].begin(), known[i].end());
  }
  std::vector<int64_t> all(static_cast<size_t>(BatchCount(dataset, batch_nodes)));
  for (size_t c = 0; c < all.size(); ++c) all[c] = static_cast<int64_t>(c);
  const std::vector<int64_t> mine = ShareOf(all, comm);
  std::vector<float> rows(query_rows), scores;
  std::vector<int32_t> src(queries.size()), cand;
  for (int32_t i = 0; i < q; ++i) src[i] = i;
  const bool shared = comm != nullptr && comm->size() > 1;
  OptionalProgress progress(Lead(comm), shared ? "rank (rank 0's share)" : "rank",
                            shared ? 0 : static_cast<uint64_t>(dataset.manifest().num_nodes),
                            "candidates");
  auto score_batch = [&](std::span<const int64_t> nodes, const float* out) -> Status {
    rows.resize(query_rows.size());
    rows.insert(rows.end(), out, out + nodes.size() * dim);
    cand.resize(nodes.size());
    for (size_t j = 0; j < nodes.size(); ++j) cand[j] = q + static_cast<int32_t>(j);
    SKIFF_RETURN_IF_ERROR(trainer.decoder().ScoreCross(
        rows.data(), static_cast<int64_t>(rows.size() / dim), src, cand, &scores));
    for (size_t i = 0; i < queries.size(); ++i) {
      for (size_t j = 0; j < nodes.size(); ++j) {
        if (std::binary_search(known[i].begin(), known[i].end(), nodes[j])) continue;
        (*best)[i].Offer({scores[i * nodes.size() + j], nodes[j]});
      }
    }
    progress.Add(nodes.size());
    return Status::Ok();
  };
  SKIFF_RETURN_IF_ERROR(trainer.EncodeBatches(mine, batch_nodes, score_batch));
  progress.Finish();
  return shared ? MergeOnLead(*comm, best) : Status::Ok();
}

// top_k_ids (.npy or .txt) and top_k_scores.npy of the given queries' rows.
Status WriteTopK(const format::Dataset& dataset, const std::vector<int64_t>& given,
                 const std::vector<int64_t>& queries, const std::vector<TopK>& best, int64_t k,
                 const std::string& dir) {
  const auto rows = static_cast<int64_t>(given.size());
  std::vector<int64_t> ids(static_cast<size_t>(rows * k), -1);
  std::vector<float> scores(ids.size(), -std::numeric_limits<float>::infinity());
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<Candidate> top = best[PositionIn(queries, given[r])].Sorted();
    for (size_t j = 0; j < top.size(); ++j) {
      ids[r * k + j] = top[j].node;
      scores[r * k + j] = top[j].score;
    }
  }
  std::vector<int64_t> found;
  for (const int64_t v : ids) {
    if (v >= 0) found.push_back(v);
  }
  SKIFF_ASSIGN_OR_RETURN(const std::vector<std::string> raw, train::RawIdsOf(dataset, found));
  std::vector<int64_t> raw_int(ids.size(), -1);
  bool integers = true;
  for (size_t i = 0, f = 0; i < ids.size(); ++i) {
    if (ids[i] < 0) continue;
    const std::string& s = raw[f++];
    auto [ptr, err] = std::from_chars(s.data(), s.data() + s.size(), raw_int[i]);
    integers = integers && err == std::errc() && ptr == s.data() + s.size() && raw_int[i] >= 0;
  }
  SKIFF_RETURN_IF_ERROR(io::WriteNpy(dir + "/top_k_scores.npy", scores.data(), {rows, k}));
  if (integers) return io::WriteNpy(dir + "/top_k_ids.npy", raw_int.data(), {rows, k});
  std::string text;
  for (size_t i = 0, f = 0; i < ids.size(); ++i) {
    if (ids[i] >= 0) text += raw[f++];
    text += (i + 1) % static_cast<size_t>(k) == 0 ? "\n" : "\t";
  }
  return io::WriteFileAtomic(dir + "/top_k_ids.txt", {text});
}

Status TopKOf(const format::Dataset& dataset, train::LinkTrainer& trainer,
              const sampler::GraphSource& graph, int64_t batch_nodes,
              const LinkPredictRequest& request, const std::string& out_dir,
              dist::Communicator* comm) {
  SKIFF_ASSIGN_OR_RETURN(const std::vector<int64_t> given,
                         DenseIdsIn(dataset, request.nodes_path, 1));
  const std::vector<int64_t> queries = SortedDistinct(given);
  // Every rank scores against every query: each encodes them all.
  std::vector<float> query_rows;
  SKIFF_RETURN_IF_ERROR(EncodeNodes(trainer, queries, batch_nodes, "encode queries", &query_rows,
                                    nullptr, Lead(comm)));
  std::vector<TopK> best(queries.size(), TopK(static_cast<size_t>(request.top_k)));
  SKIFF_RETURN_IF_ERROR(OfferAllNodes(dataset, trainer, graph, batch_nodes, request.keep_known,
                                      queries, query_rows, &best, comm));
  if (!Lead(comm)) return Status::Ok();
  return PublishInto(out_dir, [&](const std::string& dir) {
    return WriteTopK(dataset, given, queries, best, request.top_k, dir);
  });
}

}  // namespace

Status ExportLinkEmbeddings(const format::Dataset& dataset, train::LinkTrainer& trainer,
                            int64_t batch_nodes, const std::string& out_dir,
                            dist::Communicator* comm) {
  // Rank 0 orders the export's nodes and sends the order; every rank encodes its share of them.
  auto embed = [&](std::vector<int64_t> nodes, std::vector<float>* embeddings) -> Status {
    if (comm != nullptr && comm->size() > 1) {
      std::string order(reinterpret_cast<const char*>(nodes.data()),
                        nodes.size() * sizeof(int64_t));
      SKIFF_RETURN_IF_ERROR(comm->Broadcast(&order, 0, "the export's node order"));
      nodes.resize(order.size() / sizeof(int64_t));
      std::memcpy(nodes.data(), order.data(), order.size());
    }
    return EncodeNodes(trainer, nodes, batch_nodes, "encode", embeddings, comm, Lead(comm));
  };
  if (!Lead(comm)) {
    std::vector<float> unused;
    return embed({}, &unused);
  }
  return train::ExportEmbeddings(
      dataset,
      [&](const std::vector<int64_t>& nodes, std::vector<float>* embeddings) {
        return embed(nodes, embeddings);
      },
      out_dir);
}

Status PredictLinks(const format::Dataset& dataset, train::LinkTrainer& trainer,
                    const sampler::GraphSource& graph, int64_t batch_nodes,
                    const LinkPredictRequest& request, const std::string& out_dir,
                    dist::Communicator* comm) {
  if (!request.pairs_path.empty()) {
    return ScorePairsOf(dataset, trainer, batch_nodes, request.pairs_path, out_dir, comm);
  }
  if (request.top_k > 0) {
    return TopKOf(dataset, trainer, graph, batch_nodes, request, out_dir, comm);
  }
  return ExportLinkEmbeddings(dataset, trainer, batch_nodes, out_dir, comm);
}

}  // namespace skiff::cli
