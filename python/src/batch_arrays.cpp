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

}  // namespace skiff::python
