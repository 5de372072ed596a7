#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>

#include <nlohmann/json.hpp>

#include "skiff/format/dataset.h"
#include "skiff/half.h"
#include "skiff/log.h"
#include "skiff/units.h"
#include "tests/unit/test_dataset_util.h"
#include "tests/unit/test_util.h"

using namespace skiff;
using namespace skiff::format;
using skiff::testing::FillTinyDataset;
using skiff::testing::WriteTinyDataset;

using skiff::testing::FlipByte;

TEST_CASE("format: dataset round-trips through writer and reader") {
  testing::TempDir tmp;
  const std::string dir = tmp / "ds";
  REQUIRE(WriteTinyDataset(dir, 5000, 7).ok());
  auto ds = Dataset::Open(dir);
  REQUIRE(ds.ok());
  const auto& m = (*ds)->manifest();
  CHECK(m.num_nodes == 5000);
  CHECK(m.num_edges == 2 * 4999);
  auto offsets = (*ds)->LoadOffsets();
  REQUIRE(offsets.ok());
  CHECK(offsets->back() == 2 * 4999);
  auto feats = (*ds)->LoadFeatures();
  REQUIRE(feats.ok());
  CHECK((*feats)[7 * 4321 + 3] == doctest::Approx(7 * 4321 + 3));
  std::vector<float> rows(3 * 7);
  REQUIRE((*ds)->ReadFeatureRows(1000, 3, rows.data()).ok());
  CHECK(rows[0] == 7000.0f);
  CHECK((*ds)->VerifyAll().ok());
  // Every file is padded to 4 KiB for O_DIRECT.
  for (const auto& [name, info] : m.files) {
    CHECK(std::filesystem::file_size(dir + "/" + name) % kFileAlignment == 0);
  }
}

TEST_CASE("format: float16 features are converted on read") {
  testing::TempDir tmp;
  REQUIRE(WriteTinyDataset(tmp / "ds", 100, 3, DType::kFloat16).ok());
  auto ds = Dataset::Open(tmp / "ds");
  REQUIRE(ds.ok());
  auto feats = (*ds)->LoadFeatures();
  REQUIRE(feats.ok());
  CHECK((*feats)[250] == 250.0f);
}

TEST_CASE("format: a flipped byte is reported with file and block") {
  testing::TempDir tmp;
  const std::string dir = tmp / "ds";
  REQUIRE(WriteTinyDataset(dir, 5000, 7).ok());
  FlipByte(dir + "/features.bin", 3 * 4096 + 17);
  auto ds = Dataset::Open(dir);
  REQUIRE(ds.ok());  // sidecars are fine; the data block is not
  Status st = (*ds)->VerifyAll();
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == StatusCode::kCorruption);
  CHECK(st.message().find("features.bin") != std::string::npos);
  CHECK(st.message().find("block 3") != std::string::npos);
  auto feats = (*ds)->LoadFeatures();
  CHECK_FALSE(feats.ok());
  // Reads that do not touch the bad block still succeed.
  std::vector<float> row(7);
  CHECK((*ds)->ReadFeatureRows(0, 1, row.data()).ok());
}

TEST_CASE("format: a corrupted sidecar or manifest is rejected on open") {
  testing::TempDir tmp;
  const std::string dir = tmp / "ds";
  REQUIRE(WriteTinyDataset(dir, 100, 2).ok());
  SUBCASE("sidecar") {
    FlipByte(dir + "/labels.bin.sum", 35);
    auto ds = Dataset::Open(dir);
    REQUIRE_FALSE(ds.ok());
    CHECK(ds.status().message().find("labels.bin.sum") != std::string::npos);
  }
  SUBCASE("truncated data file") {
    std::filesystem::resize_file(dir + "/graph.offsets", 0);
    auto ds = Dataset::Open(dir);
    REQUIRE_FALSE(ds.ok());
    CHECK(ds.status().message().find("graph.offsets") != std::string::npos);
  }
  SUBCASE("a file where the dataset directory should be") {
    std::ofstream(tmp / "file") << "x";
    const Status st = Dataset::Open(tmp / "file").status();
    CHECK(st.message().find("is a file, not a dataset directory") != std::string::npos);
  }
  SUBCASE("manifest field") {
    std::ofstream(dir + "/manifest.json") << "{\"format\":\"skiff-dataset\",\"version\":1}";
    auto ds = Dataset::Open(dir);
    REQUIRE_FALSE(ds.ok());
    CHECK(ds.status().message().find("num_nodes") != std::string::npos);
  }
}

