// NumPy .npy / .npz reading. The .npy layout (numpy.lib.format):
//   bytes 0-5   magic "\x93NUMPY"
//   byte  6-7   major, minor version (1.0, 2.0 or 3.0)
//   then        header length: uint16 little-endian (1.0) or uint32 (2.0, 3.0)
//   then        header: a Python dict literal {'descr': '<f4', 'fortran_order': False,
//               'shape': (3, 4), } padded with spaces and ended by '\n'
//   then        the data, num_elements * item_bytes bytes
// A .npz is a zip archive of .npy entries, stored or deflated; entries are streamed with
// zip_fopen/zip_fread so an archive larger than memory can be read.
#include "skiff/io/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>

#include "skiff/half.h"

namespace skiff::io {
namespace {

constexpr char kMagic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kMaxHeaderBytes = 1 << 20;  // numpy itself refuses headers over ~10 KB
constexpr size_t kConvertChunkElements = 1 << 14;

// --- Header parsing
// --------------------------------------------------------------------------------

// A tiny parser for the Python dict literal numpy writes. It accepts exactly the value kinds that
// appear in .npy headers: strings, True/False, and tuples of non-negative integers.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  Result<NpyHeader> Parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    SkipSpace();
    if (!Consume('{')) return Error("expected '{' at the start of the header dict");
    while (true) {
      SkipSpace();
      if (Consume('}')) break;
      std::string key;
      SKIFF_RETURN_IF_ERROR(ParseString(&key));
      SkipSpace();
      if (!Consume(':')) return Error("expected ':' after key '" + key + "'");
      SkipSpace();
      if (key == "descr") {
        if (Peek() == '[') {
          return Error(
              "structured dtypes (descr is a list) are not supported; expected a plain "
              "numeric dtype such as '<f4'");
        }
        SKIFF_RETURN_IF_ERROR(ParseString(&h.descr));
        have_descr = true;
      } else if (key == "fortran_order") {
        SKIFF_RETURN_IF_ERROR(ParseBool(&h.fortran_order));
        have_order = true;
      } else if (key == "shape") {
        SKIFF_RETURN_IF_ERROR(ParseShape(&h.shape));
        have_shape = true;
      } else {
        return Error("unexpected key '" + key + "' (expected descr, fortran_order, shape)");
      }
      SkipSpace();
      if (Consume(',')) continue;
      SkipSpace();
      if (Consume('}')) break;
      return Error("expected ',' or '}' after the value of '" + key + "'");
    }
    if (!have_descr || !have_order || !have_shape) {
      return Error("header dict lacks one of 'descr', 'fortran_order', 'shape'");
    }
    return h;
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  Status Error(const std::string& what) const {
    return Status::Corruption(source_ + ": malformed .npy header at character " +
                              std::to_string(pos_) + ": " + what +
                              " (header: " + std::string(text_.substr(0, 120)) + ")");
  }
  Status ParseString(std::string* out) {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a quoted string");
    ++pos_;
    const size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) return Error("unterminated string");
    *out = std::string(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return Status::Ok();
  }
  Status ParseBool(bool* out) {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      *out = true;
      return Status::Ok();
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      *out = false;
      return Status::Ok();
    }
    return Error("expected True or False");
  }
  Status ParseShape(std::vector<int64_t>* out) {
    if (!Consume('(')) return Error("expected '(' to start the shape tuple");
    while (true) {
      SkipSpace();
      if (Consume(')')) return Status::Ok();
      if (!std::isdigit(static_cast<unsigned char>(Peek()))) {
        return Error("expected a non-negative integer in the shape tuple");
      }
      int64_t v = 0;
      while (std::isdigit(static_cast<unsigned char>(Peek()))) {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) return Error("shape is too large");
        v = v * 10 + (text_[pos_++] - '0');
      }
      if (Peek() == 'L') ++pos_;  // Python 2 long suffix
      out->push_back(v);
      SkipSpace();
      if (Consume(',')) continue;
      SkipSpace();
      if (Consume(')')) return Status::Ok();
      return Error("expected ',' or ')' in the shape tuple");
    }
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
};

