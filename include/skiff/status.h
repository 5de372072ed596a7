// Status and Result<T>: Skiff's one error vocabulary.
//
// A Status is either OK or carries a code and a message that says what failed, on which file /
// line / offset, and (where it helps) what to do. Expected failures -- bad input, I/O errors, a
// budget too small -- travel as Status/Result; programmer errors are assertions (SKIFF_CHECK).
// Exceptions are used only at the CLI boundary.
//
// Thread safety: values; distinct objects may be used from distinct threads freely.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace skiff {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,  // the caller passed something malformed (bad option, bad shape)
  kCorruption,       // input data is malformed or a checksum failed
  kNotFound,         // a file, key or dataset does not exist
  kIOError,          // the operating system reported an I/O failure
  kResourceExhausted,  // a memory budget or disk is too small
  kUnavailable,      // a facility (io_uring, CUDA device) is not available here
  kAborted,          // the operation was cancelled
  kInternal,         // an invariant failed in a way the caller may report
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
  static Status Corruption(std::string msg) { return {StatusCode::kCorruption, std::move(msg)}; }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status IOError(std::string msg) { return {StatusCode::kIOError, std::move(msg)}; }
  static Status ResourceExhausted(std::string msg) { return {StatusCode::kResourceExhausted, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status Aborted(std::string msg) { return {StatusCode::kAborted, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

  // An I/O error from errno `err` while doing `what` (e.g. "open /data/x/features.bin").
  static Status FromErrno(int err, std::string_view what) {
    std::string msg(what);
    msg += ": ";
    msg += std::strerror(err);
    const StatusCode code = (err == ENOENT)                   ? StatusCode::kNotFound
                            : (err == ENOSPC || err == ENOMEM) ? StatusCode::kResourceExhausted
                            : (err == ENOSYS || err == EPERM || err == EOPNOTSUPP)
                                ? StatusCode::kUnavailable
                                : StatusCode::kIOError;
    return {code, std::move(msg)};
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "Corruption: features.bin block 12: checksum mismatch"
  std::string ToString() const {
    if (ok()) return "OK";
    return std::string(CodeName(code_)) + ": " + message_;
  }

  // Returns a copy whose message is prefixed with `context` ("converting cora.npz: ...").
  Status WithContext(std::string_view context) const {
    if (ok()) return *this;
    return {code_, std::string(context) + ": " + message_};
  }

  static const char* CodeName(StatusCode code) {
    switch (code) {
      case StatusCode::kOk: return "OK";
      case StatusCode::kInvalidArgument: return "Invalid argument";
      case StatusCode::kCorruption: return "Corruption";
      case StatusCode::kNotFound: return "Not found";
      case StatusCode::kIOError: return "I/O error";
      case StatusCode::kResourceExhausted: return "Resource exhausted";
      case StatusCode::kUnavailable: return "Unavailable";
      case StatusCode::kAborted: return "Aborted";
      case StatusCode::kInternal: return "Internal error";
    }
    return "Unknown";
  }

 private:
  Status(StatusCode code, std::string msg) : code_(code), message_(std::move(msg)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Result<T>: a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}                  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {           // NOLINT: implicit by design
    if (status_.ok()) status_ = Status::Internal("Result constructed from an OK status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

[[noreturn]] inline void CheckFailed(const char* expr, const char* file, int line, const char* msg) {
  std::fprintf(stderr, "skiff: internal check failed: %s at %s:%d%s%s\n", expr, file, line,
               msg[0] ? ": " : "", msg);
  std::abort();
}

}  // namespace skiff

// Programmer-error assertions: always on (they guard memory safety and budgets), cheap.
#define SKIFF_CHECK(cond) \
  ((cond) ? (void)0 : ::skiff::CheckFailed(#cond, __FILE__, __LINE__, ""))
#define SKIFF_CHECK_MSG(cond, msg) \
  ((cond) ? (void)0 : ::skiff::CheckFailed(#cond, __FILE__, __LINE__, (msg)))

// Propagate a non-OK Status to the caller.
#define SKIFF_RETURN_IF_ERROR(expr)            \
  do {                                         \
    ::skiff::Status skiff_status_ = (expr);    \
    if (!skiff_status_.ok()) return skiff_status_; \
  } while (0)

#define SKIFF_CONCAT_INNER(a, b) a##b
#define SKIFF_CONCAT(a, b) SKIFF_CONCAT_INNER(a, b)
// `SKIFF_ASSIGN_OR_RETURN(auto x, MakeX());` -- declares x from a Result or returns its Status.
#define SKIFF_ASSIGN_OR_RETURN(lhs, expr) \
  SKIFF_ASSIGN_OR_RETURN_IMPL(SKIFF_CONCAT(skiff_result_, __LINE__), lhs, expr)
#define SKIFF_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
