// Checks on option values shared by the subcommands (CLI11 validators): a value one refuses is a
// usage error (exit 2) whose message names the option, before any work is done.
//
// Thread safety: the validators are built once, on first use, and are read-only after that.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "skiff/status.h"

namespace skiff::cli {

// A check for counts and seeds: "-1" is refused ("--threads: must not be negative, got -1") rather
// than wrapped into a huge unsigned value or taken as a count, and an integer of 2^64 or more
// rather than clamped.
const CLI::Validator& NonNegative();

// A check for paths and sizes: "" is refused ("--resume: must not be empty") rather than taken
// as "not given".
const CLI::Validator& NonEmpty();

// A check for thread counts: an integer in [0, kMaxThreads] (0 means "the default"). More is
// refused up front rather than failing to start threads part-way through a run.
inline constexpr int kMaxThreads = 1024;
const CLI::Validator& ThreadCount();

// A check from a parse: a value `check` refuses is a CLI11 validation error (a usage error) with
// the status's message; `type` is what --help calls the value (e.g. "NAME").
inline CLI::Validator StatusCheck(std::function<Status(const std::string& text)> check,
                                  std::string type) {
  return CLI::Validator(
      [check = std::move(check)](std::string& text) {
        const Status st = check(text);
        return st.ok() ? std::string() : st.message();
      },
      std::move(type));
}

}  // namespace skiff::cli
