#include "skiff/convert/metis.h"

namespace skiff::convert {
namespace {
bool IsComment(std::string_view line) {
  size_t pos = 0;
  while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
  return pos < line.size() && line[pos] == '%';
}
bool IsBlank(std::string_view line) {
  for (char c : line) {
    if (c != ' ' && c != '\t') return false;
  }
  return true;
}
// METIS separates fields by blanks only.
void SplitBlanks(std::string_view line, std::vector<std::string_view>* fields) {
  fields->clear();
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
    size_t end = pos;
    while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
    if (end > pos) fields->push_back(line.substr(pos, end - pos));
    pos = end;
  }
}
}  // namespace

Result<std::unique_ptr<MetisReader>> MetisReader::Open(const std::string& path) {
  SKIFF_ASSIGN_OR_RETURN(auto lines, LineReader::Open(path));
  std::unique_ptr<MetisReader> reader(new MetisReader(std::move(lines)));
  SKIFF_RETURN_IF_ERROR(reader->ParseHeader());
  return reader;
}

Status MetisReader::Error(const std::string& what) const {
  return Status::Corruption(lines_->Where() + ": " + what);
}

Status MetisReader::ParseHeader() {
  std::string_view line;
  for (;;) {
    if (!lines_->Next(&line)) {
      if (!lines_->status().ok()) return lines_->status();
      return Status::Corruption(lines_->path() +
                                ": file has no header; expected a METIS header line \"n m [fmt "
                                "[ncon]]\"");
    }
    if (!IsComment(line) && !IsBlank(line)) break;
  }
  SplitBlanks(line, &fields_);
  if (fields_.size() < 2 || fields_.size() > 4) {
    return Error("expected a METIS header \"n m [fmt [ncon]]\" (2 to 4 integers), found " +
                 std::to_string(fields_.size()) + " fields");
  }
  if (!ParseInt64(fields_[0], &header_.num_nodes) || header_.num_nodes < 0) {
    return Error("header field 1 (number of vertices) \"" + std::string(fields_[0]) +
                 "\" is not a non-negative integer");
  }
  if (!ParseInt64(fields_[1], &header_.num_edges) || header_.num_edges < 0) {
    return Error("header field 2 (number of edges) \"" + std::string(fields_[1]) +
                 "\" is not a non-negative integer");
  }
  if (fields_.size() >= 3) {
    const std::string_view fmt = fields_[2];
    if (fmt.empty() || fmt.size() > 3 || fmt.find_first_not_of("01") != std::string_view::npos) {
      return Error("header field 3 (fmt) \"" + std::string(fmt) +
                   "\" is not a METIS format code (up to three 0/1 digits, e.g. 011)");
    }
    const std::string padded = std::string(3 - fmt.size(), '0') + std::string(fmt);
    header_.has_vertex_sizes = padded[0] == '1';
    header_.has_vertex_weights = padded[1] == '1';
    header_.has_edge_weights = padded[2] == '1';
  }
  header_.num_constraints = header_.has_vertex_weights ? 1 : 0;
  if (fields_.size() == 4) {
    if (!ParseInt64(fields_[3], &header_.num_constraints) || header_.num_constraints < 1) {
      return Error("header field 4 (ncon) \"" + std::string(fields_[3]) +
                   "\" is not a positive integer");
    }
    if (!header_.has_vertex_weights) {
      return Error("header gives ncon but fmt says the vertices carry no weights");
    }
  }
  return Status::Ok();
}

bool MetisReader::Finish() {
  done_ = true;
  std::string_view line;
  while (lines_->Next(&line)) {
    if (IsComment(line) || IsBlank(line)) continue;
    status_ = Error("more vertex lines than the " + std::to_string(header_.num_nodes) +
                    " the header declares");
    return false;
  }
  if (!lines_->status().ok()) {
    status_ = lines_->status();
    return false;
  }
  if (entries_total_ != 2 * header_.num_edges) {
    status_ = Status::Corruption(
        lines_->path() + ": the header declares " + std::to_string(header_.num_edges) +
        " edges (so " + std::to_string(2 * header_.num_edges) +
        " adjacency entries, each edge listed at both ends) but the vertex lines hold " +
        std::to_string(entries_total_));
  }
  return false;
}

Status MetisReader::NextVertexLine(std::string_view* line) {
  for (;;) {
    if (!lines_->Next(line)) {
      if (!lines_->status().ok()) return lines_->status();
      return Status::Corruption(lines_->path() + ": file ends after " +
                                std::to_string(next_vertex_) + " vertex lines (line " +
                                std::to_string(lines_->line_number()) + "); the header declares " +
                                std::to_string(header_.num_nodes) + " vertices");
    }
    if (!IsComment(*line)) return Status::Ok();  // a blank line is a vertex with no neighbours
  }
}

Status MetisReader::ParseVertexLine(std::string_view line, std::vector<int64_t>* neighbors) {
  SplitBlanks(line, &fields_);
  neighbors->clear();
  int64_t value = 0;
  const size_t skip =
      (header_.has_vertex_sizes ? 1 : 0) + static_cast<size_t>(header_.num_constraints);
  if (fields_.size() < skip) {
    return Error("expected " + std::to_string(skip) +
                 " vertex size/weight fields before the neighbours (fmt in the header), found " +
                 std::to_string(fields_.size()));
  }
  for (size_t pos = 0; pos < skip; ++pos) {
    if (!ParseInt64(fields_[pos], &value)) {
      return Error("vertex size/weight \"" + std::string(fields_[pos]) + "\" is not an integer");
    }
  }
  const size_t stride = header_.has_edge_weights ? 2 : 1;
  if ((fields_.size() - skip) % stride != 0) {
    return Error(
        "expected neighbour/edge-weight pairs (fmt says edges are weighted), found an "
        "odd number of fields");
  }
  for (size_t pos = skip; pos < fields_.size(); pos += stride) {
    if (!ParseInt64(fields_[pos], &value)) {
      return Error("neighbour \"" + std::string(fields_[pos]) +
                   "\" is not an integer; expected a 1-based vertex number");
    }
    if (value < 1 || value > header_.num_nodes) {
      return Error("neighbour " + std::to_string(value) + " is out of range; expected 1.." +
                   std::to_string(header_.num_nodes));
    }
    neighbors->push_back(value - 1);
    if (stride == 2 && !ParseInt64(fields_[pos + 1], &value)) {
      return Error("edge weight \"" + std::string(fields_[pos + 1]) + "\" is not an integer");
    }
  }
  return Status::Ok();
}

bool MetisReader::NextVertex(int64_t* vertex, std::vector<int64_t>* neighbors) {
  if (done_ || !status_.ok()) return false;
  if (next_vertex_ == header_.num_nodes) return Finish();
  std::string_view line;
  status_ = NextVertexLine(&line);
  if (status_.ok()) status_ = ParseVertexLine(line, neighbors);
  if (!status_.ok()) return false;
  entries_total_ += static_cast<int64_t>(neighbors->size());
  *vertex = next_vertex_++;
  return true;
}

}  // namespace skiff::convert
