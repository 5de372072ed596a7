// Test helper: writes a small valid dataset (a path graph 0-1-...-(n-1), dim-d features) through
// format::DatasetWriter.
#pragma once

#include <numeric>
#include <string>
#include <vector>

#include "skiff/format/dataset.h"
#include "skiff/half.h"

namespace skiff::testing {

using format::DatasetWriter;
using format::DType;

inline Status FillTinyDataset(DatasetWriter* w, int64_t n, int64_t d, DType fdt = DType::kFloat32) {
  std::vector<int64_t> offsets{0};
  std::vector<int32_t> nbrs;
  for (int64_t v = 0; v < n; ++v) {
    if (v > 0) nbrs.push_back(static_cast<int32_t>(v - 1));
    if (v + 1 < n) nbrs.push_back(static_cast<int32_t>(v + 1));
    offsets.push_back(static_cast<int64_t>(nbrs.size()));
  }
  auto& m = w->manifest();
  m.name = "tiny";
  m.num_nodes = n;
  m.num_edges = static_cast<int64_t>(nbrs.size());
  m.undirected = true;
  m.feature_dim = d;
  m.feature_dtype = fdt;
  m.num_classes = 2;
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kOffsetsFile, offsets.data(), offsets.size() * 8));
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kNeighborsFile, nbrs.data(), nbrs.size() * 4));
  std::vector<float> feats(n * d);
  std::iota(feats.begin(), feats.end(), 0.0f);
  if (fdt == DType::kFloat32) {
    SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kFeaturesFile, feats.data(), feats.size() * 4));
  } else {
    std::vector<uint16_t> h(feats.size());
    for (size_t i = 0; i < h.size(); ++i) h[i] = FloatToHalf(feats[i]);
    SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kFeaturesFile, h.data(), h.size() * 2));
  }
  std::vector<int32_t> labels(n);
  for (int64_t v = 0; v < n; ++v) labels[v] = static_cast<int32_t>(v % 2);
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kLabelsFile, labels.data(), labels.size() * 4));
  std::vector<int64_t> train{0, 1}, valid{2}, test{3};
  m.train_count = 2;
  m.valid_count = 1;
  m.test_count = 1;
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kTrainFile, train.data(), 16));
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kValidFile, valid.data(), 8));
  SKIFF_RETURN_IF_ERROR(w->WriteFile(format::kTestFile, test.data(), 8));
  return Status::Ok();
}

inline Status WriteTinyDataset(const std::string& dir, int64_t n, int64_t d,
                               DType fdt = DType::kFloat32, bool overwrite = false) {
  SKIFF_ASSIGN_OR_RETURN(auto w, DatasetWriter::Create(dir, overwrite));
  SKIFF_RETURN_IF_ERROR(FillTinyDataset(w.get(), n, d, fdt));
  return w->Commit();
}

}  // namespace skiff::testing
