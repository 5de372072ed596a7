// WriteShard: one rank's shard of a partitioned dataset (`skiff shard`; docs/FORMAT.md, "Shards"),
// the data a rank of an owned-partition job reads and nothing more, so that each machine of a job
// stores only its own range instead of a copy of the whole dataset.
//
// A shard is a dataset (format/dataset.h) whose manifest describes the whole graph (node and
// edge counts, partitions, splits) and carries a ShardInfo: graph.offsets, graph.neighbors and
// features.bin hold the windows of the whole files that cover the rank's nodes (from the 4 KiB
// block before the range's first byte to its last), labels, splits, relabel.old_ids and the ID map
// are copied whole (they are 4 to 16 bytes per node, and every rank plans every batch), and the
// edge buckets and any edge split are left out. Every byte copied is read through the whole
// dataset's checksums and written with new ones; the shard is published atomically (DatasetWriter).
//
// Memory: one 8 MiB copy buffer. Thread safety: none needed (a function of its arguments).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "skiff/format/dataset.h"
#include "skiff/status.h"

namespace skiff::format {

// Writes rank `rank`'s shard of `whole` into `out_dir` for the job whose rank r owns the nodes
// [rank_first[r], rank_first[r + 1]) (train::NodeRanges). InvalidArgument, and nothing written,
// when `whole` is a shard or unpartitioned, when rank_first is not a run of partition boundaries
// from 0 to N with every rank at least one partition, or when `rank` is not one of its ranks;
// `out_dir` as DatasetWriter::Create takes it (`overwrite`); read errors name the whole dataset's
// file. `show_progress`: a progress line of the bytes copied (skiff/progress.h).
Status WriteShard(const Dataset& whole, std::span<const int64_t> rank_first, int rank,
                  const std::string& out_dir, bool overwrite, bool show_progress = false);

}  // namespace skiff::format
