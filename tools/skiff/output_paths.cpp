#include "tools/skiff/output_paths.h"

#include <unistd.h>

#include <filesystem>

#include "skiff/train/export.h"

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

Status CheckWritableDirectoryOf(const std::string& option, const std::string& path) {
  if (path.empty()) return Status::Ok();
  const fs::path dir = Resolved(path).parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Status::InvalidArgument(option + " " + path + ": directory " + dir.string() +
                                   " does not exist");
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    return Status::InvalidArgument(option + " " + path + ": directory " + dir.string() +
                                   " is not writable");
  }
  return Status::Ok();
}

Status CheckExportTarget(const std::string& option, const std::string& path) {
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return Status::Ok();
  return train::ExportReplaceable(path).WithContext(option);
}

}  // namespace skiff::cli
