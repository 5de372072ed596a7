// StepAccumulator: optimiser steps over several batches -- which batches a step sums, when it
// ends, and the mean it takes -- for the node and the link trainer alike.
//
// A trainer computes each batch's gradients alone into its parameters and calls Add(); when a
// step is complete, the accumulator writes the step's mean gradient into the parameters
// (GradientSum::Store) and calls the trainer's update. Three kinds of run (Kind):
//   kOneProcess  every `accumulate` batches of the pass, in pass order, make a step; the pass's
//                last, shorter step ends at EndPass(). The pass's batch count need not be known
//                ahead (a pass runner may cut the batches as it goes).
//   kReplicated  a data-parallel run of W ranks (gradient_sum.h): rounds of W batches, batch
//                kW + r on rank r, each round summed into the step on every rank in batch order
//                (AddRoundInBatchOrder); a step is `accumulate` rounds. Every rank takes part in
//                every round, with a batch or without: BeginPass() gets the pass's batch count
//                (every rank's) and EndPass() joins the rounds a rank had no batch in.
//   kOwned       owned partitions: every rank sees every plan batch and adds its weighted part
//                of it (AddWeighted; nothing when its part has no labelled seed); every
//                `accumulate` plan batches the ranks' sums are all-reduced in rank order.
// In every kind a step's gradient is the sum of its batches' divided by their number, so W ranks
// with `accumulate` A step as one process does with W * A (bitwise for kReplicated).
//
// Thread safety: one thread (the trainer's).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "skiff/dist/communicator.h"
#include "skiff/model/model.h"
#include "skiff/status.h"
#include "skiff/train/gradient_sum.h"

namespace skiff::train {

// The float copies of the parameters a StepAccumulator keeps for a run with `accumulate` and
// `world_size` ranks (0 when every step is one batch of one process): the step's sum, and on a
// data-parallel rank the round's contribution. For the memory plan.
int StepGradientCopies(int accumulate, int world_size);

class StepAccumulator {
 public:
  enum class Kind { kOneProcess, kReplicated, kOwned };
  // What a step needs from its trainer: the parameters whose gradients hold the batch just
  // computed (and receive the step's mean), and one optimiser update from those gradients.
  struct Hooks {
    std::function<std::vector<model::Parameter>()> params;
    std::function<Status()> update;
  };

  // `num_values`: the parameters' total size; `accumulate` >= 1; `comm`: the run's communicator
  // (kReplicated and kOwned; may be null for kOneProcess).
  StepAccumulator(Kind kind, int64_t num_values, int accumulate, dist::Communicator* comm,
                  Hooks hooks);

  // Starts a training pass of `num_batches` batches in all (every rank's; for kOwned the plan's);
  // -1 when not known ahead, which only kOneProcess allows. Drops what a pass that failed left.
  void BeginPass(int64_t num_batches);
  // This process's next batch, numbered `number` in the pass (kReplicated: rank r's k-th batch
  // is kW + r, checked), whose gradients are in the parameters: into the step, and the step ended
  // when this was its last batch. Errors: the collectives' and the update's.
  Status Add(int64_t number);
  // kOwned: this rank's part of the next plan batch, its gradients in the parameters weighted by
  // `weight` (has_part false: the rank has no labelled seed of it and adds nothing).
  Status AddWeighted(bool has_part, float weight);
  // Ends the pass: the rounds a kReplicated rank had no batch in, and the last, shorter step.
  Status EndPass();
  // Optimiser steps the current pass has taken.
  int64_t steps() const { return steps_; }

 private:
  // Writes the step's mean (of `batches` batches) into the parameters and updates.
  Status FinishStep(int64_t batches);
  // kReplicated: the next round, with this rank's batch (`has_batch`) or without.
  Status AddRound(bool has_batch);

  Kind kind_;
  int accumulate_;
  dist::Communicator* comm_;
  Hooks hooks_;
  GradientSum sum_;
  std::unique_ptr<GradientSum> round_;  // kReplicated, ranks > 0: the round's contribution
  int64_t num_batches_ = -1;            // this pass's (BeginPass)
  int64_t in_step_ = 0;                 // kOneProcess, kOwned: batches in the step so far
  int64_t rounds_ = 0;                  // kReplicated: rounds done in this pass
  int64_t steps_ = 0;
};

}  // namespace skiff::train
