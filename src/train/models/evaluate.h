// Test-set evaluation: accuracy and mean cross-entropy of a model on a data set.
#pragma once

#include <cstdint>

#include "train/data/dataset.h"
#include "train/models/model.h"

namespace ferry::train {

struct EvalOptions {
  std::int64_t batch_size = 1000;  // items per forward pass (bounds memory, not the result)
  std::int64_t limit = 0;          // evaluate only the first `limit` items; 0: all
};

struct EvalResult {
  double accuracy = 0;   // fraction of items whose arg-max logit is the label, in [0, 1]
  double mean_loss = 0;  // mean cross-entropy over the items
  std::int64_t count = 0;  // items evaluated
};

// Runs `model` without autograd over `data` in batches. The model's train/eval mode is left as
// it was (none of the built-in models has dropout or batch norm).
EvalResult evaluate(Model& model, const Dataset& data, const EvalOptions& options = {});

}  // namespace ferry::train
