// The oracle predictor: reads the recorded future (FutureRouting) instead of guessing, so that a
// policy fed by it is bounded only by its schedule. It follows the position from observe(): a
// layer not greater than the last observed one starts a new step.
#pragma once

#include <memory>

#include "moe/predict/predictor.h"
#include "moe/trace/future_routing.h"

namespace ferry::moe {

class OraclePredictor : public Predictor {
 public:
  // `future` is owned by the caller (simulator, replay) and outlives the predictor. With `wrap`, the
  // layers past the last of a step are the first ones of the next step (out then has `lookahead`
  // rows); without, they are omitted as the Predictor interface says.
  OraclePredictor(const FutureRouting* future, bool wrap = false) : future_(future), wrap_(wrap) {}
  std::string name() const override { return "oracle"; }
  void predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) override;
  void observe(int layer, std::span<const int>, std::span<const float>) override;
  bool sees_past_token() const override { return wrap_; }
  void reset_sequence() override {}
  // The position of the layer last observed (step * layers + layer); -1 before the first.
  std::int64_t position() const { return position_; }

 private:
  const FutureRouting* future_;  // see the constructor
  bool wrap_;
  std::int64_t position_ = -1;
  int last_layer_ = -1;
};

}  // namespace ferry::moe