// The dtypes read: a kind letter and a byte size.
struct NumericDtype {
  char kind;
  int bytes;
  NpyType type;
};
constexpr NumericDtype kNumericDtypes[] = {
    {'b', 1, NpyType::kBool},    {'i', 1, NpyType::kInt8},    {'i', 2, NpyType::kInt16},
    {'i', 4, NpyType::kInt32},   {'i', 8, NpyType::kInt64},   {'u', 1, NpyType::kUInt8},
    {'u', 2, NpyType::kUInt16},  {'u', 4, NpyType::kUInt32},  {'u', 8, NpyType::kUInt64},
    {'f', 2, NpyType::kFloat16}, {'f', 4, NpyType::kFloat32}, {'f', 8, NpyType::kFloat64}};

// Why a kind letter (with a size not in kNumericDtypes) is refused.
const char* KindProblem(char kind) {
  switch (kind) {
    case 'b':
      return "bool must be 1 byte";
    case 'i':
      return "signed integers are 1, 2, 4 or 8 bytes";
    case 'u':
      return "unsigned integers are 1, 2, 4 or 8 bytes";
    case 'f':
      return "floats are 2, 4 or 8 bytes";
    case 'U':
      return "unicode strings";
    case 'S':
      return "byte strings";
    case 'O':
      return "Python objects";
    case 'c':
      return "complex numbers";
    default:
      return "unknown kind letter";
  }
}

