// The Skiff dataset (format version 3): a directory holding manifest.json and checksummed binary
// files. The byte-level layout is documented in docs/FORMAT.md; this header is its API.
//
// Files (all little-endian, each zero-padded to 4 KiB, each with a .sum checksum sidecar):
//   graph.offsets    int64[N+1]   CSR row offsets (out-neighbours of node v are
//                                 neighbours[offsets[v] .. offsets[v+1]) )
//   graph.neighbors  int32[E] when N < 2^31, else int64[E]; sorted ascending within a row
//   features.bin     feature rows, row-major, float32 or float16; the rows of partition p form one
//                    extent starting at Manifest::feature_extent_offsets[p] (4 KiB aligned)
//   labels.bin       int32[N], -1 = unlabelled
//   train.idx / valid.idx / test.idx   int64 node IDs, ascending
// Optional: idmap/ (RocksDB: raw ID <-> dense ID), partition files written by `skiff partition`,
// and an edge split for link prediction (Manifest::link_split; the kLink*File files below).
//
// Writers write into "<dir>.tmp-<pid>" and rename into place only in Commit(): a failed or
// interrupted writer leaves no directory that opens as a dataset.
//
// Thread safety: DatasetWriter is single-threaded. Dataset is immutable after Open(); its const
// methods may be called from many threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "skiff/format/checksummed_file.h"
#include "skiff/io/staged_dir.h"
#include "skiff/status.h"

namespace skiff::format {

// Version 2 added the manifest's own checksum (manifest_xxh3); version 3 the optional "link_split"
// object; version 4 ranking candidates; version 5 the optional "shard" object and the files'
// "window_offset". Every older version is still read.
inline constexpr int kFormatVersion = 5;
inline constexpr int kOldestReadableFormatVersion = 1;

// Classes a dataset may have (labels are below it). A model has an output per class, so a class
// number this large is a misread or corrupt label rather than a task: writers refuse such labels
// and readers such a manifest, instead of allocating an output layer that cannot fit.
inline constexpr int64_t kMaxClasses = int64_t{1} << 24;

enum class DType : uint8_t { kFloat32, kFloat16, kInt32, kInt64 };
const char* DTypeName(DType t);
size_t DTypeBytes(DType t);
Result<DType> ParseDType(const std::string& name);

// Partitioning recorded by `skiff partition` (absent on unpartitioned datasets).
struct PartitionInfo {
  uint32_t num_partitions = 0;
  std::string algorithm;            // "grem", "ldg", "fennel", "random", ...
  std::vector<int64_t> boundaries;  // size k+1; partition p owns [boundaries[p], boundaries[p+1])
  double edge_cut_fraction = 0;     // fraction of edges whose endpoints lie in different parts
  double imbalance = 0;             // max part size / ceil(N/k) - 1
  double seconds = 0;               // partitioning wall time
  uint64_t peak_memory_bytes = 0;
  std::string edge_buckets_file;        // file with edges grouped by (src part, dst part), or ""
  std::string edge_buckets_index_file;  // int64[k*k+1] offsets (in edges) into edge_buckets_file
};

// A held-out edge split for link prediction (docs/FORMAT.md, "Edge splits"), written by
// convert::WriteEdgeSplit. Valid and test pairs are removed from graph.offsets/graph.neighbors (the
// message-passing graph; both directions when undirected); train pairs stay in it. Undirected
// graphs store each held-out pair once as (min, max).
struct LinkSplitInfo {
  int64_t train = 0, valid = 0, test = 0;  // pair counts of the three positive files
  int64_t valid_neg = 0, test_neg = 0;     // pair counts of the non-edge files (0: absent)
  // Ranking candidates per valid and test pair (kLink*CandFile; 0: none). Version 4; directed
  // datasets only (an undirected pair is stored as (min, max), which loses the endpoint they
  // replace).
  int64_t candidates = 0;
  double train_fraction = 0, valid_fraction = 0, test_fraction = 0;  // as asked
  uint64_t seed = 0;
};

// A rank's shard of a partitioned dataset (`skiff shard`, format/shard.h; docs/FORMAT.md,
// "Shards"): what one rank of an owned-partition job reads. Every field of the manifest but the
// files describes the whole dataset; graph.offsets, graph.neighbors and features.bin are windows
// holding the rank's nodes [begin_node, end_node) (partitions [first_partition, end_partition)),
// every other file is whole, and the edge buckets and any edge split are left out.
struct ShardInfo {
  int rank = 0;
  std::vector<int64_t>
      rank_first;  // the job's ranges: rank r owns [rank_first[r], rank_first[r+1])
  uint32_t first_partition = 0, end_partition = 0;
  std::string dataset_xxh3;  // the whole dataset's manifest checksum (16 hex digits)

