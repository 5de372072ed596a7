// EdgeListReader: reads a text edge list -- SNAP, TSV, CSV or space-separated, plain or .gz -- one
// edge per line as its two node-ID fields (integers or arbitrary strings; this reader does not
// interpret them).
//
//   - Lines starting with '#' or '%' (after leading blanks) and blank lines are skipped.
//   - Fields are separated by runs of spaces/tabs or by commas.
//   - Header: HeaderMode::kYes skips the first data line; kAuto skips it when one of its first two
//     fields is not an integer while both of the next data line's are (so an all-string edge list
//     needs an explicit --header); kNo never skips.
//   - A line with fewer than two fields is Corruption; with more than two, the extra columns
//     (weights, timestamps) are ignored, or Corruption if `extra_columns_are_errors`.
// Every error names the file and line and says what was expected.
//
// Thread safety: a reader is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "skiff/convert/line_reader.h"
#include "skiff/status.h"

namespace skiff::convert {

enum class HeaderMode { kAuto, kYes, kNo };

struct EdgeListOptions {
  HeaderMode header = HeaderMode::kAuto;
  bool extra_columns_are_errors = false;
};

class EdgeListReader {
 public:
  static Result<std::unique_ptr<EdgeListReader>> Open(const std::string& path,
                                                      const EdgeListOptions& options);

  // Sets *src and *dst to the next edge's ID fields (valid until the next call). Returns false at
  // the end of the input or on an error; status() tells which.
  bool Next(std::string_view* src, std::string_view* dst);
  const Status& status() const { return status_; }

  // Corruption "<file> line <n>: <what>" for the line last returned, for callers that reject a
  // field (e.g. a non-integer ID with --id-map=never).
  Status ErrorAtLine(const std::string& what) const;

  // "<file> line <n>" of the edge last returned (header detection reads ahead, so this is not
  // always lines().Where()).
  std::string Where() const {
    return lines_->path() + " line " + std::to_string(current_line_number_);
  }
  bool skipped_header() const { return skipped_header_; }
  const LineReader& lines() const { return *lines_; }

 private:
  EdgeListReader(std::unique_ptr<LineReader> lines, EdgeListOptions options)
      : lines_(std::move(lines)), options_(options) {}
  // Reads the next data line into fields_; false at end or error.
  bool NextDataLine();
  Status DetectHeader();

  std::unique_ptr<LineReader> lines_;
  const EdgeListOptions options_;
  std::vector<std::string_view> fields_;
  // A data line read ahead while detecting the header, replayed by the next Next().
  bool have_pending_ = false;
  std::string pending_line_;
  int64_t pending_line_number_ = 0;
  int64_t second_pending_line_number_ = 0;  // > 0: pending_line_ holds "src\ndst" of a second line
  std::string pending_src_, pending_dst_;
  int64_t current_line_number_ = 0;
  bool skipped_header_ = false;
  Status status_;
};

}  // namespace skiff::convert
