// LLaPor (layer-lookahead predictor of routing) at run time: wraps an LlaporModel (see
// llapor_model.h) behind the Predictor interface.
//
// Hidden mode reads PredictInput::hidden: the router input of the current layer when
// router_input is set (traces), else the residual stream, normalised here with the layer's
// ffn_norm from the context's routers. With several tokens in flight an expert's probability is
// 1 - prod_t (1 - p_t) (at least one token activates it). With routing features, the layer's gate
// weights come from observe(layer, ..) when one token is in flight, else from the router.
// History mode reads what observe() reported: call observe(layer, ..) before predict(layer); a
// layer not yet observed falls back to PredictInput::experts_now with equal weights.
// Lookaheads past the trained D are not predicted (out has at most D rows).
#pragma once

#include <memory>
#include <string>

#include "moe/predict/llapor_model.h"
#include "moe/predict/predictor.h"
#include "moe/predict/predictor_registry.h"

namespace ferry::moe {

class LlaporPredictor : public Predictor {
 public:
  LlaporPredictor(LlaporModel model, const PredictorContext& ctx);
  std::string name() const override { return "llapor"; }
  void predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) override;
  void observe(int layer, std::span<const int> experts, std::span<const float> weights) override;
  void reset_sequence() override;
  const LlaporModel& model() const { return model_; }

 private:
  void finish_token();

  LlaporModel model_;
  PredictorContext ctx_;  // routers: owned by the engine, outlive the predictor
  std::vector<float> current_;                 // [layer x E] gate weights of the token being observed
  std::vector<std::vector<float>> previous_;   // the H tokens before, most recent first
  int last_layer_ = -1;
  std::vector<float> features_, probs_, x_, scratch_;
};

// Loads DIR (llapor.json + llapor.safetensors); checks the model against the context's shape
// (layers, experts, hidden size) when the context gives one.
std::unique_ptr<Predictor> load_llapor_predictor(const std::string& dir, const PredictorContext& ctx);

}  // namespace ferry::moe