// Fills type / item_bytes / big_endian from descr ("<f4", "|u1", ">i8", "=f8", "b1", ...).
Status InterpretDescr(NpyHeader* h, const std::string& source) {
  const std::string& d = h->descr;
  auto unsupported = [&](const std::string& why) {
    return Status::InvalidArgument(source + ": unsupported dtype '" + d + "' (" + why +
                                   "); expected bool, int8..int64, uint8..uint64 or "
                                   "float16/32/64");
  };
  if (d.size() < 2) return unsupported("too short");
  size_t pos = 0;
  char order = '=';
  if (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=') {
    order = d[0];
    pos = 1;
  }
  const char kind = d[pos];
  const std::string size_text = d.substr(pos + 1);
  if (size_text.empty() || size_text.size() > 2 ||
      !std::all_of(size_text.begin(), size_text.end(),
                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
    return unsupported("expected a kind letter followed by a byte size");
  }
  const int bytes = std::stoi(size_text);
  const auto* known =
      std::find_if(std::begin(kNumericDtypes), std::end(kNumericDtypes),
                   [&](const NumericDtype& t) { return t.kind == kind && t.bytes == bytes; });
  if (known == std::end(kNumericDtypes)) return unsupported(KindProblem(kind));
  h->type = known->type;
  h->item_bytes = static_cast<size_t>(bytes);
  h->big_endian =
      bytes > 1 && ((order == '>') || (order == '=' && std::endian::native == std::endian::big));
  return Status::Ok();
}

// Reads the magic, version and header through `read` (which reads exactly n bytes or fails).
template <typename ReadFn>
Result<NpyHeader> ReadHeader(const std::string& source, ReadFn&& read) {
  char prefix[8];
  Status st = read(prefix, 8);
  if (!st.ok()) {
    return Status::Corruption(source + ": not a .npy file (shorter than the 8-byte magic)");
  }
  if (std::memcmp(prefix, kMagic, 6) != 0) {
    return Status::Corruption(source + ": not a .npy file (bad magic; expected \\x93NUMPY)");
  }
  const int major = static_cast<unsigned char>(prefix[6]);
  size_t header_bytes = 0;
  size_t prefix_bytes = 0;
  if (major == 1) {
    unsigned char len[2];
    if (!read(len, 2).ok()) return Status::Corruption(source + ": truncated .npy header length");
    header_bytes = len[0] | (len[1] << 8);
    prefix_bytes = 10;
  } else if (major == 2 || major == 3) {
    unsigned char len[4];
    if (!read(len, 4).ok()) return Status::Corruption(source + ": truncated .npy header length");
    header_bytes = static_cast<size_t>(len[0]) | (static_cast<size_t>(len[1]) << 8) |
                   (static_cast<size_t>(len[2]) << 16) | (static_cast<size_t>(len[3]) << 24);
    prefix_bytes = 12;
  } else {
    return Status::Corruption(
        source + ": unsupported .npy format version " + std::to_string(major) + "." +
        std::to_string(static_cast<unsigned char>(prefix[7])) + " (expected 1.0, 2.0 or 3.0)");
  }
  if (header_bytes > kMaxHeaderBytes) {
    return Status::Corruption(source + ": .npy header length " + std::to_string(header_bytes) +
                              " is implausibly large");
  }
  std::string text(header_bytes, '\0');
  if (!read(text.data(), header_bytes).ok()) {
    return Status::Corruption(source + ": truncated .npy header (expected " +
                              std::to_string(header_bytes) + " header bytes after byte " +
                              std::to_string(prefix_bytes) + ")");
  }
  SKIFF_ASSIGN_OR_RETURN(NpyHeader h, HeaderParser(text, source).Parse());
  SKIFF_RETURN_IF_ERROR(InterpretDescr(&h, source));
  if (h.fortran_order && h.shape.size() > 1) {
    int64_t non_unit = 0;
    for (int64_t s : h.shape) non_unit += s > 1 ? 1 : 0;
    if (non_unit > 1) {
      return Status::InvalidArgument(
          source +
          ": array is stored in Fortran (column-major) order; expected C order (save it "
          "with numpy.ascontiguousarray first)");
    }
  }
  const int64_t n = h.num_elements();
  if (n < 0) return Status::Corruption(source + ": shape has too many elements");
  return h;
}

// --- Element conversion
// ----------------------------------------------------------------------------

template <typename T>
T LoadElement(const unsigned char* p, bool swap) {
  T v;
  if (!swap) {
    std::memcpy(&v, p, sizeof(T));
  } else {
    unsigned char b[sizeof(T)];
    for (size_t i = 0; i < sizeof(T); ++i) b[i] = p[sizeof(T) - 1 - i];
    std::memcpy(&v, b, sizeof(T));
  }
  return v;
}

// Converts `count` raw elements to float (when dst_float) or int64. Returns the index of the first
// element that cannot be represented as an integer, or -1.
int64_t ConvertElements(const NpyHeader& h, const unsigned char* src, int64_t count, float* f_out,
                        int64_t* i_out) {
  const bool swap = h.big_endian != (std::endian::native == std::endian::big);
  const size_t w = h.item_bytes;
  for (int64_t idx = 0; idx < count; ++idx) {
    const unsigned char* p = src + idx * w;
    // Integers travel as int64 (or uint64), floats as double.
    bool is_float = false;
    double dv = 0;
    int64_t iv = 0;
    uint64_t uv = 0;
    bool is_unsigned64 = false;
    switch (h.type) {
      case NpyType::kBool:
        iv = p[0] != 0;
        break;
      case NpyType::kInt8:
        iv = static_cast<int8_t>(p[0]);
        break;
      case NpyType::kUInt8:
        iv = p[0];
        break;
      case NpyType::kInt16:
        iv = LoadElement<int16_t>(p, swap);
        break;
      case NpyType::kUInt16:
        iv = LoadElement<uint16_t>(p, swap);
        break;
      case NpyType::kInt32:
        iv = LoadElement<int32_t>(p, swap);
        break;
      case NpyType::kUInt32:
        iv = LoadElement<uint32_t>(p, swap);
        break;
      case NpyType::kInt64:
        iv = LoadElement<int64_t>(p, swap);
        break;
      case NpyType::kUInt64:
        uv = LoadElement<uint64_t>(p, swap);
        is_unsigned64 = true;
        break;
      case NpyType::kFloat16:
        dv = HalfToFloat(LoadElement<uint16_t>(p, swap));
        is_float = true;
        break;
      case NpyType::kFloat32:
        dv = LoadElement<float>(p, swap);
        is_float = true;
        break;
      case NpyType::kFloat64:
        dv = LoadElement<double>(p, swap);
        is_float = true;
        break;
    }
    if (f_out != nullptr) {
      f_out[idx] = is_float        ? static_cast<float>(dv)
                   : is_unsigned64 ? static_cast<float>(uv)
                                   : static_cast<float>(iv);
    } else {
      if (is_float) {
        if (!std::isfinite(dv) || dv != std::floor(dv) || std::fabs(dv) > 9.2e18) return idx;
        i_out[idx] = static_cast<int64_t>(dv);
      } else if (is_unsigned64) {
        if (uv > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return idx;
        i_out[idx] = static_cast<int64_t>(uv);
      } else {
        i_out[idx] = iv;
      }
    }
  }
  return -1;
}

// --- Readers
// ---------------------------------------------------------------------------------------

// Buffers the data section: converters ask for a row at a time, and a read(2) or zip_fread per
// row would dominate on graphs with millions of short rows.
class BufferedNpyReader : public NpyReader {
 public:
  BufferedNpyReader(std::string source, NpyHeader header, uint64_t offset)
      : NpyReader(std::move(source), std::move(header)), offset_(offset) {}

 protected:
  // Reads up to `max` bytes at the current position; 0 at the end of the data.
  virtual Result<size_t> Fill(char* dst, size_t max) = 0;

  Status ReadRaw(void* dst, size_t bytes) override {
    auto* p = static_cast<char*>(dst);
    while (bytes > 0) {
      if (begin_ == end_) {
        if (buffer_.empty()) buffer_.resize(kBufferBytes);
        SKIFF_ASSIGN_OR_RETURN(const size_t n, Fill(buffer_.data(), buffer_.size()));
        if (n == 0) {
          return Status::Corruption(source_ + ": truncated data (ends at byte " +
                                    std::to_string(offset_) + ", expected " +
                                    std::to_string(bytes) + " more bytes)");
        }
        begin_ = 0;
        end_ = n;
      }
      const size_t take = std::min(bytes, end_ - begin_);
      std::memcpy(p, buffer_.data() + begin_, take);
      begin_ += take;
      p += take;
      bytes -= take;
      offset_ += take;
    }
    return Status::Ok();
  }

  // Reads past the last element: nothing may follow it, and reaching the end of a zip entry is
  // what makes libzip compare the entry's CRC-32 (a mismatch is an error of Fill).
  Status CheckEnd() override {
    char probe[64];
    SKIFF_ASSIGN_OR_RETURN(
        const size_t n, begin_ < end_ ? Result<size_t>(end_ - begin_) : Fill(probe, sizeof(probe)));
    if (n == 0) return Status::Ok();
    return Status::Corruption(source_ + ": trailing data after the " +
                              std::to_string(header_.num_elements()) +
                              " elements its shape holds (byte " + std::to_string(offset_) + ")");
  }

  uint64_t offset_;  // bytes of the file or entry consumed by the caller

 private:
  static constexpr size_t kBufferBytes = 1 << 20;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;
};

class FileNpyReader final : public BufferedNpyReader {
 public:
  FileNpyReader(std::string source, NpyHeader header, int fd, uint64_t offset)
      : BufferedNpyReader(std::move(source), std::move(header), offset), fd_(fd) {}
  ~FileNpyReader() override { ::close(fd_); }

 protected:
  Result<size_t> Fill(char* dst, size_t max) override {
    while (true) {
      const ssize_t n = ::read(fd_, dst, max);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) {
        return Status::FromErrno(errno, "read " + source_ + " at byte " + std::to_string(offset_));
      }
    }
  }

 private:
  const int fd_;
};

// Owns a zip archive and one open entry.
class ZipNpyReader final : public BufferedNpyReader {
 public:
  ZipNpyReader(std::string source, NpyHeader header, zip_t* archive, zip_file_t* file,
               uint64_t offset)
      : BufferedNpyReader(std::move(source), std::move(header), offset),
        archive_(archive),
        file_(file) {}
  ~ZipNpyReader() override {
    zip_fclose(file_);
    zip_discard(archive_);
  }

 protected:
  Result<size_t> Fill(char* dst, size_t max) override {
    const zip_int64_t n = zip_fread(file_, dst, max);
    if (n < 0) {
      return Status::Corruption(source_ + ": cannot read archive entry at byte " +
                                std::to_string(offset_) + ": " +
                                zip_error_strerror(zip_file_get_error(file_)));
    }
    return static_cast<size_t>(n);
  }

 private:
  zip_t* const archive_;
  zip_file_t* const file_;
};

struct ZipCloser {
  void operator()(zip_t* z) const {
    if (z != nullptr) zip_discard(z);
  }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

Result<ZipPtr> OpenZip(const std::string& path) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &err);
  if (z == nullptr) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    std::string why = zip_error_strerror(&ze);
    zip_error_fini(&ze);
    if (err == ZIP_ER_NOENT || err == ZIP_ER_OPEN) {
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) {
        return Status::FromErrno(errno, "open .npz archive " + path);
      }
    }
    return Status::Corruption(path + ": not a readable .npz (zip) archive: " + why);
  }
  return ZipPtr(z);
}

