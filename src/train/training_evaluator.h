// Test accuracy during training (--eval-each-epoch, --eval-every): when it is due, and taking it.
// Every worker evaluates, and takes the time out of its training time: when rank 0 alone
// evaluated, the other workers of a synchronous algorithm waited for it inside their training
// time, which charged the evaluation to them (and not to compute-only's workers, which never
// wait). Only rank 0 records the accuracy (it alone has the metrics file).
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "core/metrics.h"
#include "train/data/dataset.h"
#include "train/flat_params.h"
#include "train/models/model.h"
#include "train/stall_watchdog.h"
#include "train/strategy.h"
#include "train/training_clock.h"

namespace ferry::train {

struct EvalSchedule {
  bool each_epoch = false;  // after every epoch (--eval-each-epoch)
  std::int64_t every = 0;   // every N iterations (--eval-every); 0: off
};

// Whether iteration `it` (0-based, just done) ends with an --eval-every evaluation. `loop_ends`:
// it is the last of its epoch or of the run, where --eval-each-epoch evaluates instead (once).
bool eval_every_due(const EvalSchedule& schedule, std::int64_t it, bool loop_ends);

class TrainingEvaluator {
 public:
  // Every reference belongs to the training driver and outlives this object; `metrics` is null
  // on workers that record nothing.
  TrainingEvaluator(Model& model, const Dataset& test_set, Strategy& strategy, FlatParams& params,
                    StallWatchdog& watchdog, TrainingClock& clock, JsonlWriter* metrics);

  // Completes the strategy's outstanding work (so the weights are the current ones), evaluates,
  // and writes `record` plus "t" (training seconds) and "test_acc" to the metrics.
  void record(nlohmann::json record, std::int64_t done_steps);

 private:
  Model& model_;
  const Dataset& test_set_;
  Strategy& strategy_;
  FlatParams& params_;
  StallWatchdog& watchdog_;
  TrainingClock& clock_;
  JsonlWriter* metrics_;
};

}  // namespace ferry::train
