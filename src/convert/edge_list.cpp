#include "skiff/convert/edge_list.h"

namespace skiff::convert {
namespace {
bool IsCommentOrBlank(std::string_view line) {
  size_t pos = 0;
  while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
  return pos == line.size() || line[pos] == '#' || line[pos] == '%';
}
bool IsInteger(std::string_view field) {
  int64_t v;
  return ParseInt64(field, &v);
}
}  // namespace

Result<std::unique_ptr<EdgeListReader>> EdgeListReader::Open(const std::string& path,
                                                             const EdgeListOptions& options) {
  SKIFF_ASSIGN_OR_RETURN(auto lines, LineReader::Open(path));
  std::unique_ptr<EdgeListReader> reader(new EdgeListReader(std::move(lines), options));
  SKIFF_RETURN_IF_ERROR(reader->DetectHeader());
  return reader;
}

Status EdgeListReader::ErrorAtLine(const std::string& what) const {
  return Status::Corruption(lines_->path() + " line " + std::to_string(current_line_number_) +
                            ": " + what);
}

bool EdgeListReader::NextDataLine() {
  std::string_view line;
  while (lines_->Next(&line)) {
    if (IsCommentOrBlank(line)) continue;
    current_line_number_ = lines_->line_number();
    SplitFields(line, &fields_);
    if (fields_.size() < 2) {
      status_ = ErrorAtLine(
          "expected two node IDs (source and destination) separated by "
          "blanks, a tab or a comma; found " +
          std::to_string(fields_.size()) + " field in \"" + std::string(line.substr(0, 80)) + "\"");
      return false;
    }
    if (fields_.size() > 2 && options_.extra_columns_are_errors) {
      status_ = ErrorAtLine("expected exactly two columns (source, destination), found " +
                            std::to_string(fields_.size()) +
                            " (extra columns are rejected by --extra-columns=error)");
      return false;
    }
    if (fields_[0].empty() || fields_[1].empty()) {
      status_ = ErrorAtLine("empty node ID field; expected two non-empty node IDs");
      return false;
    }
    return true;
  }
  status_ = lines_->status();
  return false;
}

Status EdgeListReader::DetectHeader() {
  if (options_.header == HeaderMode::kNo) return Status::Ok();
  if (!NextDataLine()) return status_;  // empty input (or an error)
  const bool first_numeric = IsInteger(fields_[0]) && IsInteger(fields_[1]);
  if (options_.header == HeaderMode::kYes) {
    skipped_header_ = true;
    return Status::Ok();
  }
  if (first_numeric) {
    // Keep the first line as data.
    have_pending_ = true;
    pending_src_.assign(fields_[0]);
    pending_dst_.assign(fields_[1]);
    pending_line_number_ = current_line_number_;
    return Status::Ok();
  }
  std::string first_src(fields_[0]), first_dst(fields_[1]);
  const int64_t first_line = current_line_number_;
  if (!NextDataLine()) {
    if (!status_.ok()) return status_;
    // A single non-numeric line: treat it as an edge between string IDs.
    have_pending_ = true;
    pending_src_ = std::move(first_src);
    pending_dst_ = std::move(first_dst);
    pending_line_number_ = first_line;
    return Status::Ok();
  }
  if (IsInteger(fields_[0]) && IsInteger(fields_[1])) {
    skipped_header_ = true;  // first line was a header; the current line is the first edge
    have_pending_ = true;
    pending_src_.assign(fields_[0]);
    pending_dst_.assign(fields_[1]);
    pending_line_number_ = current_line_number_;
    return Status::Ok();
  }
  // String IDs throughout: the first line is data. Replay it, then the second.
  have_pending_ = true;
  pending_src_ = std::move(first_src);
  pending_dst_ = std::move(first_dst);
  pending_line_number_ = first_line;
  pending_line_.assign(fields_[0]);
  pending_line_ += '\n';
  pending_line_.append(fields_[1]);
  second_pending_line_number_ = current_line_number_;
  return Status::Ok();
}

bool EdgeListReader::Next(std::string_view* src, std::string_view* dst) {
  if (have_pending_) {
    have_pending_ = false;
    current_line_number_ = pending_line_number_;
    *src = pending_src_;
    *dst = pending_dst_;
    return true;
  }
  if (second_pending_line_number_ > 0) {
    const size_t nl = pending_line_.find('\n');
    current_line_number_ = second_pending_line_number_;
    second_pending_line_number_ = 0;
    *src = std::string_view(pending_line_).substr(0, nl);
    *dst = std::string_view(pending_line_).substr(nl + 1);
    return true;
  }
  if (!status_.ok()) return false;
  if (!NextDataLine()) return false;
  *src = fields_[0];
  *dst = fields_[1];
  return true;
}

}  // namespace skiff::convert
