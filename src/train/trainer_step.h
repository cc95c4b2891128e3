// One training iteration of a worker: forward, loss, backward, gradient gather, then the
// strategy's step, or, when any gradient is NaN or Inf, its skip_step (every worker skips the
// iteration together, Strategy::skip_step), aborting after --max-bad-steps such iterations in a
// row: a diverged run ends with one clear error instead of spreading NaN into the weights.
#pragma once

#include <cstdint>

#include "train/data/dataset.h"
#include "train/flat_params.h"
#include "train/models/model.h"
#include "train/strategy.h"

namespace ferry::train {

struct TrainerStepOptions {
  int rank = 0;                       // this worker (named in warnings; the NaN injection is rank 0's)
  int max_bad_steps = 10;             // non-finite iterations in a row that end the run (--max-bad-steps)
  std::int64_t inject_nan_step = -1;  // testing aid (--inject-nan-at): rank 0's gradients are NaN from here
  std::int64_t inject_nan_count = 1;  // ... for this many iterations
};

class TrainerStep {
 public:
  // `model`, `params` (its flat parameters) and `strategy` belong to the training driver and
  // outlive this object.
  TrainerStep(const TrainerStepOptions& options, Model& model, FlatParams& params, Strategy& strategy);

  // Runs iteration `it` on `batch` and returns its loss (NaN or Inf when it was skipped).
  // Throws Error naming the iterations when max_bad_steps non-finite ones come in a row.
  double run(const Batch& batch, std::int64_t it);

  // Non-finite iterations in a row so far (part of a checkpoint, so a resumed run counts on).
  std::int64_t bad_in_row() const { return bad_in_row_; }
  void set_bad_in_row(std::int64_t n) { bad_in_row_ = n; }
  // Non-finite (skipped) iterations of this run.
  std::int64_t bad_steps() const { return bad_steps_; }

 private:
  // Counts a non-finite iteration; throws when it is one too many.
  void on_non_finite(std::int64_t it);

  TrainerStepOptions options_;
  Model& model_;
  FlatParams& params_;
  Strategy& strategy_;
  std::int64_t bad_in_row_ = 0;
  std::int64_t bad_steps_ = 0;
};

}  // namespace ferry::train
