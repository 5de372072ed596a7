// What `skiff predict` and `skiff train --export` write for a link-prediction model (a checkpoint
// of `skiff train --task link`): the encoder's output for every node, the scores of given pairs,
// or each given node's top-k candidate destinations. Every output goes into a directory published
// whole (io::StagedDirectory; replaceable as train::ExportReplaceable says).
//
// Pairs and nodes are named by raw ID (the dataset's ID map, else the node numbers before
// partitioning) in text files: one pair per line, two IDs separated by whitespace or a comma, or
// one ID per line; blank lines and lines starting with '#' are skipped. An ID the dataset does not
// have is refused naming the file and line.
//
// Thread safety: plain functions, called from the command's thread.
#pragma once

#include <cstdint>
#include <string>

#include "skiff/dist/communicator.h"
#include "skiff/format/dataset.h"
#include "skiff/status.h"
#include "skiff/train/link_trainer.h"

namespace skiff::cli {

struct LinkPredictRequest {
  std::string pairs_path;  // score these pairs: scores.npy (float32 [E], in the file's order)
  // With top_k > 0: the query nodes; writes top_k_ids (raw IDs, [Q, K]: .npy int64 when every raw
  // ID is an integer, else .txt, one tab-separated row per query) and top_k_scores.npy (float32
  // [Q, K]), best first (ties: the smaller node number); fewer than K candidates leave -1 / -inf
  // (an empty field in .txt).
  std::string nodes_path;
  int64_t top_k = 0;
  // Top-k candidates exclude the query itself and, unless keep_known, its neighbours in the
  // message-passing graph (the training edges): the links it does not have yet.
  bool keep_known = false;
};

// With `comm` of several ranks (each holding the same dataset and model, and passing the same
// batch_nodes), the functions below are collectives: the ranks share the canonical encoding
// batches (LinkTrainer::EncodeBatches), each taking every W-th from its rank, the rows and the
// top-k candidates reach rank 0, and rank 0 alone writes `out_dir`. The output is one process's
// byte for byte.

// embeddings.npy: the encoder's output (float32 [N, out_dim]) of every node in raw-ID order, and
// the raw IDs as train::ExportPredictions writes them. `batch_nodes` seeds per encoding batch.
Status ExportLinkEmbeddings(const format::Dataset& dataset, train::LinkTrainer& trainer,
                            int64_t batch_nodes, const std::string& out_dir,
                            dist::Communicator* comm = nullptr);

// The request's output into `out_dir`: scores of its pairs, or the top-k candidates of its nodes
// (every rank encodes the queries; each scores its share of the nodes against them).
// `graph` is the message-passing graph (known edges).
Status PredictLinks(const format::Dataset& dataset, train::LinkTrainer& trainer,
                    const sampler::GraphSource& graph, int64_t batch_nodes,
                    const LinkPredictRequest& request, const std::string& out_dir,
                    dist::Communicator* comm = nullptr);

}  // namespace skiff::cli
