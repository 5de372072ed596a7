#include "skiff/convert/line_reader.h"

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace skiff::convert {
namespace {
constexpr size_t kReadChunkBytes = 4 << 20;
constexpr unsigned kGzBufferBytes = 1 << 20;
}  // namespace

LineReader::LineReader(std::string path, gzFile gz, uint64_t file_bytes)
    : path_(std::move(path)), gz_(gz), file_bytes_(file_bytes) {
  buffer_.resize(kReadChunkBytes * 2);
}

LineReader::~LineReader() {
  if (gz_ != nullptr) gzclose(gz_);
}

Result<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::FromErrno(errno, "open " + path);
  if (S_ISDIR(st.st_mode))
    return Status::InvalidArgument(path + " is a directory, expected a file");
  errno = 0;
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) {
    return Status::FromErrno(errno != 0 ? errno : ENOMEM, "open " + path);
  }
  gzbuffer(gz, kGzBufferBytes);
  return std::unique_ptr<LineReader>(new LineReader(path, gz, static_cast<uint64_t>(st.st_size)));
}

uint64_t LineReader::file_bytes_read() const {
  const z_off_t off = gzoffset(gz_);
  return off < 0 ? 0 : static_cast<uint64_t>(off);
}

std::string LineReader::Where() const { return path_ + " line " + std::to_string(line_number_); }

bool LineReader::Fill() {
  if (eof_ || !status_.ok()) return false;
  // Move the unconsumed tail to the front, growing the buffer if one line fills it.
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    buffer_offset_ += begin_;
    end_ -= begin_;
    begin_ = 0;
  }
  if (buffer_.size() - end_ < kReadChunkBytes) {
    if (buffer_.size() >= kMaxLineBytes) {
      status_ = Status::Corruption(path_ + " line " + std::to_string(line_number_ + 1) +
                                   " (byte offset " + std::to_string(buffer_offset_) +
                                   "): line is longer than " + std::to_string(kMaxLineBytes) +
                                   " bytes; expected a text file with one record per line");
      return false;
    }
    buffer_.resize(buffer_.size() * 2);
  }
  const int n = gzread(gz_, buffer_.data() + end_, static_cast<unsigned>(kReadChunkBytes));
  if (n < 0) {
    int errnum = 0;
    const char* msg = gzerror(gz_, &errnum);
    if (errnum == Z_ERRNO) {
      status_ = Status::FromErrno(errno, "read " + path_);
    } else {
      status_ = Status::Corruption(path_ + " (uncompressed byte offset " +
                                   std::to_string(buffer_offset_ + end_) +
                                   "): not a valid gzip stream: " + (msg ? msg : "?"));
    }
    return false;
  }
  if (n == 0) {
    eof_ = true;
    int errnum = 0;
    gzerror(gz_, &errnum);
    if (errnum == Z_BUF_ERROR) {
      status_ = Status::Corruption(path_ + " (uncompressed byte offset " +
                                   std::to_string(buffer_offset_ + end_) +
                                   "): gzip stream is truncated; expected the rest of the "
                                   "compressed data and its trailer");
    }
    return false;
  }
  end_ += static_cast<size_t>(n);
  return true;
}

bool LineReader::Next(std::string_view* line) {
  if (!status_.ok()) return false;
  for (;;) {
    const char* start = buffer_.data() + begin_;
    const void* nl = std::memchr(start, '\n', end_ - begin_);
    if (nl != nullptr) {
      const size_t len = static_cast<size_t>(static_cast<const char*>(nl) - start);
      line_offset_ = buffer_offset_ + begin_;
      begin_ += len + 1;
      ++line_number_;
      *line = std::string_view(start, len);
      if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
      return CheckText(line);
    }
    if (!Fill()) {
      if (!status_.ok()) return false;
      if (begin_ == end_) return false;  // clean end
      // Last line without a trailing newline.
      start = buffer_.data() + begin_;
      const size_t len = end_ - begin_;
      line_offset_ = buffer_offset_ + begin_;
      begin_ = end_;
      ++line_number_;
      *line = std::string_view(start, len);
      if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
      return CheckText(line);
    }
  }
}

bool LineReader::CheckText(std::string_view* line) {
  if (line_number_ == 1) {
    // Data compressed by something other than gzip passes through zlib as it is.
    struct Magic {
      std::string_view bytes, name, tool;
    };
    static constexpr Magic kMagics[] = {{"BZh", "bzip2", "bzcat"},
                                        {"\xFD"
                                         "7zXZ",
                                         "xz", "xzcat"},
                                        {"\x28\xB5\x2F\xFD", "zstd", "zstdcat"}};
    for (const Magic& m : kMagics) {
      if (line->substr(0, m.bytes.size()) == m.bytes &&
          (m.name != "bzip2" || (line->size() > 3 && (*line)[3] >= '1' && (*line)[3] <= '9'))) {
        status_ = Status::InvalidArgument(path_ + " is " + std::string(m.name) +
                                          "-compressed: only plain text and gzip are read; " +
                                          "decompress it first (" + std::string(m.tool) + " " +
                                          path_ + " > edges.txt) or recompress it with gzip");
        return false;
      }
    }
    // A UTF-8 byte order mark is not part of the first field.
    if (line->substr(0, 3) == "\xEF\xBB\xBF") line->remove_prefix(3);
  }
  // Text has no control characters but tab, carriage return and form feed; binary data almost
  // always has some within a line or two.
  for (size_t i = 0; i < line->size(); ++i) {
    const auto c = static_cast<unsigned char>((*line)[i]);
    if (c >= 0x20 || c == '\t' || c == '\r' || c == '\f') continue;
    char what[64];
    std::snprintf(what, sizeof(what), ": byte 0x%02x at column %zu", c, i + 1);
    status_ = Status::Corruption(Where() + what + (c == 0 ? " (NUL)" : " (a control character)") +
                                 ": this is binary data, not a text file");
    return false;
  }
  return true;
}

void SplitFields(std::string_view line, std::vector<std::string_view>* fields) {
  fields->clear();
  size_t pos = 0;
  const size_t n = line.size();
  // Skip leading blanks.
  while (pos < n && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
  while (pos < n) {
    size_t end = pos;
    while (end < n && line[end] != ' ' && line[end] != '\t' && line[end] != ',') ++end;
    fields->push_back(line.substr(pos, end - pos));
    pos = end;
    // Consume the separator: blanks around at most one comma.
    while (pos < n && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
    if (pos < n && line[pos] == ',') {
      ++pos;
      while (pos < n && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
      if (pos == n) fields->push_back(std::string_view());  // trailing empty CSV field
    }
  }
}

bool ParseInt64(std::string_view text, int64_t* value) {
  if (text.empty()) return false;
  const char* first = text.data();
  if (*first == '+') ++first;
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, *value);
  return ec == std::errc() && ptr == last;
}

bool ParseCanonicalId(std::string_view text, int64_t* value) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return ParseInt64(text, value);
}

bool ParseFloat(std::string_view text, float* value) {
  if (text.empty()) return false;
  const char* first = text.data();
  if (*first == '+') ++first;
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, *value);
  if (ec == std::errc::result_out_of_range) return false;
  return ec == std::errc() && ptr == last;
}

}  // namespace skiff::convert
