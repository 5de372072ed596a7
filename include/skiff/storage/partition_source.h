// PartitionSource: tells the buffer pool what bytes make up each partition.
//
// A partition is a list of extents (file, offset, length). The pool reads each extent expanded to
// read_alignment() boundaries (so O_DIRECT applies and every read covers whole checksum blocks),
// hands the expanded bytes to Verify(), and exposes the exact extent bytes through a pin. Files
// must therefore be readable up to the next read_alignment() boundary past every extent (dataset
// files are padded to 4 KiB).
//
// The training code supplies a source built from a dataset (DatasetPartitionSource: a partition's
// feature rows and its CSR neighbour lists); tests supply their own.
//
// Thread safety: const methods may be called from many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "skiff/status.h"
#include "skiff/storage/file.h"

namespace skiff::storage {

struct Extent {
  uint32_t file = 0;    // index into the source's files
  uint64_t offset = 0;  // byte offset in that file
  uint64_t length = 0;  // bytes (may be 0: an empty extent)
};

class PartitionSource {
 public:
  virtual ~PartitionSource() = default;

  virtual uint32_t num_partitions() const = 0;
  virtual uint32_t num_files() const = 0;
  // The opened file `index` (< num_files()); lives as long as the source.
  virtual const ReadFile& file(uint32_t index) const = 0;
  // The extents of `partition` (< num_partitions()), in a fixed order the caller knows.
  virtual std::vector<Extent> Extents(uint32_t partition) const = 0;
  // Power of two that every read is expanded to; a multiple of every file's direct-I/O alignment
  // and checksum block.
  virtual uint32_t read_alignment() const { return 4096; }
  // Checks bytes read from file `index` at `offset` (both offset and bytes multiples of
  // read_alignment()). OK, or Corruption naming the file and block. The default checks nothing.
  virtual Status Verify(uint32_t index, uint64_t offset, const std::byte* data,
                        uint64_t bytes) const {
    return Status::Ok();
  }
};

}  // namespace skiff::storage