TEST_CASE("format: an uncommitted writer leaves nothing behind") {
  testing::TempDir tmp;
  const std::string dir = tmp / "ds";
  {
    auto w = DatasetWriter::Create(dir);
    REQUIRE(w.ok());
    std::vector<int64_t> offs{0};
    REQUIRE((*w)->WriteFile(kOffsetsFile, offs.data(), 8).ok());
    CHECK(std::filesystem::exists((*w)->temp_dir()));
  }  // destroyed without Commit()
  CHECK_FALSE(std::filesystem::exists(dir));
  CHECK(std::filesystem::is_empty(tmp.path()));
  CHECK_FALSE(Dataset::Open(dir).ok());
}

TEST_CASE("format: commit refuses inconsistent sizes and existing output") {
  testing::TempDir tmp;
  const std::string dir = tmp / "ds";
  auto w = DatasetWriter::Create(dir);
  REQUIRE(w.ok());
  (*w)->manifest().num_nodes = 10;
  std::vector<int64_t> offs{0};
  REQUIRE((*w)->WriteFile(kOffsetsFile, offs.data(), 8).ok());
  CHECK_FALSE((*w)->Commit().ok());
  REQUIRE(WriteTinyDataset(tmp / "other", 10, 1).ok());
  auto again = DatasetWriter::Create(tmp / "other");
  CHECK_FALSE(again.ok());
}

