// Test-set evaluation: accuracy and mean cross-entropy of a model on a data set (per item for
// image models; per predicted token for token models, whose perplexity is exp(mean_loss)).
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
  double accuracy = 0;   // fraction of predictions whose arg-max logit is the label, in [0, 1]
  double mean_loss = 0;  // mean cross-entropy over the predictions (nats)
  std::int64_t count = 0;  // items evaluated
};

// Runs `model` without autograd and in eval mode (batch norm's running statistics) over `data` in
// batches; the model's train/eval mode is restored after.
EvalResult evaluate(Model& model, const Dataset& data, const EvalOptions& options = {});

}  // namespace ferry::train
