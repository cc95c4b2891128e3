// A worker's training time: wall time since the loop started, less the time spent evaluating
// and writing checkpoints, which is not training (samples/s and the metrics' "t" use it).
#pragma once

#include "core/clock.h"

namespace ferry::train {

class TrainingClock {
 public:
  TrainingClock() : start_s_(now_s()) {}
  // Takes `seconds` (an evaluation, a checkpoint) out of the training time.
  void exclude(double seconds) { excluded_s_ += seconds; }
  double training_s() const { return now_s() - start_s_ - excluded_s_; }

 private:
  double start_s_;
  double excluded_s_ = 0;
};

}  // namespace ferry::train
