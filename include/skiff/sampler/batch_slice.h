// SliceBatch: the part of a sampled mini-batch that a contiguous run of its seeds depends on, as a
// mini-batch of its own -- so that a batch's forward and backward can run one part at a time,
// with the activations of one part alive at once (micro-batches: Model::ComputeGradientsInParts).
//
// Node-wise sampling gives every node the same sampled neighbours whichever batch it is in, so a
// seed's computation graph inside the whole batch is the same as inside its part: the part's
// blocks hold exactly the rows and edges of the whole batch's blocks that its seeds reach, in the
// same order within each row. Running the model over every part and summing their gradients
// (each part's loss weighted by its share of the batch's labelled seeds) computes the whole
// batch's gradients up to the order of floating-point sums -- and up to dropout masks, which are
// drawn per part.
//
// Layout of a part (MiniBatch's conventions hold: destinations a prefix of sources):
//   seeds, labels   seeds[first .. first + count) of the whole batch and their labels;
//   blocks[l]       the whole block's destinations the part needs, in the order in which the
//                   layer above reaches them (the part's seeds first), each row's edges in the
//                   whole block's order; sources are those destinations, then the new sources in
//                   first-seen order; src_degree follows its sources when the whole batch has it.
//                   A condensed block 0 (aggregated input) stays condensed, num_src == num_dst;
//   input_nodes     the global IDs of the part's first-layer input rows;
//   input_rows      for each of those rows, its row in the whole batch's first-layer input (x of
//                   Model::Forward, or dst_rows / aggregated of ForwardAggregated) -- what the
//                   caller copies into the part's input.
//
// Thread safety: a value type; SliceBatch reads `whole` only, so many threads may slice one batch
// into parts of their own.
#pragma once

#include <cstdint>
#include <vector>

#include "skiff/sampler/minibatch.h"

namespace skiff::sampler {

struct BatchSlice {
  MiniBatch batch;
  std::vector<int64_t> input_rows;
  // Scratch kept between calls (a row's local ID in the part, -1 when absent).
  std::vector<int32_t> local_of_;
};

// Writes the part of `whole` for seeds [first, first + count) into *out (its vectors reused).
// Requires 0 <= first, count >= 0, first + count <= whole.seeds.size(), and a well-formed batch
// (checked: a malformed one is a programmer error here -- the sampler built it).
void SliceBatch(const MiniBatch& whole, int64_t first, int64_t count, BatchSlice* out);

// Bytes a part keeps beside its rows: its blocks and input_nodes / input_rows, for `dst`, `src`
// and `edges` per block as a memory plan estimates them (with src_degree when `degrees`).
uint64_t SliceStructureBytes(const std::vector<int64_t>& dst, const std::vector<int64_t>& src,
                             const std::vector<int64_t>& edges, bool degrees);

}  // namespace skiff::sampler
