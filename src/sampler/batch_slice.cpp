#include "skiff/sampler/batch_slice.h"

#include <algorithm>

#include "skiff/status.h"

namespace skiff::sampler {
namespace {

// Builds the part's block from `whole` whose destinations are `dst` (rows of the whole block, in
// the part's order): writes the part's sources (rows of the whole block's sources: `dst` first)
// to *src. `local_of` has whole.num_src entries, all -1; they are -1 again on return.
void SliceBlock(const Block& whole, const std::vector<int64_t>& dst, Block* part,
                std::vector<int64_t>* src, std::vector<int32_t>* local_of) {
  src->assign(dst.begin(), dst.end());
  for (size_t d = 0; d < dst.size(); ++d) {
    SKIFF_CHECK(dst[d] >= 0 && dst[d] < whole.num_dst);
    (*local_of)[dst[d]] = static_cast<int32_t>(d);
  }
  part->indptr.resize(dst.size() + 1);
  part->indices.clear();
  part->indptr[0] = 0;
  for (size_t d = 0; d < dst.size(); ++d) {
    for (int64_t e = whole.indptr[dst[d]]; e < whole.indptr[dst[d] + 1]; ++e) {
      const int32_t s = whole.indices[e];
      if ((*local_of)[s] < 0) {
        (*local_of)[s] = static_cast<int32_t>(src->size());
        src->push_back(s);
      }
      part->indices.push_back((*local_of)[s]);
    }
    part->indptr[d + 1] = static_cast<int64_t>(part->indices.size());
  }
  for (int64_t s : *src) (*local_of)[s] = -1;
  part->num_dst = static_cast<int64_t>(dst.size());
  part->num_src = static_cast<int64_t>(src->size());
  part->src_degree.clear();
  if (!whole.src_degree.empty()) {
    part->src_degree.reserve(src->size());
    for (int64_t s : *src) part->src_degree.push_back(whole.src_degree[s]);
  }
}

}  // namespace

void SliceBatch(const MiniBatch& whole, int64_t first, int64_t count, BatchSlice* out) {
  const auto seeds = static_cast<int64_t>(whole.seeds.size());
  SKIFF_CHECK(first >= 0 && count >= 0 && first + count <= seeds);
  SKIFF_CHECK(!whole.blocks.empty() && whole.blocks.back().num_dst == seeds);
  MiniBatch& part = out->batch;
  part.seeds.assign(whole.seeds.begin() + first, whole.seeds.begin() + first + count);
  part.labels.clear();
  if (!whole.labels.empty()) {
    SKIFF_CHECK(static_cast<int64_t>(whole.labels.size()) == seeds);
    part.labels.assign(whole.labels.begin() + first, whole.labels.begin() + first + count);
  }
  part.blocks.resize(whole.blocks.size());
  // Rows of the current block's destinations, from the seeds down to block 0's.
  std::vector<int64_t> dst(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) dst[i] = first + i;
  std::vector<int64_t> src;
  for (size_t l = whole.blocks.size(); l-- > 0;) {
    const Block& block = whole.blocks[l];
    Block& sliced = part.blocks[l];
    if (block.condensed()) {
      SKIFF_CHECK(l == 0);
      for (int64_t d : dst) SKIFF_CHECK(d >= 0 && d < block.num_dst);
      sliced = Block{};
      sliced.num_dst = sliced.num_src = static_cast<int64_t>(dst.size());
      break;
    }
    SKIFF_CHECK(static_cast<int64_t>(block.indptr.size()) == block.num_dst + 1);
    out->local_of_.resize(std::max(out->local_of_.size(), static_cast<size_t>(block.num_src)), -1);
    SliceBlock(block, dst, &sliced, &src, &out->local_of_);
    dst.swap(src);  // block l's sources are block l-1's destinations
  }
  // The first layer's input rows: block 0's sources, or its destinations when condensed.
  out->input_rows.swap(dst);
  part.input_nodes.resize(out->input_rows.size());
  for (size_t i = 0; i < out->input_rows.size(); ++i) {
    SKIFF_CHECK(out->input_rows[i] < static_cast<int64_t>(whole.input_nodes.size()));
    part.input_nodes[i] = whole.input_nodes[out->input_rows[i]];
  }
}

uint64_t SliceStructureBytes(const std::vector<int64_t>& dst, const std::vector<int64_t>& src,
                             const std::vector<int64_t>& edges, bool degrees) {
  uint64_t bytes = 0;
  for (size_t l = 0; l < dst.size(); ++l) {
    bytes += 8 * static_cast<uint64_t>(dst[l] + 1) + 4 * static_cast<uint64_t>(edges[l]);
    if (degrees) bytes += 8 * static_cast<uint64_t>(src[l]);
    bytes += 4 * static_cast<uint64_t>(src[l]);  // local_of_ scratch
  }
  // input_nodes, input_rows, and the sources of the walk.
  if (!src.empty()) bytes += 3 * 8 * static_cast<uint64_t>(src[0]);
  return bytes;
}

}  // namespace skiff::sampler
