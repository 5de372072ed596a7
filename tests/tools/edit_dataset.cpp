// skiff_edit_dataset: writes one value into a file of a Skiff dataset, for the corruption suite
// (tests/corruption/). Without --reseal the bytes change under their checksums, as bit rot would;
// with --reseal the file's checksum sidecar, its entry in the manifest and the manifest's own
// checksum are recomputed as a writer computes them (docs/FORMAT.md), as a file written by another
// tool, by a bug or by hand would carry them.
//
//   skiff_edit_dataset DIR FILE TYPE INDEX VALUE [--reseal]
//     TYPE: u8, i32, i64, f32 or f16; element INDEX of FILE (counted in TYPE-sized elements; a
//     negative INDEX counts from the end of the meaningful data) becomes VALUE ("nan", "inf").
//   skiff_edit_dataset DIR manifest.json json KEY VALUE [--reseal]
//     the manifest's top-level KEY becomes the JSON VALUE.
// Exit status 0 when written, 2 on a usage error, 1 when the edit fails.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "skiff/format/checksummed_file.h"
#include "skiff/format/dataset.h"
#include "skiff/half.h"

namespace {

using nlohmann::json;
using skiff::Status;

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// The manifest's checksum field, as writers compute it (format::Manifest::ToJson).
void Seal(json* j) {
  j->erase("manifest_xxh3");
  const std::string body = j->dump();
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(skiff::format::Xxh3(body.data(), body.size())));
  (*j)["manifest_xxh3"] = hex;
}

// The bytes of VALUE as TYPE; false for an unknown type.
bool Encode(const std::string& type, const std::string& value, std::vector<char>* out) {
  auto put = [&](const auto& v) {
    out->resize(sizeof(v));
    std::memcpy(out->data(), &v, sizeof(v));
  };
  if (type == "u8") {
    put(static_cast<uint8_t>(std::stoi(value)));
  } else if (type == "i32") {
    put(static_cast<int32_t>(std::stoll(value)));
  } else if (type == "i64") {
    put(static_cast<int64_t>(std::stoll(value)));
  } else if (type == "f32") {
    put(std::stof(value));
  } else if (type == "f16") {
    put(skiff::FloatToHalf(std::stof(value)));
  } else {
    return false;
  }
  return true;
}

// Rewrites dir/name (data_bytes meaningful bytes, `data`) with a fresh sidecar and records it in
// the manifest, resealed.
Status Reseal(const std::string& dir, const std::string& name, const std::vector<char>& data) {
  SKIFF_ASSIGN_OR_RETURN(auto writer, skiff::format::ChecksummedFileWriter::Create(dir, name));
  SKIFF_RETURN_IF_ERROR(writer->Append(data.data(), data.size()));
  SKIFF_ASSIGN_OR_RETURN(const skiff::format::FileInfo info, writer->Finish());
  json j = ReadJson(dir + "/manifest.json");
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(info.sum_xxh3));
  j["files"][name] = {{"data_bytes", info.data_bytes},
                      {"checksum_block_bytes", info.block_bytes},
                      {"sum_xxh3", hex}};
  Seal(&j);
  WriteText(dir + "/manifest.json", j.dump(2));
  return Status::Ok();
}

Status EditFile(const std::string& dir, const std::string& name, const std::string& type,
                long long index, const std::string& value, bool reseal) {
  const json manifest = ReadJson(dir + "/manifest.json");
  if (!manifest["files"].contains(name)) return Status::NotFound("no file " + name);
  const auto data_bytes = manifest["files"][name]["data_bytes"].get<uint64_t>();
  std::vector<char> bytes;
  if (!Encode(type, value, &bytes)) return Status::InvalidArgument("unknown type " + type);
  const auto count = static_cast<long long>(data_bytes / bytes.size());
  if (index < 0) index += count;
  if (index < 0 || index >= count) {
    return Status::InvalidArgument("element " + std::to_string(index) + " is outside " + name);
  }
  const std::string path = dir + "/" + name;
  std::vector<char> data(data_bytes);
  {
    std::ifstream in(path, std::ios::binary);
    in.read(data.data(), static_cast<std::streamsize>(data.size()));
    if (!in) return Status::IOError("cannot read " + path);
  }
  std::memcpy(data.data() + index * static_cast<long long>(bytes.size()), bytes.data(),
              bytes.size());
  if (reseal) return Reseal(dir, name, data);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  const ssize_t n =
      ::pwrite(fd, bytes.data(), bytes.size(), index * static_cast<off_t>(bytes.size()));
  ::close(fd);
  if (n != static_cast<ssize_t>(bytes.size())) return Status::IOError("cannot write " + path);
  return Status::Ok();
}

Status EditManifest(const std::string& dir, const std::string& key, const std::string& value,
                    bool reseal) {
  json j = ReadJson(dir + "/manifest.json");
  j[key] = json::parse(value);
  if (reseal) Seal(&j);
  WriteText(dir + "/manifest.json", j.dump(2));
  return Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const bool reseal = !args.empty() && args.back() == "--reseal";
  if (reseal) args.pop_back();
  if (args.size() != 5) {
    std::fprintf(stderr,
                 "usage: skiff_edit_dataset DIR FILE TYPE INDEX VALUE [--reseal]\n"
                 "       skiff_edit_dataset DIR manifest.json json KEY VALUE [--reseal]\n");
    return 2;
  }
  try {
    const Status st = args[1] == "manifest.json" ? EditManifest(args[0], args[3], args[4], reseal)
                                                 : EditFile(args[0], args[1], args[2],
                                                            std::stoll(args[3]), args[4], reseal);
    if (!st.ok()) {
      std::fprintf(stderr, "skiff_edit_dataset: %s\n", st.ToString().c_str());
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "skiff_edit_dataset: %s\n", e.what());
    return 2;
  }
  return 0;
}