TEST_CASE("format: a second writer of the same output is told at once that it is in use") {
  testing::TempDir tmp;
  const std::string dir = tmp / "ds";
  auto first = DatasetWriter::Create(dir);
  REQUIRE(first.ok());
  // Another process (its own open file, so its own lock attempt) and this one are both refused.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const auto second = DatasetWriter::Create(dir);
    ::_exit(!second.ok() && second.status().code() == StatusCode::kUnavailable &&
                    second.status().message().find("is in use") != std::string::npos
                ? 0
                : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  auto here = DatasetWriter::Create(dir, /*overwrite=*/true);
  REQUIRE_FALSE(here.ok());
  CHECK(here.status().message().find(std::to_string(::getpid())) != std::string::npos);
  // Once the first writer is done, the path is free again, and no lock file is left.
  REQUIRE(FillTinyDataset(first->get(), 12, 2).ok());
  REQUIRE((*first)->Commit().ok());
  first->reset();
  CHECK(DatasetWriter::Create(dir, /*overwrite=*/true).ok());
  CHECK(std::distance(std::filesystem::directory_iterator(tmp.path()),
                      std::filesystem::directory_iterator()) == 1);
}

TEST_CASE("format: a run that loses the race to create an output fails cleanly") {
  testing::TempDir tmp;
  const std::string dir = tmp / "ds";
  auto late = DatasetWriter::Create(dir);
  REQUIRE(late.ok());
  REQUIRE(FillTinyDataset(late->get(), 12, 2).ok());
  // Something that does not take the lock creates the same output meanwhile.
  std::filesystem::create_directory(dir);
  std::ofstream(dir + "/theirs.txt") << "not ours";
  const Status lost = (*late)->Commit();
  CHECK(lost.code() == StatusCode::kInvalidArgument);
  CHECK(lost.message().find("created by another run") != std::string::npos);
  late->reset();                                        // the loser's temporary directory goes
  CHECK(std::filesystem::exists(dir + "/theirs.txt"));  // theirs, untouched
  CHECK(std::distance(std::filesystem::directory_iterator(tmp.path()),
                      std::filesystem::directory_iterator()) == 1);
}

TEST_CASE("format: overwrite swaps the new dataset in and leaves no sibling behind") {
  testing::TempDir tmp;
  const std::string dir = tmp / "ds";
  REQUIRE(WriteTinyDataset(dir, 10, 1).ok());
  REQUIRE(WriteTinyDataset(dir, 12, 3, DType::kFloat32, /*overwrite=*/true).ok());
  auto ds = Dataset::Open(dir);
  REQUIRE(ds.ok());
  CHECK((*ds)->manifest().num_nodes == 12);
  CHECK((*ds)->manifest().feature_dim == 3);
  CHECK(std::distance(std::filesystem::directory_iterator(tmp.path()),
                      std::filesystem::directory_iterator()) == 1);
}

TEST_CASE("format: overwrite replaces only a dataset or an empty directory") {
  testing::TempDir tmp;
  // A directory holding something else, and a file, are left as they are.
  const std::string notes = tmp / "work";
  std::filesystem::create_directories(notes + "/ds");
  std::ofstream(notes + "/notes.txt") << "mine";
  const Status refused = WriteTinyDataset(notes, 10, 1, DType::kFloat32, /*overwrite=*/true);
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK(refused.message().find("is not a Skiff dataset") != std::string::npos);
  CHECK(std::filesystem::exists(notes + "/notes.txt"));
  CHECK(std::filesystem::exists(notes + "/ds"));
  const std::string file = tmp / "file.json";
  std::ofstream(file) << "{}";
  CHECK(WriteTinyDataset(file, 10, 1, DType::kFloat32, /*overwrite=*/true)
            .message()
            .find("is not a directory") != std::string::npos);
  CHECK(std::filesystem::is_regular_file(file));
  // An empty directory is replaced.
  const std::string empty = tmp / "empty";
  std::filesystem::create_directory(empty);
  REQUIRE(WriteTinyDataset(empty, 10, 1, DType::kFloat32, /*overwrite=*/true).ok());
  CHECK(Dataset::Open(empty).ok());
  // A directory another run creates and fills with something else while this one writes is not.
  const std::string raced = tmp / "raced";
  auto late = DatasetWriter::Create(raced, /*overwrite=*/true);
  REQUIRE(late.ok());
  REQUIRE(FillTinyDataset(late->get(), 12, 2).ok());
  std::filesystem::create_directory(raced);
  std::ofstream(raced + "/theirs.txt") << "not ours";
  const Status lost = (*late)->Commit();
  CHECK(lost.message().find("was created by another run while this one was writing") !=
        std::string::npos);
  CHECK(lost.message().find("is not a Skiff dataset") != std::string::npos);
  CHECK(std::filesystem::exists(raced + "/theirs.txt"));
}

TEST_CASE("format: a writer removes temporary directories left by runs that no longer exist") {
  testing::TempDir tmp;
  const std::string dir = tmp / "ds";
  const pid_t dead = testing::ExitedPid();  // a PID that no longer exists
  REQUIRE(dead > 0);
  REQUIRE(WriteTinyDataset(dir, 10, 1).ok());
  const std::string stale_tmp = dir + ".tmp-" + std::to_string(dead);
  const std::string stale_old = dir + ".old-" + std::to_string(dead);  // a replace that finished
  const std::string alive = dir + ".tmp-1";  // PID 1 runs: not ours to remove
  const std::string unrelated = tmp / "ds.tmp-notapid";
  for (const std::string& d : {stale_tmp, stale_old, alive, unrelated}) {
    std::filesystem::create_directories(d + "/sub");
  }
  REQUIRE(WriteTinyDataset(dir, 10, 1, DType::kFloat32, /*overwrite=*/true).ok());
  CHECK_FALSE(std::filesystem::exists(stale_tmp));
  CHECK_FALSE(std::filesystem::exists(stale_old));
  CHECK(std::filesystem::exists(alive));
  CHECK(std::filesystem::exists(unrelated));
}

TEST_CASE("format: a replace interrupted between its two renames is rolled back on open") {
  testing::TempDir tmp;
  const std::string dir = tmp / "ds";
  const pid_t dead = testing::ExitedPid();  // a PID that no longer exists
  REQUIRE(dead > 0);
  REQUIRE(WriteTinyDataset(dir, 10, 1).ok());
  // The state a run leaves when it dies after moving the dataset aside, before moving the new one
  // in: nothing at the path, the previous dataset at .old-PID, the new one at .tmp-PID.
  std::filesystem::rename(dir, dir + ".old-" + std::to_string(dead));
  REQUIRE(WriteTinyDataset(tmp / "new", 12, 1).ok());
  std::filesystem::rename(tmp / "new", dir + ".tmp-" + std::to_string(dead));
  auto ds = Dataset::Open(dir);
  REQUIRE_MESSAGE(ds.ok(), ds.status().ToString());
  CHECK((*ds)->manifest().num_nodes == 10);
  CHECK((*ds)->VerifyAll().ok());
  CHECK_FALSE(std::filesystem::exists(dir + ".tmp-" + std::to_string(dead)));
  CHECK(std::distance(std::filesystem::directory_iterator(tmp.path()),
                      std::filesystem::directory_iterator()) == 1);
}

namespace {

nlohmann::json ReadManifestJson(const std::string& dir) {
  std::ifstream in(dir + "/" + kManifestFile);
  return nlohmann::json::parse(in);
}

void WriteManifestJson(const std::string& dir, const nlohmann::json& j) {
  std::ofstream(dir + "/" + kManifestFile, std::ios::trunc) << j.dump();
}

// The manifest's checksum as docs/FORMAT.md defines it: XXH3-64 of the compact JSON without the
// field, as 16 lower-case hex digits.
std::string SealOf(nlohmann::json j) {
  j.erase("manifest_xxh3");
  const std::string body = j.dump();
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(Xxh3(body.data(), body.size())));
  return hex;
}

// Rewrites fields of dir/manifest.json and its checksum, as a writer out of step with its data
// would (the data files stay as they are).
void EditManifest(const std::string& dir, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = ReadManifestJson(dir);
  edit(j);
  j["manifest_xxh3"] = SealOf(j);
  WriteManifestJson(dir, j);
}

}  // namespace

