#include "train/models/evaluate.h"

#include <ATen/core/grad_mode.h>
#include <torch/nn/module.h>

#include <algorithm>

#include "core/error.h"

namespace ferry::train {

EvalResult evaluate(Model& model, const Dataset& data, const EvalOptions& options) {
  FERRY_REQUIRE_OP(options.batch_size, >, 0, "evaluate: batch size");
  const std::int64_t n = options.limit > 0 ? std::min(options.limit, data.size()) : data.size();
  EvalResult result;
  if (n == 0) return result;
  at::NoGradGuard no_grad;
  // Batch norm uses its running statistics while evaluating; the mode is restored after.
  const bool training = model.module().is_training();
  model.module().eval();
  double loss_sum = 0;
  std::int64_t correct = 0;
  std::int64_t predictions = 0;
  for (std::int64_t begin = 0; begin < n; begin += options.batch_size) {
    const std::int64_t len = std::min(options.batch_size, n - begin);
    const at::Tensor x = data.images.narrow(0, begin, len);
    const at::Tensor y = data.labels.narrow(0, begin, len);
    const at::Tensor logits = model.forward(x);
    loss_sum += cross_entropy_of(logits, y, /*sum=*/true).item<double>();
    correct += logits.argmax(-1).eq(y).sum().item<std::int64_t>();
    predictions += predictions_in(y);
  }
  model.module().train(training);
  result.count = n;
  result.accuracy = static_cast<double>(correct) / static_cast<double>(predictions);
  result.mean_loss = loss_sum / static_cast<double>(predictions);
  return result;
}

}  // namespace ferry::train
