// LineReader: streams the lines of a text file, plain or gzip-compressed (detected from the data,
// not the name), through zlib's gzread with a large buffer. Used by every text parser of
// `skiff convert` so that each error can name the file, the line and the byte offset.
//
// A truncated .gz (the stream ends mid-member) is reported as Corruption naming the file and the
// uncompressed byte offset reached; a read error as IOError. Lines end at '\n'; a trailing '\r' is
// removed. A line longer than kMaxLineBytes is Corruption (it is almost certainly not text), so is
// a line with a NUL byte; bzip2/xz/zstd data is InvalidArgument naming the tool that decompresses
// it; a UTF-8 byte order mark at the start is skipped.
//
// Thread safety: a reader is used by one thread.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "skiff/status.h"

namespace skiff::convert {

class LineReader {
 public:
  static constexpr size_t kMaxLineBytes = 64 << 20;

  // Opens `path`. NotFound / IOError name the path.
  static Result<std::unique_ptr<LineReader>> Open(const std::string& path);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Sets *line to the next line (valid until the next call). Returns false at the end of the input
  // or on an error; status() tells which.
  bool Next(std::string_view* line);
  const Status& status() const { return status_; }

  const std::string& path() const { return path_; }
  // 1-based number of the line last returned by Next() (0 before the first).
  int64_t line_number() const { return line_number_; }
  // Uncompressed byte offset of the start of the line last returned.
  uint64_t line_offset() const { return line_offset_; }
  // Bytes of the file on disk consumed so far, and the file's size: for progress and ETA.
  uint64_t file_bytes_read() const;
  uint64_t file_bytes() const { return file_bytes_; }

  // "edges.tsv line 12" -- the prefix every parser error starts with.
  std::string Where() const;

 private:
  LineReader(std::string path, gzFile gz, uint64_t file_bytes);
  bool Fill();  // reads more data; false at end or error
  // Rejects binary data (a NUL byte) and, on the first line, data compressed by another tool than
  // gzip (bzip2, xz, zstd magic); strips a UTF-8 byte order mark. False (status_ set) to stop.
  bool CheckText(std::string_view* line);

  const std::string path_;
  gzFile gz_ = nullptr;
  const uint64_t file_bytes_;
  std::vector<char> buffer_;
  size_t begin_ = 0;  // first unconsumed byte in buffer_
  size_t end_ = 0;    // one past the last valid byte in buffer_
  bool eof_ = false;
  uint64_t buffer_offset_ = 0;  // uncompressed offset of buffer_[0]
  int64_t line_number_ = 0;
  uint64_t line_offset_ = 0;
  Status status_;
};

// Splits `line` into fields separated by runs of spaces or tabs, or by single commas (CSV: an empty
// field between two commas is kept as ""). Fills `fields` (cleared first) with views into `line`.
void SplitFields(std::string_view line, std::vector<std::string_view>* fields);

// Parses the whole of `text` as a base-10 int64. False if empty, not a number or out of range.
bool ParseInt64(std::string_view text, int64_t* value);
// Parses `text` as a node ID that is an integer in canonical form: "0", or a digit 1-9 and more
// digits (no sign, no leading zero), below 2^63. Raw node IDs are compared byte for byte
// (docs/convert.md, "Node IDs"), so only this text can stand for the integer itself: "07" and
// "+7" are IDs of their own, other than "7". False otherwise.
bool ParseCanonicalId(std::string_view text, int64_t* value);
// Parses the whole of `text` as a float (also "nan", "inf"). False if malformed.
bool ParseFloat(std::string_view text, float* value);

}  // namespace skiff::convert