// The data after the header must be exactly what the shape says: fewer bytes is a truncated
// array, more is an array whose header does not describe it (numpy refuses both).
Status CheckDataSize(const std::string& source, const NpyHeader& h, uint64_t offset, uint64_t have,
                     const char* what) {
  const uint64_t need = static_cast<uint64_t>(h.num_elements()) * h.item_bytes;
  if (have == need) return Status::Ok();
  return Status::Corruption(source + (have < need ? ": truncated data" : ": trailing data") +
                            ": shape needs " + std::to_string(need) +
                            " bytes after the header (byte " + std::to_string(offset) + "), the " +
                            what + " has " + std::to_string(have));
}

std::string StripNpy(const std::string& name) {
  if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) {
    return name.substr(0, name.size() - 4);
  }
  return name;
}

}  // namespace

int64_t NpyHeader::num_elements() const {
  int64_t n = 1;
  for (int64_t s : shape) {
    if (s != 0 && n > std::numeric_limits<int64_t>::max() / s) return -1;
    n *= s;
  }
  return n;
}

bool NpyHeader::is_integer() const {
  return type != NpyType::kFloat16 && type != NpyType::kFloat32 && type != NpyType::kFloat64;
}

Result<std::unique_ptr<NpyReader>> NpyReader::OpenFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  uint64_t offset = 0;
  auto read = [&](void* dst, size_t bytes) -> Status {
    auto* p = static_cast<char*>(dst);
    while (bytes > 0) {
      const ssize_t n = ::read(fd, p, bytes);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return Status::Corruption("short read");
      p += n;
      bytes -= static_cast<size_t>(n);
      offset += static_cast<uint64_t>(n);
    }
    return Status::Ok();
  };
  Result<NpyHeader> header = ReadHeader(path, read);
  if (!header.ok()) {
    ::close(fd);
    return header.status();
  }
  // Check the size up front so truncation is reported before any data is consumed.
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const uint64_t have = static_cast<uint64_t>(st.st_size) - offset;
    if (Status size = CheckDataSize(path, *header, offset, have, "file"); !size.ok()) {
      ::close(fd);
      return size;
    }
  }
  return std::unique_ptr<NpyReader>(new FileNpyReader(path, std::move(*header), fd, offset));
}

