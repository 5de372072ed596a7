// CheckSameScores: two training runs that must agree bit for bit (same seeds, another engine,
// thread count or budget) scored alike, epoch by epoch.
#pragma once

#include <doctest/doctest.h>

#include "skiff/train/trainer.h"

namespace skiff::testing {

enum class ValidLoss {
  kExact,
  // Equal to a relative 1e-6: the two runs split the validation nodes into other batches, and
  // each batch's mean loss is a float (measured: 4e-8 apart). The accuracies, counts of correct
  // predictions, are still exact.
  kBatchedOtherwise,
};

// Training loss and accuracy, validation accuracy and loss, test accuracy, and the best epoch.
inline void CheckSameScores(const train::TrainSummary& a, const train::TrainSummary& b,
                            ValidLoss valid_loss = ValidLoss::kExact) {
  REQUIRE(a.epochs.size() == b.epochs.size());
  for (size_t e = 0; e < a.epochs.size(); ++e) {
    CAPTURE(e);
    CHECK(a.epochs[e].loss == b.epochs[e].loss);
    CHECK(a.epochs[e].train_acc == b.epochs[e].train_acc);
    CHECK(a.epochs[e].valid_acc == b.epochs[e].valid_acc);
    if (valid_loss == ValidLoss::kExact) {
      CHECK(a.epochs[e].valid_loss == b.epochs[e].valid_loss);
    } else {
      CHECK(a.epochs[e].valid_loss == doctest::Approx(b.epochs[e].valid_loss).epsilon(1e-6));
    }
    CHECK(a.epochs[e].test_acc == b.epochs[e].test_acc);
  }
  CHECK(a.best_epoch == b.best_epoch);
}

}  // namespace skiff::testing