TEST_CASE("format: the manifest's own checksum") {
  testing::TempDir tmp;
  const std::string dir = tmp / "ds";
  REQUIRE(WriteTinyDataset(dir, 10, 1).ok());
  nlohmann::json j = ReadManifestJson(dir);
  CHECK(j["version"] == kFormatVersion);
  REQUIRE(j.contains("manifest_xxh3"));
  CHECK(j["manifest_xxh3"] == SealOf(j));
  SUBCASE("a hand edit that keeps every file's size is Corruption") {
    j["feature_dtype"] = "float16";
    j["feature_dim"] = j["feature_dim"].get<int64_t>() * 2;
    WriteManifestJson(dir, j);
    const Status st = Dataset::Open(dir).status();
    CHECK(st.code() == StatusCode::kCorruption);
    CHECK(st.message().find("does not match its checksum") != std::string::npos);
  }
  SUBCASE("white space and key order may change") {
    std::ofstream(dir + "/" + kManifestFile, std::ios::trunc) << j.dump(7);
    CHECK(Dataset::Open(dir).ok());
  }
  SUBCASE("a version 2 manifest without a checksum, or a malformed one, is Corruption") {
    nlohmann::json bad = j;
    bad.erase("manifest_xxh3");
    WriteManifestJson(dir, bad);
    CHECK(Dataset::Open(dir).status().message().find("'manifest_xxh3' is missing") !=
          std::string::npos);
    bad["manifest_xxh3"] = 12;
    WriteManifestJson(dir, bad);
    CHECK(Dataset::Open(dir).status().message().find("not 16 hex digits") != std::string::npos);
  }
  SUBCASE("version 1, written before manifests had a checksum, is still read") {
    j.erase("manifest_xxh3");
    j["version"] = 1;
    WriteManifestJson(dir, j);
    auto ds = Dataset::Open(dir);
    REQUIRE(ds.ok());
    CHECK((*ds)->manifest().version == 1);
    CHECK((*ds)->VerifyAll().ok());
    // A writer that copies its manifest writes the current version, with a checksum.
    auto w = DatasetWriter::Create(tmp / "copy");
    REQUIRE(w.ok());
    REQUIRE(FillTinyDataset(w->get(), 10, 1).ok());
    const std::map<std::string, FileInfo> files = (*w)->manifest().files;
    (*w)->manifest() = (*ds)->manifest();
    (*w)->manifest().files = files;
    REQUIRE((*w)->Commit().ok());
    CHECK(ReadManifestJson(tmp / "copy")["version"] == kFormatVersion);
    CHECK(Dataset::Open(tmp / "copy").ok());
  }
  SUBCASE("an unknown version names the versions this build reads") {
    j["version"] = kFormatVersion + 1;
    j["manifest_xxh3"] = SealOf(j);
    WriteManifestJson(dir, j);
    CHECK(Dataset::Open(dir).status().message().find(
              "format version " + std::to_string(kFormatVersion + 1) + " is not supported") !=
          std::string::npos);
  }
}

TEST_CASE("format: a name or source that is not UTF-8 is written as U+FFFD") {
  testing::TempDir tmp;
  auto w = DatasetWriter::Create(tmp / "ds");
  REQUIRE(w.ok());
  REQUIRE(FillTinyDataset(w->get(), 10, 1).ok());
  (*w)->manifest().name = "n\xff";
  (*w)->manifest().source = "convert e\xfe.txt";
  REQUIRE((*w)->Commit().ok());
  auto ds = Dataset::Open(tmp / "ds");
  REQUIRE(ds.ok());
  CHECK((*ds)->manifest().name == "n\xef\xbf\xbd");
  CHECK((*ds)->manifest().source == "convert e\xef\xbf\xbd.txt");
}