Result<std::unique_ptr<NpyReader>> NpyReader::OpenNpzEntry(const std::string& npz_path,
                                                           const std::string& name) {
  SKIFF_ASSIGN_OR_RETURN(ZipPtr zip, OpenZip(npz_path));
  const std::string entry = StripNpy(name) + ".npy";
  const zip_int64_t index = zip_name_locate(zip.get(), entry.c_str(), 0);
  if (index < 0) {
    return Status::NotFound(npz_path + ": archive has no entry '" + entry + "'");
  }
  const std::string source = npz_path + ":" + entry;
  zip_stat_t zst;
  zip_stat_init(&zst);
  if (zip_stat_index(zip.get(), static_cast<zip_uint64_t>(index), 0, &zst) != 0) {
    return Status::Corruption(source + ": cannot stat archive entry: " + zip_strerror(zip.get()));
  }
  zip_file_t* file = zip_fopen_index(zip.get(), static_cast<zip_uint64_t>(index), 0);
  if (file == nullptr) {
    return Status::Corruption(source + ": cannot open archive entry: " + zip_strerror(zip.get()) +
                              " (expected a stored or deflated entry)");
  }
  uint64_t offset = 0;
  auto read = [&](void* dst, size_t bytes) -> Status {
    auto* p = static_cast<char*>(dst);
    while (bytes > 0) {
      const zip_int64_t n = zip_fread(file, p, bytes);
      if (n <= 0) return Status::Corruption("short read");
      p += n;
      bytes -= static_cast<size_t>(n);
      offset += static_cast<uint64_t>(n);
    }
    return Status::Ok();
  };
  Result<NpyHeader> header = ReadHeader(source, read);
  if (!header.ok()) {
    zip_fclose(file);
    return header.status();
  }
  if ((zst.valid & ZIP_STAT_SIZE) != 0) {
    const uint64_t have = zst.size - std::min<uint64_t>(zst.size, offset);
    if (Status size = CheckDataSize(source, *header, offset, have, "entry"); !size.ok()) {
      zip_fclose(file);
      return size;
    }
  }
  return std::unique_ptr<NpyReader>(
      new ZipNpyReader(source, std::move(*header), zip.release(), file, offset));
}

