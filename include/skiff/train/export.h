// Exporting predictions: predictions.npy (int32, one class per node) and embeddings.npy
// (float32, N x EmbeddingDim, the final layer's input) for every node of a dataset, in raw-ID
// order. With an ID map (idmap/), rows are sorted by raw ID -- numerically when every raw ID is an
// integer, then raw_ids.npy (int64) is written, otherwise bytewise, then raw_ids.txt (one per line)
// -- and raw_ids lists the row order. Without an ID map rows are in dense ID order.
// Files are written atomically into `out_dir` (created if missing).
//
// Thread safety: one call at a time per trainer.
#pragma once

#include <string>

#include "skiff/format/dataset.h"
#include "skiff/status.h"
#include "skiff/train/trainer.h"

namespace skiff::train {

Status ExportPredictions(const format::Dataset& dataset, Trainer& trainer,
                         const std::string& out_dir);

}  // namespace skiff::train