TEST_CASE("format: a manifest edited out of step with its data is caught") {
  testing::TempDir tmp;
  SUBCASE("num_classes below the labels: verify and loading the labels name them") {
    REQUIRE(WriteTinyDataset(tmp / "ds", 10, 1).ok());
    EditManifest(tmp / "ds", [](nlohmann::json& j) { j["num_classes"] = 1; });
    auto ds = Dataset::Open(tmp / "ds");
    REQUIRE(ds.ok());  // the checksums still match
    const Status verify = (*ds)->VerifyAll();
    CHECK(verify.code() == StatusCode::kCorruption);
    CHECK(verify.message().find("labels.bin: node 1 has label 1") != std::string::npos);
    CHECK((*ds)->LoadLabels().status().code() == StatusCode::kCorruption);
  }
  SUBCASE("overlapping splits") {
    REQUIRE(WriteTinyDataset(tmp / "ds", 10, 1).ok());
    // valid.idx holds node 2; make train.idx {0, 2} by rewriting it through a new dataset.
    auto w = DatasetWriter::Create(tmp / "ov");
    REQUIRE(w.ok());
    REQUIRE(FillTinyDataset(w->get(), 10, 1).ok());
    std::vector<int64_t> train{0, 2};
    REQUIRE((*w)->WriteFile(kTrainFile, train.data(), 16).ok());
    REQUIRE((*w)->Commit().ok());
    auto ds = Dataset::Open(tmp / "ov");
    REQUIRE(ds.ok());
    const Status verify = (*ds)->VerifyAll();
    CHECK(verify.message().find("node 2 is in both train.idx and valid.idx") != std::string::npos);
  }
  SUBCASE("counts that disagree with the files' sizes are Corruption, naming the file") {
    REQUIRE(WriteTinyDataset(tmp / "ds", 10, 1).ok());
    EditManifest(tmp / "ds", [](nlohmann::json& j) { j["splits"]["train"] = 1000; });
    const Status st = Dataset::Open(tmp / "ds").status();
    CHECK(st.code() == StatusCode::kCorruption);
    CHECK(st.message().find("train.idx holds") != std::string::npos);
  }
  SUBCASE("an ID map the manifest names but the dataset lacks") {
    REQUIRE(WriteTinyDataset(tmp / "ds", 10, 1).ok());
    EditManifest(tmp / "ds", [](nlohmann::json& j) { j["has_id_map"] = true; });
    const Status st = Dataset::Open(tmp / "ds").status();
    CHECK(st.code() == StatusCode::kCorruption);
    CHECK(st.message().find("has_id_map is true, but") != std::string::npos);
  }
  SUBCASE("a negative count is named") {
    REQUIRE(WriteTinyDataset(tmp / "ds", 10, 1).ok());
    EditManifest(tmp / "ds", [](nlohmann::json& j) { j["num_classes"] = -1; });
    const Status st = Dataset::Open(tmp / "ds").status();
    CHECK(st.code() == StatusCode::kCorruption);
    CHECK(st.message().find("num_classes is negative (-1)") != std::string::npos);
  }
  SUBCASE("partition boundaries moved away from the feature extents") {
    // Rows of 4 KiB (1024 float32 features): every extent is exactly its rows.
    REQUIRE(WriteTinyDataset(tmp / "ds", 10, 1024).ok());
    EditManifest(tmp / "ds", [](nlohmann::json& j) {
      j["partitions"] = {{"count", 2},
                         {"algorithm", "random"},
                         {"boundaries", {0, 4, 10}},
                         {"edge_cut_fraction", 0.0},
                         {"imbalance", 0.0}};
      j["feature_extent_offsets"] = {0, 5 * 4096};
    });
    auto ds = Dataset::Open(tmp / "ds");
    REQUIRE_FALSE(ds.ok());
    CHECK(ds.status().message().find("boundaries and feature_extent_offsets disagree") !=
          std::string::npos);
  }
}

namespace {

// Replaces one file of a committed dataset by `data` (with a matching sidecar and manifest entry):
// data that passes every checksum yet is wrong.
void ReplaceFile(const std::string& dir, const std::string& name, const void* data, size_t bytes) {
  auto ds = Dataset::Open(dir);
  REQUIRE(ds.ok());
  const Manifest manifest = (*ds)->manifest();
  ds->reset();
  testing::TempDir staging;
  auto w = ChecksummedFileWriter::Create(staging.path(), name);
  REQUIRE(w.ok());
  REQUIRE((*w)->Append(data, bytes).ok());
  auto info = (*w)->Finish();
  REQUIRE(info.ok());
  for (const std::string& file : {name, name + ".sum"}) {
    std::filesystem::copy_file(staging / file, dir + "/" + file,
                               std::filesystem::copy_options::overwrite_existing);
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(info->sum_xxh3));
  EditManifest(dir, [&](nlohmann::json& j) {
    j["files"][name] = {{"data_bytes", info->data_bytes},
                        {"checksum_block_bytes", info->block_bytes},
                        {"sum_xxh3", hex}};
  });
}

std::string VerifyMessage(const std::string& dir) {
  auto ds = Dataset::Open(dir);
  REQUIRE_MESSAGE(ds.ok(), ds.status().ToString());
  const Status st = (*ds)->VerifyAll();
  return st.ok() ? "" : st.ToString();
}

}  // namespace

