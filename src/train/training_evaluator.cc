#include "train/training_evaluator.h"

#include "core/clock.h"
#include "train/models/evaluate.h"

namespace ferry::train {

bool eval_every_due(const EvalSchedule& s, std::int64_t it, bool loop_ends) {
  return s.every > 0 && (it + 1) % s.every == 0 && !(loop_ends && s.each_epoch);
}

TrainingEvaluator::TrainingEvaluator(Model& model, const Dataset& test_set, Strategy& strategy, FlatParams& params,
                                     StallWatchdog& watchdog, TrainingClock& clock, JsonlWriter* metrics)
    : model_(model),
      test_set_(test_set),
      strategy_(strategy),
      params_(params),
      watchdog_(watchdog),
      clock_(clock),
      metrics_(metrics) {}

void TrainingEvaluator::record(nlohmann::json record, std::int64_t done_steps) {
  Stopwatch sw;
  strategy_.complete(params_);
  EvalResult r = evaluate(model_, test_set_);
  clock_.exclude(sw.elapsed_s());
  watchdog_.progress(done_steps);
  record["t"] = clock_.training_s();
  record["test_acc"] = r.accuracy;
  record["test_loss"] = r.mean_loss;  // token models: perplexity = exp(test_loss)
  if (metrics_) metrics_->write(record);
}

}  // namespace ferry::train