  int ranks() const { return static_cast<int>(rank_first.size()) - 1; }
  int64_t begin_node() const { return rank_first[static_cast<size_t>(rank)]; }
  int64_t end_node() const { return rank_first[static_cast<size_t>(rank) + 1]; }
};

struct Manifest {
  int version = kFormatVersion;  // as read; writers write kFormatVersion
  std::string name;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;    // stored (directed) edges = entries in graph.neighbors
  bool undirected = false;  // every edge is stored in both directions
  DType neighbor_dtype = DType::kInt32;
  int64_t feature_dim = 0;
  DType feature_dtype = DType::kFloat32;
  int64_t num_classes = 0;
  int64_t train_count = 0, valid_count = 0, test_count = 0;
  bool has_id_map = false;  // idmap/ holds raw<->dense IDs
  std::string source;       // human-readable provenance ("convert email-Enron.tsv")
  // Feature extents: byte offset in features.bin of the first row of each partition (size k, or 1
  // for an unpartitioned dataset).
  std::vector<uint64_t> feature_extent_offsets{0};
  std::optional<PartitionInfo> partitions;
  std::optional<LinkSplitInfo> link_split;  // absent: no edge split
  std::optional<ShardInfo> shard;           // absent: the whole dataset
  std::map<std::string, FileInfo> files;    // by file name

  uint64_t feature_row_bytes() const { return feature_dim * DTypeBytes(feature_dtype); }
  // Version 2 and later carry "manifest_xxh3": the XXH3-64 of the manifest's compact JSON
  // without that field (docs/FORMAT.md). Bytes of `name`/`source` that are not UTF-8 are written
  // as U+FFFD.
  std::string ToJson() const;
  // The XXH3-64 (16 hex digits) of ToJson() without manifest_xxh3: what a version 2 or later
  // manifest records of itself; the identity of a dataset's contents, whatever its version.
  std::string Checksum() const;
  // Corruption naming the field when one is missing, malformed or out of range, when the
  // checksum does not match (a version 2 manifest edited by hand), or for an unknown version.
  static Result<Manifest> FromJson(const std::string& text, const std::string& path_for_errors);
};

// Standard file names.
inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kOffsetsFile = "graph.offsets";
inline constexpr const char* kNeighborsFile = "graph.neighbors";
inline constexpr const char* kFeaturesFile = "features.bin";
inline constexpr const char* kLabelsFile = "labels.bin";
inline constexpr const char* kTrainFile = "train.idx";
inline constexpr const char* kValidFile = "valid.idx";
inline constexpr const char* kTestFile = "test.idx";
inline constexpr const char* kIdMapDir = "idmap";
// Edge-split files (present with Manifest::link_split): int64 pairs, interleaved (src, dst), dense
// node IDs. The non-edge files hold one sampled non-edge per positive (the GAE protocol).
inline constexpr const char* kLinkTrainFile = "link_train.edges";
inline constexpr const char* kLinkValidFile = "link_valid.edges";
inline constexpr const char* kLinkTestFile = "link_test.edges";
inline constexpr const char* kLinkValidNegFile =
    "link_valid_neg.edges";  // non-edges (GAE protocol)
inline constexpr const char* kLinkTestNegFile = "link_test_neg.edges";
// Per-positive ranking candidates (version 4, LinkSplitInfo::candidates = K > 0): int64[count x K],
// the K candidate destinations of each valid / test pair in pair order (OGB's target_node_neg).
inline constexpr const char* kLinkValidCandFile = "link_valid_cand.nodes";
inline constexpr const char* kLinkTestCandFile = "link_test_cand.nodes";
// Written by partitioning: int64[N], the node ID before the first partitioning of each node
// (raw IDs are idmap(old_ids[v]); see partition/partition_dataset.h).
inline constexpr const char* kRelabelOldIdsFile = "relabel.old_ids";

// Writes a new dataset into a temporary directory; Commit() makes it visible atomically. The
// publication, the lock and the cleanup after dead runs are io::StagedDirectory's; this class adds
// the dataset's rule for what may be replaced, its files and its manifest.
class DatasetWriter {
 public:
  // `final_dir` must not exist unless `overwrite` (then it is replaced at Commit()), and even then
  // it must be a dataset (a directory with a manifest) or an empty directory: InvalidArgument
  // otherwise, here or at Commit() when another run created it meanwhile. The writer
  // holds a PathLock on `final_dir` until it is destroyed: a second writer of the same path fails
  // here with Unavailable ("... is in use ...").
  static Result<std::unique_ptr<DatasetWriter>> Create(const std::string& final_dir,
                                                       bool overwrite = false);
  // OK when an existing `dir` may be replaced: only with `overwrite`, and only a dataset (a
  // directory with a manifest) or an empty directory; InvalidArgument saying why not otherwise.
  // Create() and Commit() apply it; a caller that claims its output late (convert --partitions)
  // asks first.
  static Status CheckReplaceable(const std::string& dir, bool overwrite);
  ~DatasetWriter();  // removes the temporary directory unless committed
  DatasetWriter(const DatasetWriter&) = delete;
  DatasetWriter& operator=(const DatasetWriter&) = delete;