TEST_CASE("format: VerifyAll checks the graph and the relabelling against the manifest") {
  testing::TempDir tmp;
  const std::string dir = tmp / "ds";
  REQUIRE(WriteTinyDataset(dir, 10, 2).ok());  // the path 0-1-...-9, stored both ways
  CHECK(VerifyMessage(dir).empty());
  SUBCASE("an edge stored one way in an undirected graph") {
    // Node 0's neighbour 1 becomes 2: (0, 2) without (2, 0), and (1, 0) without (0, 1).
    std::vector<int32_t> nbrs = {2, 0, 2, 1, 3, 2, 4, 3, 5, 4, 6, 5, 7, 6, 8, 7, 9, 8};
    ReplaceFile(dir, kNeighborsFile, nbrs.data(), nbrs.size() * 4);
    CHECK(
        VerifyMessage(dir).find("says undirected, but some edge (u, v) is stored without (v, u)") !=
        std::string::npos);
    EditManifest(dir, [](nlohmann::json& j) { j["undirected"] = false; });
    CHECK(VerifyMessage(dir).empty());  // as a directed graph it is fine
  }
  SUBCASE("a neighbour outside the graph") {
    std::vector<int32_t> nbrs = {1, 0, 2, 1, 3, 2, 4, 3, 5, 4, 6, 5, 7, 6, 8, 7, 9, 10};
    ReplaceFile(dir, kNeighborsFile, nbrs.data(), nbrs.size() * 4);
    CHECK(VerifyMessage(dir).find("node 9 has neighbour 10, outside [0, num_nodes = 10)") !=
          std::string::npos);
  }
  SUBCASE("offsets that decrease") {
    std::vector<int64_t> offsets = {0, 1, 3, 2, 7, 9, 11, 13, 15, 17, 18};
    ReplaceFile(dir, kOffsetsFile, offsets.data(), offsets.size() * 8);
    CHECK(VerifyMessage(dir).find("offsets of node 2 decrease") != std::string::npos);
  }
  SUBCASE("a relabelling that is not a permutation") {
    std::vector<int64_t> old_ids = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    ReplaceFile(dir, kRelabelOldIdsFile, old_ids.data(), old_ids.size() * 8);
    CHECK(VerifyMessage(dir).empty());
    old_ids[7] = 3;
    ReplaceFile(dir, kRelabelOldIdsFile, old_ids.data(), old_ids.size() * 8);
    CHECK(VerifyMessage(dir).find("node 7 maps to ID 3, which is out of range or taken") !=
          std::string::npos);
  }
}

namespace {
// The message of a failed result, "" when it succeeded.
template <typename R>
std::string MessageOf(const R& r) {
  return r.ok() ? "" : r.status().ToString();
}
bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}
}  // namespace

