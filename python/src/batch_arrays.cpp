#include "batch_arrays.h"

#include <cstddef>

namespace skiff::python {
namespace {

// Appends the edges of destinations [lo, hi) of `block` to the sources and targets.
void AppendRows(const sampler::Block& block, int64_t lo, int64_t hi, std::vector<int64_t>* src,
                std::vector<int64_t>* dst) {
  for (int64_t d = lo; d < hi; ++d) {
    for (int64_t j = block.indptr[d]; j < block.indptr[d + 1]; ++j) {
      src->push_back(block.indices[j]);
      dst->push_back(d);
    }
  }
}

std::vector<int64_t> Join(std::vector<int64_t> src, const std::vector<int64_t>& dst) {
  src.insert(src.end(), dst.begin(), dst.end());
  return src;
}

}  // namespace

std::vector<int64_t> PygEdgeIndex(const sampler::MiniBatch& batch,
                                  std::vector<int64_t>* hop_edges) {
  std::vector<int64_t> src, dst;
  int64_t edges = 0;
  for (const sampler::Block& block : batch.blocks) edges += block.num_edges();
  src.reserve(edges);
  dst.reserve(edges);
  int64_t lo = 0;  // the destinations expanded by later blocks (inner hops)
  for (std::size_t l = batch.blocks.size(); l-- > 0;) {
    const sampler::Block& block = batch.blocks[l];
    const size_t before = src.size();
    AppendRows(block, lo, block.num_dst, &src, &dst);
    if (hop_edges != nullptr) hop_edges->push_back(static_cast<int64_t>(src.size() - before));
    lo = block.num_dst;
  }
  return Join(std::move(src), dst);
}

std::vector<int64_t> HopNodes(const sampler::MiniBatch& batch) {
  std::vector<int64_t> nodes;
  int64_t reached = 0;
  for (std::size_t l = batch.blocks.size(); l-- > 0;) {
    nodes.push_back(batch.blocks[l].num_dst - reached);
    reached = batch.blocks[l].num_dst;
  }
  if (!batch.blocks.empty()) nodes.push_back(batch.blocks[0].num_src - reached);
  return nodes;
}

std::vector<int64_t> BlockEdgeIndex(const sampler::Block& block) {
  std::vector<int64_t> src, dst;
  src.reserve(block.num_edges());
  dst.reserve(block.num_edges());
  AppendRows(block, 0, block.num_dst, &src, &dst);
  return Join(std::move(src), dst);
}

uint64_t LinkLabelArrays::bytes() const {
  return (edge_label_index.capacity() + input_id.capacity() + neg_index.capacity()) * 8 +
         edge_label.capacity() * 4;
}

LinkLabelArrays MakeLinkLabels(const train::EdgeBatch& edges, std::span<const int64_t> pair_ids,
                               std::span<const float> pair_labels, int64_t negative_pairs) {
  const auto pairs = static_cast<int64_t>(edges.pos_src.size());
  const int64_t total = pairs + negative_pairs;
  LinkLabelArrays out;
  out.edge_label_index.resize(static_cast<size_t>(2 * total));
  out.edge_label.assign(static_cast<size_t>(total), 0.0f);
  int64_t* src = out.edge_label_index.data();
  int64_t* dst = src + total;
  for (int64_t i = 0; i < pairs; ++i) {
    src[i] = edges.pos_src[static_cast<size_t>(i)];
    dst[i] = edges.pos_dst[static_cast<size_t>(i)];
    out.edge_label[static_cast<size_t>(i)] = pair_labels[static_cast<size_t>(pair_ids[i])];
  }
  for (int64_t n = 0; n < negative_pairs; ++n) {
    src[pairs + n] = edges.pos_src[static_cast<size_t>(n % pairs)];
    dst[pairs + n] = edges.neg_dst[static_cast<size_t>(n / pairs)];
  }
  out.input_id.assign(pair_ids.begin(), pair_ids.end());
  out.neg_index.assign(edges.neg_dst.begin(), edges.neg_dst.end());
  return out;
}

}  // namespace skiff::python
