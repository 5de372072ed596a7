// The names of an enum's values, from one table: NameOf(table, value) and ParseName(table, what,
// text), so an option's spelling, its printed name and its error message cannot drift apart.
//
//   constexpr EnumName<ModelKind> kModelKindNames[] = {
//       {ModelKind::kSage, "sage"}, {ModelKind::kGcn, "gcn"}, {ModelKind::kGat, "gat"}};
//   NameOf(kModelKindNames, ModelKind::kGcn)      -> "gcn"
//   NamesList(kModelKindNames)                    -> "sage, gcn or gat"
//   ParseName(kModelKindNames, "model", "gin")    -> InvalidArgument
//                                                    "unknown model 'gin' (expected sage, gcn or
//                                                    gat)"
//
// Entries after the first `listed` ones are accepted aliases, not named in the message (and a
// value's name is its first entry's).
//
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "skiff/status.h"

namespace skiff {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

// The first name of `value` in `table`; "?" for a value the table lacks (a programmer error).
template <typename E, size_t N>
constexpr const char* NameOf(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return "?";
}

// The first `listed` names, for messages and help: "a, b or c".
template <typename E, size_t N>
std::string NamesList(const EnumName<E> (&table)[N], size_t listed = N) {
  std::string out;
  for (size_t i = 0; i < listed && i < N; ++i) {
    if (i > 0) out += i + 1 == std::min(listed, N) ? " or " : ", ";
    out += table[i].name;
  }
  return out;
}

// The value named `text`, or InvalidArgument naming `what` and the first `listed` names.
template <typename E, size_t N>
Result<E> ParseName(const EnumName<E> (&table)[N], std::string_view what, std::string_view text,
                    size_t listed = N) {
  for (const EnumName<E>& entry : table) {
    if (text == entry.name) return entry.value;
  }
  return Status::InvalidArgument("unknown " + std::string(what) + " '" + std::string(text) +
                                 "' (expected " + NamesList(table, listed) + ")");
}

}  // namespace skiff
