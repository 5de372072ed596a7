// Human-readable quantities: byte sizes ("1.50 GiB", parsed from "4GiB", "1.5G", "1000000"),
// counts ("1.2M") and durations ("1m 03s"), for options, logs and summaries.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace skiff {

// "1.50 GiB", "312.0 KiB"
std::string FormatBytes(uint64_t bytes);
// As FormatBytes, rounded up instead of to the nearest: for a minimum ("needs at least ..."), so
// that the figure printed, given back as a size (ParseBytes), is never below it.
std::string FormatBytesAtLeast(uint64_t bytes);
// "1.2M", "34.5k"
std::string FormatCount(double count);
// "1m 03s", "2.5s"
std::string FormatSeconds(double seconds);

// Parses "4GiB", "512MiB", "1.5G", "1000000" (bytes) into bytes. Returns false on malformed input.
bool ParseBytes(std::string_view text, uint64_t* bytes);

}  // namespace skiff