TEST_CASE("format: every load checks what its readers rely on, as VerifyAll does") {
  testing::TempDir tmp;
  const std::string dir = tmp / "ds";
  REQUIRE(WriteTinyDataset(dir, 10, 2).ok());  // the path 0-1-...-9, stored both ways
  auto open = [&] {
    auto ds = Dataset::Open(dir);
    REQUIRE_MESSAGE(ds.ok(), ds.status().ToString());
    return std::move(*ds);
  };
  SUBCASE("offsets that decrease: every graph load, and verify, the same message") {
    std::vector<int64_t> offsets = {0, 1, 3, 2, 7, 9, 11, 13, 15, 17, 18};
    ReplaceFile(dir, kOffsetsFile, offsets.data(), offsets.size() * 8);
    const std::string want =
        dir + "/graph.offsets: offsets of node 2 decrease (entry 2 = 3, " + "entry 3 = 2)";
    CHECK(Has(MessageOf(open()->LoadOffsets()), want));
    CHECK(Has(VerifyMessage(dir), want));
  }
  SUBCASE("offsets past num_edges") {
    std::vector<int64_t> offsets = {0, 1, 3, 5, 7, 9, 11, 13, 15, 99, 18};
    ReplaceFile(dir, kOffsetsFile, offsets.data(), offsets.size() * 8);
    CHECK(Has(MessageOf(open()->LoadOffsets()),
              "graph.offsets: entry 9 = 99 (a bound of node 9's "
              "row), outside [0, num_edges = 18]"));
  }
  SUBCASE("a neighbour outside the graph names its node") {
    std::vector<int32_t> nbrs = {1, 0, 2, 1, 3, 2, 4, 3, 5, 4, 6, 5, 7, 6, 8, 7, 9, 10};
    ReplaceFile(dir, kNeighborsFile, nbrs.data(), nbrs.size() * 4);
    const std::string want =
        "graph.neighbors: node 9 has neighbour 10, outside [0, num_nodes = 10)";
    CHECK(Has(MessageOf(open()->LoadNeighbors()), want));
    CHECK(Has(VerifyMessage(dir), want));
  }
  SUBCASE("neighbours out of order within a row fail verify only") {
    std::vector<int32_t> nbrs = {1, 2, 0, 1, 3, 2, 4, 3, 5, 4, 6, 5, 7, 6, 8, 7, 9, 8};
    ReplaceFile(dir, kNeighborsFile, nbrs.data(), nbrs.size() * 4);
    CHECK(open()->LoadNeighbors().ok());
    CHECK(Has(VerifyMessage(dir),
              "graph.neighbors: node 1 has neighbour 0 after 2; neighbours "
              "must be in ascending order within a row"));
  }
  SUBCASE("a feature that is not finite names its node and column") {
    std::vector<float> feats(20, 1.0f);
    feats[7] = std::numeric_limits<float>::quiet_NaN();
    ReplaceFile(dir, kFeaturesFile, feats.data(), feats.size() * 4);
    const std::string want = "features.bin: node 3 has feature 1 = nan";
    CHECK(Has(MessageOf(open()->LoadFeatures()), want));
    std::vector<float> row(2);
    CHECK(open()->ReadFeatureRows(2, 1, row.data()).ok());
    CHECK(Has(open()->ReadFeatureRows(3, 1, row.data()).ToString(), want));
    CHECK(Has(VerifyMessage(dir), want));
    feats[7] = -std::numeric_limits<float>::infinity();
    ReplaceFile(dir, kFeaturesFile, feats.data(), feats.size() * 4);
    CHECK(Has(MessageOf(open()->LoadFeatures()), "node 3 has feature 1 = -inf"));
  }
  SUBCASE("overlapping splits: every split load") {
    std::vector<int64_t> valid = {1};  // node 1 is also a training node
    ReplaceFile(dir, kValidFile, valid.data(), 8);
    const std::string want = "node 1 is in both train.idx and valid.idx; splits must be disjoint";
    CHECK(Has(MessageOf(open()->LoadSplits()), want));
    CHECK(Has(MessageOf(open()->LoadSplit(kTestFile)), want));
    CHECK(Has(VerifyMessage(dir), want));
  }
  SUBCASE("a relabelling that is not a permutation: LoadOldIds") {
    std::vector<int64_t> old_ids = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
    ReplaceFile(dir, kRelabelOldIdsFile, old_ids.data(), old_ids.size() * 8);
    auto ids = open()->LoadOldIds();
    REQUIRE(ids.ok());
    CHECK((*ids)[0] == 9);
    old_ids[4] = 2;
    ReplaceFile(dir, kRelabelOldIdsFile, old_ids.data(), old_ids.size() * 8);
    const std::string want = "relabel.old_ids: node 7 maps to ID 2, which is out of range or taken";
    CHECK(Has(MessageOf(open()->LoadOldIds()), want));
    CHECK(Has(VerifyMessage(dir), want));
  }
  SUBCASE("the identity without a relabelling") {
    auto ids = open()->LoadOldIds();
    REQUIRE(ids.ok());
    CHECK(*ids == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  }
  SUBCASE("a class count past the limit is refused on open, without overflow") {
    EditManifest(dir, [](nlohmann::json& j) { j["num_classes"] = int64_t{1} << 31; });
    auto ds = Dataset::Open(dir);
    REQUIRE_FALSE(ds.ok());
    CHECK(Has(ds.status().message(), "num_classes is 2147483648, above the limit of 2^24"));
  }
}

TEST_CASE("format: opening a dataset through a symbolic link loop gives the OS's reason") {
  testing::TempDir tmp;
  const std::string loop = tmp / "loop";
  std::filesystem::create_symlink(loop, loop);
  auto ds = Dataset::Open(loop);
  REQUIRE_FALSE(ds.ok());
  CHECK(Has(ds.status().message(), "Too many levels of symbolic links"));
  CHECK_FALSE(Has(ds.status().message(), "does not exist"));
  auto missing = Dataset::Open(tmp / "nothing");
  REQUIRE_FALSE(missing.ok());
  CHECK(Has(missing.status().message(), "does not exist"));
}

TEST_CASE("log: a minimum printed with FormatBytesAtLeast is accepted back") {
  for (const uint64_t bytes : {uint64_t{87545610}, uint64_t{1} << 20, uint64_t{1536} << 20,
                               uint64_t{123456789012}, uint64_t{1025}}) {
    CAPTURE(bytes);
    std::string text = FormatBytesAtLeast(bytes);
    text.erase(text.find(' '), 1);  // "83.49 MiB" -> "83.49MiB", as an option takes it
    uint64_t parsed = 0;
    REQUIRE(ParseBytes(text, &parsed));
    CHECK(parsed >= bytes);
  }
  CHECK(FormatBytesAtLeast(87545610) == "83.49 MiB");  // 83.4898... rounds up
  CHECK(FormatBytes(87545610) == "83.49 MiB");
  CHECK(FormatBytesAtLeast(87540000) == "83.49 MiB");
  CHECK(FormatBytes(87540000) == "83.48 MiB");  // to the nearest: a figure below the minimum
}

TEST_CASE("format: partition boundaries moved within an extent's padding fail VerifyAll") {
  testing::TempDir tmp;
  const std::string dir = tmp / "ds";
  // Rows of 1 KiB in three partitions, nodes 0..2, 3..5 and 6..9, at 0, 4 KiB and 8 KiB. Moving the
  // first boundary to 2 or 4 keeps every extent the size it was.
  REQUIRE(WriteTinyDataset(dir, 10, 256).ok());
  auto ds = Dataset::Open(dir);
  REQUIRE(ds.ok());
  std::vector<float> rows(10 * 256);
  REQUIRE((*ds)->ReadFeatureRows(0, 10, rows.data()).ok());
  ds->reset();
  std::vector<char> file(8192 + 4 * 1024, 0);
  std::memcpy(file.data(), rows.data(), 3 * 1024);
  std::memcpy(file.data() + 4096, rows.data() + 3 * 256, 3 * 1024);
  std::memcpy(file.data() + 8192, rows.data() + 6 * 256, 4 * 1024);
  ReplaceFile(dir, kFeaturesFile, file.data(), file.size());
  auto partitioned = [&](int64_t boundary) {
    EditManifest(dir, [&](nlohmann::json& j) {
      j["partitions"] = {{"count", 3},
                         {"algorithm", "random"},
                         {"boundaries", {0, boundary, 6, 10}},
                         {"edge_cut_fraction", 0.0},
                         {"imbalance", 0.0}};
      j["feature_extent_offsets"] = {0, 4096, 8192};
    });
  };
  partitioned(3);
  CHECK(VerifyMessage(dir).empty());
  for (const int64_t moved : {2, 4}) {
    CAPTURE(moved);
    partitioned(moved);
    CHECK(VerifyMessage(dir).find("do not match the feature layout") != std::string::npos);
  }
}

TEST_CASE("format: half precision conversion") {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 1e-5f, 0.333251953125f}) {
    CHECK(HalfToFloat(FloatToHalf(f)) == doctest::Approx(f).epsilon(1e-3));
  }
  CHECK(FloatToHalf(1.0f) == 0x3c00);
  CHECK(FloatToHalf(-2.0f) == 0xc000);
}

