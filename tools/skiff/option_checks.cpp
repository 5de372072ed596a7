#include "tools/skiff/option_checks.h"

#include <charconv>

namespace skiff::cli {

const CLI::Validator& NonNegative() {
  static const CLI::Validator validator(
      [](const std::string& text) {
        if (!text.empty() && text.front() == '-') return "must not be negative, got " + text;
        // CLI11 would clamp an integer too large for any count or seed to the largest value.
        uint64_t value = 0;
        const std::from_chars_result parsed =
            std::from_chars(text.data(), text.data() + text.size(), value);
        if (parsed.ec == std::errc::result_out_of_range) return "must be below 2^64, got " + text;
        return std::string();
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
