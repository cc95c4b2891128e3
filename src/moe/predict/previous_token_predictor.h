// Previous-token predictor: consecutive tokens of a sequence tend to reuse experts (the trace
// README's "40 %" baseline), so the experts of layer l+1+d are predicted to be those the previous
// token used there: p = 1 for them, 0 for the others; before the first complete token of a
// sequence, the uniform prior top_k / E.
#pragma once

#include <memory>
#include <vector>

#include "moe/predict/predictor.h"

namespace ferry::moe {

class PreviousTokenPredictor : public Predictor {
 public:
  PreviousTokenPredictor(int num_layers, int num_experts, int top_k);
  std::string name() const override { return "previous-token"; }
  void predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) override;
  // A token is complete when its last layer is observed (or when a layer repeats: a new token).
  void observe(int layer, std::span<const int> experts, std::span<const float> weights) override;
  void reset_sequence() override;

 private:
  int num_layers_, E_, top_k_;
  std::vector<std::vector<int>> previous_, current_;  // [layer] -> experts
  bool have_previous_ = false;
  int last_layer_ = -1;
};

std::unique_ptr<Predictor> make_previous_token_predictor(int num_layers, int num_experts, int top_k);

}  // namespace ferry::moe
