#include "moe/predict/previous_token_predictor.h"

#include "core/error.h"

namespace ferry::moe {

PreviousTokenPredictor::PreviousTokenPredictor(int num_layers, int num_experts, int top_k)
    : num_layers_(num_layers), E_(num_experts), top_k_(top_k) {
  FERRY_REQUIRE(num_layers > 0 && num_experts > 0 && top_k > 0 && top_k <= num_experts,
                "previous-token predictor: invalid shape ", num_layers, " layers, ", num_experts, " experts, top-",
                top_k);
  reset_sequence();
}

void PreviousTokenPredictor::reset_sequence() {
  previous_.assign(num_layers_, {});
  current_.assign(num_layers_, {});
  have_previous_ = false;
  last_layer_ = -1;
}

void PreviousTokenPredictor::predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) {
  out.clear();
  for (int d = 0; d < lookahead && in.layer + 1 + d < num_layers_; ++d) {
    const int l = in.layer + 1 + d;
    if (!have_previous_) {
      out.emplace_back(E_, static_cast<float>(top_k_) / E_);
      continue;
    }
    std::vector<float> p(E_, 0.f);
    for (int e : previous_[l])
      if (e >= 0 && e < E_) p[e] = 1.f;
    out.push_back(std::move(p));
  }
}

void PreviousTokenPredictor::observe(int layer, std::span<const int> experts, std::span<const float>) {
  if (layer < 0 || layer >= num_layers_) return;
  if (layer <= last_layer_) {  // a new token began before the last layer was seen
    previous_.swap(current_);
    have_previous_ = true;
    current_.assign(num_layers_, {});
  }
  current_[layer].assign(experts.begin(), experts.end());
  last_layer_ = layer;
  if (layer == num_layers_ - 1) {
    previous_.swap(current_);
    have_previous_ = true;
    current_.assign(num_layers_, {});
    last_layer_ = -1;
  }
}

std::unique_ptr<Predictor> make_previous_token_predictor(int num_layers, int num_experts, int top_k) {
  return std::make_unique<PreviousTokenPredictor>(num_layers, num_experts, top_k);
}

}  // namespace ferry::moe
