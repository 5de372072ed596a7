#include "tools/skiff/option_checks.h"

#include <charconv>

namespace skiff::cli {

const CLI::Validator& NonNegative() {
  static const CLI::Validator validator(
      [](const std::string& text) {
        return !text.empty() && text.front() == '-' ? "must not be negative, got " + text
                                                    : std::string();
      },
      "NONNEGATIVE");
  return validator;
}

const CLI::Validator& NonEmpty() {
  static const CLI::Validator validator(
      [](const std::string& text) { return text.empty() ? "must not be empty" : std::string(); },
      "");
  return validator;
}

const CLI::Validator& ThreadCount() {
  static const CLI::Validator validator(
      [](const std::string& text) {
        long long value = -1;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (ec == std::errc() && ptr == end && value >= 0 && value <= kMaxThreads) {
          return std::string();
        }
        return "must be a thread count in [0, " + std::to_string(kMaxThreads) + "], got " + text;
      },
      "THREADS");
  return validator;
}

}  // namespace skiff::cli