TEST_CASE("format: HalfToFloatRow gives HalfToFloat's value for every half, at any length") {
  std::vector<uint16_t> all(65536 + 7);  // every bit pattern, then a tail shorter than a vector
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);
  for (size_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  for (const size_t offset : {size_t{0}, size_t{1}, size_t{3}}) {
    CAPTURE(offset);
    std::vector<float> out(all.size() - offset, -7.0f);
    HalfToFloatRow(all.data() + offset, out.data(), out.size());
    size_t differ = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      const float want = HalfToFloat(all[i + offset]);
      if (std::isnan(want)) {
        differ += std::isnan(out[i]) ? 0 : 1;  // F16C quietens signalling NaNs
        continue;
      }
      uint32_t a, b;
      std::memcpy(&a, &want, 4);
      std::memcpy(&b, &out[i], 4);
      differ += a == b ? 0 : 1;
    }
    CHECK(differ == 0);
  }
  float untouched = 5.0f;
  HalfToFloatRow(all.data(), &untouched, 0);
  CHECK(untouched == 5.0f);
}

TEST_CASE("log: ParseBytes") {
  uint64_t b = 0;
  CHECK(ParseBytes("4GiB", &b));
  CHECK(b == 4ull << 30);
  CHECK(ParseBytes("512m", &b));
  CHECK(b == 512ull << 20);
  CHECK(ParseBytes("1000", &b));
  CHECK(b == 1000);
  CHECK_FALSE(ParseBytes("lots", &b));
  CHECK_FALSE(ParseBytes("4XB", &b));
}
