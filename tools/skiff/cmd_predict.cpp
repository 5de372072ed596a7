// `skiff predict DATASET --checkpoint PATH --out DIR`: predictions and embeddings of every node.
#include <cstdio>

#include "kernels/cpu/parallel.h"
#include "skiff/format/dataset.h"
#include "skiff/log.h"
#include "skiff/train/export.h"
#include "skiff/train/trainer.h"
#include "tools/skiff/command.h"

namespace skiff::cli {
namespace {

struct PredictOptions {
  std::string dataset, checkpoint, out;
  int threads = 0;
};

int RunPredict(const PredictOptions& o) {
  auto ds = format::Dataset::Open(o.dataset);
  if (!ds.ok()) return ReportStatus("predict", ds.status());
  auto ckpt = train::ReadCheckpoint(o.checkpoint);
  if (!ckpt.ok()) return ReportStatus("predict", ckpt.status());
  auto t = train::TrainOptions::FromJson(ckpt->config_json);
  if (!t.ok()) return ReportStatus("predict", t.status().WithContext(o.checkpoint));
  cpu::SetNumThreads(o.threads);
  t->sampler_threads = std::max(1, cpu::NumThreads());
  auto data = train::LoadInMemory(**ds);
  if (!data.ok()) return ReportStatus("predict", data.status());
  if (t->feature_norm == "row") (*data)->features->NormalizeRows();
  if ((*data)->data.features->dim() != t->model.in_dim ||
      (*data)->data.num_classes != t->model.num_classes) {
    return ReportStatus("predict",
                        Status::InvalidArgument(
                            "checkpoint " + o.checkpoint +
                            " was trained on features/classes of another shape than " + o.dataset));
  }
  auto trainer = train::Trainer::Create((*data)->data, *t);
  if (!trainer.ok()) return ReportStatus("predict", trainer.status());
  Status st = (*trainer)->Restore(*ckpt);
  if (!st.ok()) return ReportStatus("predict", st.WithContext(o.checkpoint));
  st = train::ExportPredictions(**ds, **trainer, o.out);
  if (!st.ok()) return ReportStatus("predict", st);
  std::printf("wrote predictions.npy and embeddings.npy for %lld nodes to %s\n",
              static_cast<long long>((*ds)->manifest().num_nodes), o.out.c_str());
  return 0;
}

RunFn Setup(CLI::App& app) {
  auto o = std::make_shared<PredictOptions>();
  app.description("Write predictions and final-layer embeddings (.npy) of every node");
  app.add_option("dataset", o->dataset, "Dataset directory")->required();
  app.add_option("--checkpoint", o->checkpoint, "Checkpoint written by skiff train")->required();
  app.add_option("--out", o->out, "Output directory")->required();
  app.add_option("--threads", o->threads, "Threads (0 = all)");
  return [o] { return RunPredict(*o); };
}

}  // namespace
SKIFF_REGISTER_COMMAND(predict, 55, Setup);
}  // namespace skiff::cli
