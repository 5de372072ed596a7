// Predictions and embeddings are written in raw-ID order, also after partitioning renumbered the
// nodes (relabel.old_ids).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "skiff/convert/convert.h"
#include "skiff/format/dataset.h"
#include "skiff/generate/generator.h"
#include "skiff/io/npy.h"
#include "skiff/partition/partition_dataset.h"
#include "skiff/train/export.h"
#include "skiff/train/trainer.h"
#include "tests/unit/test_text_files.h"
#include "tests/unit/test_util.h"

using namespace skiff;

namespace {

std::string ReadWhole(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

train::TrainOptions Options() {
  train::TrainOptions t;
  t.model.num_layers = 2;
  t.model.hidden_dim = 16;
  t.fanouts = {5, 3};
  t.eval_fanouts = {-1, -1};  // every neighbour: predictions do not depend on the numbering
  t.batch_size = 256;
  t.epochs = 2;
  t.seed = 3;
  t.sampler_threads = 1;
  t.show_progress = false;
  return t;
}

}  // namespace

TEST_CASE("export: a partitioned dataset predicts every node in the row of its original ID") {
  testing::TempDir dir;
  generate::GenerateOptions g;
  g.output = dir / "plain";
  g.num_nodes = 2000;
  g.avg_degree = 5;
  g.num_classes = 4;
  g.feature_dim = 8;
  g.threads = 1;
  REQUIRE(generate::GenerateDataset(g).ok());
  partition::PartitionOptions p;
  p.dataset_dir = dir / "plain";
  p.output_dir = dir / "parts";
  p.partitioner.k = 4;
  REQUIRE(partition::PartitionDataset(p).ok());

  auto plain = format::Dataset::Open(dir / "plain");
  auto parts = format::Dataset::Open(dir / "parts");
  REQUIRE(plain.ok());
  REQUIRE(parts.ok());
  REQUIRE((*parts)->manifest().files.count(format::kRelabelOldIdsFile) == 1);

  auto plain_data = train::LoadInMemory(**plain);
  REQUIRE(plain_data.ok());
  auto trained = train::Trainer::Create((*plain_data)->data, Options());
  REQUIRE(trained.ok());
  REQUIRE((*trained)->Run().ok());
  REQUIRE(train::ExportPredictions(**plain, **trained, dir / "out-plain").ok());

  // The same model on the renumbered dataset.
  auto parts_data = train::LoadInMemory(**parts);
  REQUIRE(parts_data.ok());
  auto same = train::Trainer::Create((*parts_data)->data, Options());
  REQUIRE(same.ok());
  REQUIRE((*same)->Restore(*(*trained)->MakeCheckpoint(1)).ok());
  REQUIRE(train::ExportPredictions(**parts, **same, dir / "out-parts").ok());

  const std::string a = ReadWhole(dir / "out-plain/predictions.npy");
  const std::string b = ReadWhole(dir / "out-parts/predictions.npy");
  REQUIRE(a.size() == b.size());
  // Neighbour sums may add in another order after renumbering; allow a handful of near-ties.
  int64_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i] ? 1 : 0;
  CHECK(differ <= 8);
  CHECK(a.size() > 2000 * 4);
}

namespace {

// Exports with a predictor that gives each node its own number as its class, and returns the
// rows' node numbers.
std::vector<int32_t> ExportNodeNumbers(const format::Dataset& dataset, const std::string& out) {
  const train::Predictor numbers = [](const std::vector<int64_t>& nodes,
                                      std::vector<int32_t>* classes, std::vector<float>* emb) {
    classes->assign(nodes.begin(), nodes.end());
    emb->assign(nodes.begin(), nodes.end());  // one embedding column
    return Status::Ok();
  };
  REQUIRE(train::ExportPredictions(dataset, numbers, out).ok());
  auto reader = io::NpyReader::OpenFile(out + "/predictions.npy");
  REQUIRE(reader.ok());
  std::vector<int64_t> rows(static_cast<size_t>(dataset.manifest().num_nodes));
  REQUIRE((*reader)->ReadInt64(static_cast<int64_t>(rows.size()), rows.data()).ok());
  return {rows.begin(), rows.end()};
}

// Converts `edges` (an edge list) with its IDs mapped through the ID map.
std::unique_ptr<format::Dataset> ConvertMapped(const testing::TempDir& dir,
                                               const std::string& edges, const std::string& name) {
  testing::WriteText(dir / (name + ".txt"), edges);
  convert::ConvertOptions o;
  o.input = dir / (name + ".txt");
  o.output = dir / name;
  o.memory_bytes = 16ull << 20;
  o.id_map = convert::IdMapMode::kAlways;
  REQUIRE(convert::ConvertGraph(o).ok());
  auto ds = format::Dataset::Open(dir / name);
  REQUIRE(ds.ok());
  REQUIRE((*ds)->manifest().has_id_map);
  return std::move(*ds);
}

}  // namespace

TEST_CASE("export: text raw IDs are written beside the rows, which follow their sorted order") {
  testing::TempDir dir;
  // First seen (dense) order: carol 0, alice 1, dave 2, bob 3.
  auto ds = ConvertMapped(dir, "carol alice\ndave bob\nalice bob\n", "text");
  const std::vector<int32_t> rows = ExportNodeNumbers(*ds, dir / "out");
  CHECK(rows == std::vector<int32_t>{1, 3, 0, 2});
  CHECK(ReadWhole(dir / "out/raw_ids.txt") == "alice\nbob\ncarol\ndave\n");
  CHECK_FALSE(std::filesystem::exists(dir / "out/raw_ids.npy"));
}

TEST_CASE("export: integer raw IDs sort as numbers and are written as raw_ids.npy") {
  testing::TempDir dir;
  // First seen (dense) order: 10 -> 0, 9 -> 1, 100 -> 2, -3 -> 3. As text, "100" < "9".
  auto ds = ConvertMapped(dir, "10 9\n100 -3\n9 100\n", "ints");
  const std::vector<int32_t> rows = ExportNodeNumbers(*ds, dir / "out");
  CHECK(rows == std::vector<int32_t>{3, 1, 0, 2});
  auto reader = io::NpyReader::OpenFile(dir / "out/raw_ids.npy");
  REQUIRE(reader.ok());
  std::vector<int64_t> raw(4);
  REQUIRE((*reader)->ReadInt64(4, raw.data()).ok());
  CHECK(raw == std::vector<int64_t>{-3, 9, 10, 100});
  CHECK_FALSE(std::filesystem::exists(dir / "out/raw_ids.txt"));
}
