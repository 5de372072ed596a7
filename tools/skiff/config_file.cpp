#include "tools/skiff/config_file.h"

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <vector>

#include <toml++/toml.h>

namespace skiff::cli {
namespace {

// The text CLI11 parses for one TOML value (strings as they are, numbers and booleans spelled out),
// or nullopt for a type an option cannot take (a date, a table, a nested array).
std::optional<std::string> OptionText(const toml::node& node) {
  if (const auto* v = node.as_string()) return v->get();
  if (const auto* v = node.as_integer()) return std::to_string(v->get());
  if (const auto* v = node.as_boolean()) return v->get() ? "true" : "false";
  if (const auto* v = node.as_floating_point()) {
    char text[64];
    std::snprintf(text, sizeof(text), "%.17g", v->get());
    return std::string(text);
  }
  return std::nullopt;
}

// The command-line inputs for one key's value, or nullopt when some part has no text form.
std::optional<std::vector<std::string>> OptionInputs(const toml::node& node) {
  std::vector<std::string> inputs;
  if (const auto* array = node.as_array()) {
    for (const toml::node& element : *array) {
      const auto text = OptionText(element);
      if (!text) return std::nullopt;
      inputs.push_back(*text);
    }
    return inputs;
  }
  const auto text = OptionText(node);
  if (!text) return std::nullopt;
  inputs.push_back(*text);
  return inputs;
}

Status ApplyKey(CLI::App& app, const std::string& name, const toml::node& node,
                const std::string& source) {
  auto fail = [&](const std::string& what) {
    return Status::InvalidArgument("config " + source + ": " + what);
  };
  if (node.is_table()) {
    return fail("[" + name + "] is a section; options are top-level keys (no sections)");
  }
  if (name == "config") return fail("\"config\" cannot be set from a config file (no nesting)");
  CLI::Option* opt = nullptr;
  try {
    opt = app.get_option("--" + name);
  } catch (const std::exception&) {
    return fail("unknown key \"" + name + "\"");
  }
  if (opt->count() > 0) return Status::Ok();
  auto inputs = OptionInputs(node);
  if (!inputs) return fail("key \"" + name + "\": a value of a type no option takes");
  // An array for an option of one value is its comma-separated text: fanouts = [15, 10].
  if (node.is_array() && opt->get_items_expected_max() == 1 && inputs->size() > 1) {
    std::string joined;
    for (const std::string& input : *inputs) joined += (joined.empty() ? "" : ",") + input;
    *inputs = {joined};
  }
  // CLI11 expects at least one input per result (a flag with none reads past the end).
  if (inputs->empty())
    return fail("key \"" + name + "\": an empty list (give a value or leave it out)");
  try {
    opt->add_result(*inputs);
    opt->run_callback();
  } catch (const std::exception& e) {
    return fail("key \"" + name + "\": " + e.what());
  }
  return Status::Ok();
}

}  // namespace

Status ApplyConfigText(CLI::App& app, std::string_view text, const std::string& source) {
  toml::table table;
  try {
    table = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument("config " + source + ": line " +
                                   std::to_string(e.source().begin.line) + ", column " +
                                   std::to_string(e.source().begin.column) +
                                   ": TOML syntax error: " + std::string(e.description()));
  }
  for (const auto& [key, node] : table) {
    SKIFF_RETURN_IF_ERROR(ApplyKey(app, std::string(key.str()), node, source));
  }
  return Status::Ok();
}

Status ApplyConfigFile(CLI::App& app, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::InvalidArgument(
        "config " + path + ": " +
        (std::filesystem::exists(path, ec) ? "not a regular file" : "no such file"));
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::FromErrno(errno, "config " + path);
  std::string text;
  char buf[65536];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return Status::IOError("config " + path + ": read failed");
  return ApplyConfigText(app, text, path);
}

}  // namespace skiff::cli
