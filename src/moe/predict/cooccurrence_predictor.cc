#include "moe/predict/cooccurrence_predictor.h"

#include <algorithm>

#include "core/error.h"

namespace ferry::moe {

CooccurrencePredictor::CooccurrencePredictor(int num_layers, int num_experts, int top_k, CooccurrenceOptions options)
    : num_layers_(num_layers), E_(num_experts), top_k_(top_k), options_(options) {
  FERRY_REQUIRE(num_layers > 0 && num_experts > 0 && top_k > 0 && top_k <= num_experts,
                "co-occurrence predictor: invalid shape ", num_layers, " layers, ", num_experts, " experts, top-",
                top_k);
  FERRY_REQUIRE(options_.max_lookahead >= 1, "co-occurrence predictor: max_lookahead must be >= 1, got ",
                options_.max_lookahead);
  pair_.assign(static_cast<std::size_t>(num_layers) * options_.max_lookahead * E_ * E_, 0.0);
  count_.assign(static_cast<std::size_t>(num_layers) * E_, 0.0);
  current_.assign(num_layers_, {});
}

void CooccurrencePredictor::add_token(const std::vector<std::vector<int>>& experts) {
  const int L = std::min<int>(num_layers_, static_cast<int>(experts.size()));
  for (int l = 0; l < L; ++l)
    for (int a : experts[l]) {
      if (a < 0 || a >= E_) continue;
      count_[static_cast<std::size_t>(l) * E_ + a] += 1;
      for (int d = 0; d < options_.max_lookahead && l + 1 + d < L; ++d)
        for (int b : experts[l + 1 + d])
          if (b >= 0 && b < E_) pair_[index(l, d, a) * E_ + b] += 1;
    }
}

void CooccurrencePredictor::fit(const RoutingTrace& trace, int begin, int end) {
  FERRY_REQUIRE(trace.num_layers == num_layers_, "co-occurrence fit: trace '", trace.path, "' has ", trace.num_layers,
                " layers, the predictor ", num_layers_);
  if (end < 0 || end > static_cast<int>(trace.tokens.size())) end = static_cast<int>(trace.tokens.size());
  for (int i = std::max(0, begin); i < end; ++i) add_token(trace.tokens[i].experts);
}

void CooccurrencePredictor::predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) {
  out.clear();
  const float prior = static_cast<float>(top_k_) / E_;
  for (int d = 0; d < lookahead && in.layer + 1 + d < num_layers_; ++d) {
    const int dd = std::min(d, options_.max_lookahead - 1);
    const int src = in.layer + d - dd;  // beyond the table depth: the deepest entry of a later layer
    std::vector<float> p(E_, prior);
    double denom = 0;
    std::vector<double> num(E_, 0.0);
    if (src == in.layer) {
      for (int a : in.experts_now)
        if (a >= 0 && a < E_) {
          denom += count(src, a);
          for (int b = 0; b < E_; ++b) num[b] += pair(src, dd, a, b);
        }
    } else {
      // Chain through the most likely experts of layer src (already predicted at d - dd - 1).
      const auto& prev = out[src - in.layer - 1];
      std::vector<int> order(E_);
      for (int e = 0; e < E_; ++e) order[e] = e;
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return prev[a] > prev[b]; });
      for (int k = 0; k < top_k_; ++k) {
        denom += count(src, order[k]);
        for (int b = 0; b < E_; ++b) num[b] += pair(src, dd, order[k], b);
      }
    }
    if (denom > 0)
      for (int b = 0; b < E_; ++b) p[b] = static_cast<float>(num[b] / denom);
    out.push_back(std::move(p));
  }
}

void CooccurrencePredictor::observe(int layer, std::span<const int> experts, std::span<const float>) {
  if (!options_.learn_online || layer < 0 || layer >= num_layers_) return;
  if (layer <= last_layer_) reset_sequence();  // a token that skipped its last layers: drop it
  current_[layer].assign(experts.begin(), experts.end());
  last_layer_ = layer;
  if (layer == num_layers_ - 1) {
    add_token(current_);
    current_.assign(num_layers_, {});
    last_layer_ = -1;
  }
}

std::unique_ptr<Predictor> make_cooccurrence_predictor(int num_layers, int num_experts, int top_k,
                                                       CooccurrenceOptions options) {
  return std::make_unique<CooccurrencePredictor>(num_layers, num_experts, top_k, options);
}

}  // namespace ferry::moe
