// Exporting predictions: predictions.npy (int32, one class per node) and embeddings.npy
// (float32, N x EmbeddingDim, the final layer's input) for every node of a dataset, in raw-ID
// order. With an ID map (idmap/), rows are sorted by raw ID -- numerically when every raw ID is an
// integer, then raw_ids.npy (int64) is written, otherwise bytewise, then raw_ids.txt (one per line)
// -- and raw_ids lists the row order. Without an ID map rows are in dense ID order.
// The export is published whole or not at all (io::StagedDirectory): `out_dir` appears, or
// replaces an earlier export there, in one rename once every file is written; whatever fails, it is
// left as it was. An existing `out_dir` is replaced only when it holds nothing but export files
// (kExportFiles) -- re-running an export replaces the last one, as writing a checkpoint does -- and
// anything else is refused (ExportReplaceable) before any work. The predictions come from a
// Predictor asked once for every node, in the order of the rows.
//
// Thread safety: one call at a time per trainer.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/status.h"
#include "skiff/train/trainer.h"

namespace skiff::train {

// Computes the embedding of every node in `nodes`, rows in that order (link prediction: the
// encoder's output, LinkTrainer::Encode).
using Embedder =
    std::function<Status(const std::vector<int64_t>& nodes, std::vector<float>* embeddings)>;

// Computes the predicted class and embedding of every node in `nodes`, in that order (as
// Trainer::Predict, or layer by layer: train/layerwise_inference.h).
using Predictor =
    std::function<Status(const std::vector<int64_t>& nodes, std::vector<int32_t>* classes,
                         std::vector<float>* embeddings)>;

// The files an export may hold: node classification's, and link prediction's (embeddings,
// `skiff predict --pairs` scores, `--top-k` candidates).
inline constexpr const char* kExportFiles[] = {
    "predictions.npy", "embeddings.npy", "raw_ids.npy",      "raw_ids.txt",   "scores.npy",
    "top_k_ids.npy",   "top_k_ids.txt",  "top_k_scores.npy", "query_ids.npy", "query_ids.txt"};

// OK when an existing `out_dir` may be replaced by an export: an empty directory, or one holding
// only kExportFiles; InvalidArgument naming the first other entry (or saying it is not a
// directory). Callers check an output with it before long work, as ExportPredictions does first.
Status ExportReplaceable(const std::string& out_dir);

Status ExportPredictions(const format::Dataset& dataset, const Predictor& predict,
                         const std::string& out_dir);
// Link prediction's export: embeddings.npy (float32, N x D) and the raw IDs as above, no classes.
Status ExportEmbeddings(const format::Dataset& dataset, const Embedder& embed,
                        const std::string& out_dir);

// The raw ID of each node of `nodes` (dense IDs of `dataset`): the ID map's, through the
// relabelling of a partitioned dataset; without an ID map, the ID before partitioning as text.
// InvalidArgument names a node outside the graph; errors of the map and relabel.old_ids pass
// through.
Result<std::vector<std::string>> RawIdsOf(const format::Dataset& dataset,
                                          std::span<const int64_t> nodes);
// The dense ID of each raw ID of `raw` (the inverse of RawIdsOf): through the ID map, or as the
// node number before partitioning when the dataset has none, then through the relabelling of a
// partitioned dataset. InvalidArgument names `what` and position i ("line 3 of pairs.txt") of an
// ID the dataset does not have (`what(i)` makes the name).
Result<std::vector<int64_t>> DenseIdsOf(const format::Dataset& dataset,
                                        std::span<const std::string> raw,
                                        const std::function<std::string(size_t)>& what);
// With the trainer's batched prediction (Trainer::Predict).
Status ExportPredictions(const format::Dataset& dataset, Trainer& trainer,
                         const std::string& out_dir);

}  // namespace skiff::train
