// Predictions and embeddings are written in raw-ID order, also after partitioning renumbered the
// nodes (relabel.old_ids).
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "skiff/format/dataset.h"
#include "skiff/generate/generator.h"
#include "skiff/partition/partition_dataset.h"
#include "skiff/train/export.h"
#include "skiff/train/trainer.h"
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
