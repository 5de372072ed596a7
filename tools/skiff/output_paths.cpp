#include "tools/skiff/output_paths.h"

#include <filesystem>

namespace skiff::cli {
namespace {

namespace fs = std::filesystem;

fs::path Resolved(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? fs::absolute(path).lexically_normal() : p;
}

// True when `inner` is `outer` or lies below it.
bool Within(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

}  // namespace

Status CheckOutputSparesInput(const std::string& output, const std::vector<std::string>& inputs) {
  const fs::path out = Resolved(output);
  for (const std::string& input : inputs) {
    if (input.empty()) continue;
    if (Within(Resolved(input), out)) {
      return Status::InvalidArgument("output " + output + " would replace the input " + input +
                                     ": choose an output path outside the input");
    }
  }
  return Status::Ok();
}

Status CheckNotInside(const std::string& option, const std::string& path,
                      const std::string& dataset_dir) {
  if (path.empty()) return Status::Ok();
  if (Within(Resolved(path), Resolved(dataset_dir))) {
    return Status::InvalidArgument(option + " " + path + " is inside the dataset " + dataset_dir +
                                   ": Skiff never writes into a dataset; choose a path outside it");
  }
  return Status::Ok();
}

}  // namespace skiff::cli