  const std::string& temp_dir() const { return staged_->staging(); }
  const std::string& final_dir() const { return staged_->dir(); }
  Manifest& manifest() { return manifest_; }

  // Opens a checksummed file inside the temporary directory.
  Result<std::unique_ptr<ChecksummedFileWriter>> CreateFile(const std::string& name);
  // Finishes `file` and records it in the manifest.
  Status FinishFile(ChecksummedFileWriter& file);
  // Convenience: writes a whole in-memory array as one file.
  Status WriteFile(const std::string& name, const void* data, size_t bytes);

  // Validates the manifest's counts against the files, writes manifest.json, fsyncs and publishes
  // the directory atomically: a new output appears whole (InvalidArgument, and nothing replaced,
  // when another run created it meanwhile and overwrite is off); an existing one is swapped with
  // the new one in one rename. Create() removes `<dir>.tmp-<pid>`, `<dir>.unpartitioned-<pid>`
  // and `<dir>.old-<pid>` left by runs that no longer exist (moving the last back if nothing is at
  // `dir`).
  Status Commit();

 private:
  explicit DatasetWriter(std::unique_ptr<io::StagedDirectory> staged);
  std::unique_ptr<io::StagedDirectory> staged_;  // holds the lock on final_dir
  Manifest manifest_;
  bool committed_ = false;
};

// An opened dataset: the manifest plus verified readers for its files.
class Dataset {
 public:
  // Reads and validates manifest.json and opens every file (checking sizes and checksum sidecars).
  static Result<std::unique_ptr<Dataset>> Open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const Manifest& manifest() const { return manifest_; }
  bool is_shard() const { return manifest_.shard.has_value(); }
  // OK for a whole dataset; for a shard, InvalidArgument saying that `what` needs the whole
  // dataset and which rank's nodes the shard holds.
  Status RequireWhole(const std::string& what) const;
  // The nodes whose adjacency lists and feature rows this dataset holds: [0, N), or a shard's.
  int64_t begin_node() const { return is_shard() ? manifest_.shard->begin_node() : 0; }
  int64_t end_node() const {
    return is_shard() ? manifest_.shard->end_node() : manifest_.num_nodes;
  }
  // Reader for a file recorded in the manifest; NotFound if absent.
  Result<const ChecksummedFileReader*> File(const std::string& name) const;

  // Whole-array loads, verified (checksums) and checked for what their readers rely on
  // (format/content_checks.h), each a Corruption naming the file, the node and the value. For
  // in-memory paths and tests; out-of-core code reads extents (storage::DatasetPartitionSource
  // makes the same checks per block).
  // LoadOffsets, LoadNeighbors and LoadFeatures need the whole dataset (RequireWhole's error on a
  // shard); the range reads take a shard's own nodes.
  // Offsets start at 0, never decrease and end at num_edges.
  Result<std::vector<int64_t>> LoadOffsets() const;
  // Entries first .. first + count of the offsets (the rows of nodes [first, first + count), as
  // stored, not rebased), checked as LoadOffsets checks them.
  Result<std::vector<int64_t>> LoadOffsetsRange(int64_t first, int64_t count) const;
  // Widened to int64; every ID in [0, num_nodes).
  Result<std::vector<int64_t>> LoadNeighbors() const;
  // The rows of nodes [first, first + count) alone: *offsets (count + 1 entries, rebased to start
  // at 0) and *neighbors (widened to int64), checked as LoadOffsets and LoadNeighbors check them
  // (Corruption naming the file and the node). A rank of an owned-partition run reads its range.
  Status LoadGraphRange(int64_t first, int64_t count, std::vector<int64_t>* offsets,
                        std::vector<int64_t>* neighbors) const;
  // Converted to float32, N*D; every value finite.
  Result<std::vector<float>> LoadFeatures() const;
  // Every label in [-1, num_classes).
  Result<std::vector<int32_t>> LoadLabels() const;
  // The three node splits: each ascending node IDs in [0, N), no node in two of them.
  struct NodeSplits {
    std::vector<int64_t> train, valid, test;
  };
  Result<NodeSplits> LoadSplits() const;
  // One of them (kTrainFile, kValidFile, kTestFile), checked as LoadSplits checks it (the other two
  // are read to check that they are disjoint).
  Result<std::vector<int64_t>> LoadSplit(const std::string& file_name) const;
  // Each node's ID before partitioning (relabel.old_ids, checked to be a permutation of [0, N));
  // the identity on a dataset that was never partitioned.
  Result<std::vector<int64_t>> LoadOldIds() const;
  // The pairs of an edge-split file (kLink*File): 2*count int64, (src, dst) interleaved, verified
  // (checksums; endpoints in [0, N), else Corruption naming the file and the pair). Empty for a
  // non-edge file whose count is 0 and that is absent. NotFound when the dataset has no edge
  // split; InvalidArgument for a name that is not an edge-split file.
  // With max_pairs >= 0, only the first max_pairs pairs (only their blocks are read).
  Result<std::vector<int64_t>> LoadEdgePairs(const std::string& file_name,
                                             int64_t max_pairs = -1) const;
  // A candidate file (kLinkValidCandFile, kLinkTestCandFile): count x K node IDs, verified
  // (checksums; every ID in [0, N), else Corruption naming the file, the pair and the position).
  // Empty when the split has no candidates; InvalidArgument for another name. With
  // max_pairs >= 0, only the rows of the first max_pairs pairs.
  Result<std::vector<int64_t>> LoadCandidates(const std::string& file_name,
                                              int64_t max_pairs = -1) const;
  // Feature rows [first, first+count) as float32 (handles partition extents and fp16); every
  // value finite, else Corruption naming the node, the column and the value.
  Status ReadFeatureRows(int64_t first, int64_t count, float* dst) const;
  // Byte offset in features.bin of node v's row.
  uint64_t FeatureRowOffset(int64_t node) const;