Status NpyReader::ReadFloat(int64_t count, float* dst) {
  SKIFF_CHECK(count >= 0);
  if (count > header_.num_elements() - elements_read_) {
    return Status::InvalidArgument(source_ + ": asked for " + std::to_string(count) +
                                   " elements at element " + std::to_string(elements_read_) +
                                   " but the array has " + std::to_string(header_.num_elements()));
  }
  std::vector<unsigned char> buf(std::min<int64_t>(count, kConvertChunkElements) *
                                 header_.item_bytes);
  while (count > 0) {
    const int64_t n = std::min<int64_t>(count, kConvertChunkElements);
    SKIFF_RETURN_IF_ERROR(ReadRaw(buf.data(), static_cast<size_t>(n) * header_.item_bytes));
    ConvertElements(header_, buf.data(), n, dst, nullptr);
    dst += n;
    count -= n;
    elements_read_ += n;
  }
  return elements_read_ == header_.num_elements() ? CheckEnd() : Status::Ok();
}

Status NpyReader::ReadInt64(int64_t count, int64_t* dst) {
  SKIFF_CHECK(count >= 0);
  if (count > header_.num_elements() - elements_read_) {
    return Status::InvalidArgument(source_ + ": asked for " + std::to_string(count) +
                                   " elements at element " + std::to_string(elements_read_) +
                                   " but the array has " + std::to_string(header_.num_elements()));
  }
  std::vector<unsigned char> buf(std::min<int64_t>(count, kConvertChunkElements) *
                                 header_.item_bytes);
  while (count > 0) {
    const int64_t n = std::min<int64_t>(count, kConvertChunkElements);
    SKIFF_RETURN_IF_ERROR(ReadRaw(buf.data(), static_cast<size_t>(n) * header_.item_bytes));
    const int64_t bad = ConvertElements(header_, buf.data(), n, nullptr, dst);
    if (bad >= 0) {
      return Status::InvalidArgument(source_ + ": element " + std::to_string(elements_read_ + bad) +
                                     " of dtype '" + header_.descr +
                                     "' is not an integer in int64 range (expected integer IDs "
                                     "or labels)");
    }
    dst += n;
    count -= n;
    elements_read_ += n;
  }
  return elements_read_ == header_.num_elements() ? CheckEnd() : Status::Ok();
}

Result<std::vector<std::string>> ListNpzEntries(const std::string& npz_path) {
  SKIFF_ASSIGN_OR_RETURN(ZipPtr zip, OpenZip(npz_path));
  const zip_int64_t n = zip_get_num_entries(zip.get(), 0);
  std::vector<std::string> names;
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(zip.get(), static_cast<zip_uint64_t>(i), 0);
    if (name == nullptr) {
      return Status::Corruption(npz_path + ": cannot read the name of archive entry " +
                                std::to_string(i) + ": " + zip_strerror(zip.get()));
    }
    names.push_back(StripNpy(name));
  }
  return names;
}

}  // namespace skiff::io
