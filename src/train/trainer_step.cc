#include "train/trainer_step.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/finite.h"

namespace ferry::train {

TrainerStep::TrainerStep(const TrainerStepOptions& options, Model& model, FlatParams& params, Strategy& strategy)
    : options_(options), model_(model), params_(params), strategy_(strategy) {}

double TrainerStep::run(const Batch& b, std::int64_t it) {
  params_.zero_grads();
  auto loss = cross_entropy_of(model_.forward(b.images), b.labels);
  if (options_.rank == 0 && options_.inject_nan_step >= 0 && it >= options_.inject_nan_step &&
      it < options_.inject_nan_step + options_.inject_nan_count)
    loss = loss * NAN;  // testing aid (--inject-nan-at): every gradient of this step is NaN
  loss.backward();
  params_.gather_grads();
  if (all_finite(params_.grads())) {
    bad_in_row_ = 0;
    strategy_.step(params_, it);
  } else {
    on_non_finite(it);
    strategy_.skip_step(params_, it);  // the strategy skips the step for everybody
  }
  return loss.item<double>();
}

void TrainerStep::on_non_finite(std::int64_t it) {
  ++bad_in_row_;
  ++bad_steps_;
  if (bad_in_row_ >= options_.max_bad_steps)
    FERRY_THROW(Error, bad_in_row_, " non-finite gradients (NaN or Inf) in a row, iterations ", it - bad_in_row_ + 1,
                "..", it, " (--max-bad-steps ", options_.max_bad_steps,
                "): training diverged; lower --lr or check the data");
  std::fprintf(stderr,
               "ferry train: warning: rank %d iteration %lld: non-finite gradient (NaN or Inf), step skipped "
               "(%lld in a row, abort at --max-bad-steps %d)\n",
               options_.rank, static_cast<long long>(it), static_cast<long long>(bad_in_row_),
               options_.max_bad_steps);
}

}  // namespace ferry::train