  // Verifies every block of every file (reporting the first mismatch: file and block), then
  // VerifyConsistency. On a shard, the graph and feature checks cover its own nodes (and the
  // undirected check, which needs every row, is skipped).
  Status VerifyAll() const;
  // What checksums cannot see, a manifest edited out of step with its data or data written
  // inconsistent (docs/FORMAT.md lists each check): labels within num_classes, splits ascending,
  // disjoint and in range, CSR offsets from 0 to num_edges and never decreasing, neighbours in
  // range and ascending within each row, every edge stored both ways when the manifest says
  // undirected, feature values finite, partition boundaries that match the feature extents' rows
  // (padding is zeros), relabel.old_ids a permutation, and the edge buckets of a partitioned
  // dataset (index from 0 to num_edges, never decreasing, each bucket's edges in its pair of parts,
  // ordered, and together the graph's edges); with an edge split, its files against its counts,
  // endpoints in range, no pair in two of train/valid/test, valid/test pairs and non-edges absent
  // from the graph (neither direction when undirected), train pairs present, non-edges not among
  // the valid/test pairs nor repeated. Memory: one byte per node and ~1M nodes' adjacency at a
  // time, plus a hash set of the valid, test and non-edge pairs.
  Status VerifyConsistency() const;

 private:
  Result<std::vector<int64_t>> LoadSplitFile(const std::string& name) const;
  // The error for graph.neighbors entry `entry` = `value` outside [0, N), naming its node.
  Status NeighborIdError(int64_t entry, int64_t value) const;
  Status VerifySplits() const;
  Status VerifyFeatureValues() const;
  Status VerifyEdgeBuckets(uint64_t graph_edge_sum) const;
  Status VerifyLinkSplit() const;
  Status VerifyGraph(uint64_t* edge_sum) const;  // edge_sum: the sum of EdgeHash over the edges
  Status VerifyShard() const;  // the shard's fields against the manifest and its windows
  Status VerifyFeatureExtents() const;
  Status VerifyRelabelling() const;
  Dataset(std::string dir, Manifest manifest)
      : dir_(std::move(dir)), manifest_(std::move(manifest)) {}
  std::string dir_;
  Manifest manifest_;
  std::map<std::string, std::unique_ptr<ChecksummedFileReader>> readers_;
};

// Whether edges are in a dataset's graph, by binary search in its rows (ascending, as the format
// requires). Reads graph.offsets in blocks of 64Ki nodes and a row whole (up to 1Mi neighbours;
// longer rows are searched in place), keeping the last block and the last row, so lookups grouped
// by source read each row once. Holds a reference to `ds`, which must outlive it. Not thread-safe:
// one per thread.
class EdgeLookup {
 public:
  explicit EdgeLookup(const Dataset& ds) : ds_(ds) {}
  // True when (u, v) is a stored edge; u and v must lie in [0, N). Errors of the reads.
  Result<bool> Contains(int64_t u, int64_t v);

 private:
  Status LoadRow(int64_t u);
  const Dataset& ds_;
  int64_t block_first_ = -1;            // first node of offsets_block_
  std::vector<int64_t> offsets_block_;  // offsets of nodes block_first_ .. + block size (+1)
  int64_t row_node_ = -1;  // the node whose row is in row_ (or whose long row is searched)
  int64_t row_begin_ = 0, row_end_ = 0;
  bool row_loaded_ = false;  // row_ holds row_node_'s neighbours
  std::vector<int64_t> row_;
};

}  // namespace skiff::format
