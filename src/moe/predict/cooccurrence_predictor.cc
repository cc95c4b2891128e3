#include "moe/predict/cooccurrence_predictor.h"

#include <algorithm>

#include "core/error.h"

namespace ferry::moe {

CooccurrencePredictor::CooccurrencePredictor(int num_layers, int num_experts, int top_k, CooccurrenceOptions options)
    : num_layers_(num_layers), E_(num_experts), top_k_(top_k), options_(options) {
  FERRY_REQUIRE(num_layers > 0 && num_experts > 0 && top_k > 0 && top_k <= num_experts,
                "co-occurrence predictor: invalid shape ", num_layers, " layers, ", num_experts, " experts, top-",
                top_k);
  FERRY_REQUIRE_OP(options_.max_lookahead, >=, 1, "co-occurrence predictor: max_lookahead");
  pair_.assign(static_cast<std::size_t>(num_layers) * options_.max_lookahead * E_ * E_, 0.0);
  count_.assign(static_cast<std::size_t>(num_layers) * E_, 0.0);
  if (options_.cross_token) {
    next_.assign(static_cast<std::size_t>(num_layers) * 3 * E_ * E_, 0.0);
    next_count_.assign(static_cast<std::size_t>(num_layers) * 3 * E_, 0.0);
  }
  current_.assign(num_layers_, {});
}

void CooccurrencePredictor::add_token(const std::vector<std::vector<int>>& experts,
                                      const std::vector<std::vector<int>>* previous) {
  const int L = std::min<int>(num_layers_, static_cast<int>(experts.size()));
  for (int l = 0; l < L; ++l)
    for (int a : experts[l]) {
      if (a < 0 || a >= E_) continue;
      count_[static_cast<std::size_t>(l) * E_ + a] += 1;
      for (int d = 0; d < options_.max_lookahead && l + 1 + d < L; ++d)
        for (int b : experts[l + 1 + d])
          if (b >= 0 && b < E_) pair_[index(l, d, a) * E_ + b] += 1;
    }
  if (!options_.cross_token || previous == nullptr) return;
  const int P = std::min<int>(num_layers_, static_cast<int>(previous->size()));
  for (int l = 0; l < L; ++l)
    for (int delta = 0; delta < 3; ++delta) {
      const int src = l + delta - 1;
      if (src < 0 || src >= P) continue;
      for (int a : (*previous)[src]) {
        if (a < 0 || a >= E_) continue;
        const std::size_t row = (static_cast<std::size_t>(l) * 3 + delta) * E_ + a;
        next_count_[row] += 1;
        for (int b : experts[l])
          if (b >= 0 && b < E_) next_[row * E_ + b] += 1;
      }
    }
}

void CooccurrencePredictor::fit(const RoutingTrace& trace, int begin, int end) {
  FERRY_REQUIRE(trace.num_layers == num_layers_, "co-occurrence fit: trace '", trace.path, "' has ", trace.num_layers,
                " layers, the predictor ", num_layers_);
  if (end < 0 || end > static_cast<int>(trace.tokens.size())) end = static_cast<int>(trace.tokens.size());
  for (int i = std::max(0, begin); i < end; ++i) {
    const bool follows = i > std::max(0, begin) && trace.tokens[i - 1].sequence == trace.tokens[i].sequence;
    add_token(trace.tokens[i].experts, follows ? &trace.tokens[i - 1].experts : nullptr);
  }
}

std::vector<float> CooccurrencePredictor::next_token_row(const PredictInput& in, int d,
                                                         const std::vector<std::vector<float>>& out) const {
  const int t = in.layer + 1 + d;  // layers from the start of the current token
  const int l = t % num_layers_, k = t / num_layers_;
  std::vector<float> p(E_, static_cast<float>(top_k_) / E_);
  double denom = 0;
  std::vector<double> num(E_, 0.0);
  // After the last layer the token just routed is previous_ (observe() moved it there).
  const auto& routed = last_layer_ < 0 && !previous_.empty() ? previous_ : current_;
  for (int delta = 0; delta < 3; ++delta) {
    const int s = l + delta - 1;
    if (s < 0 || s >= num_layers_) continue;
    const int source = (k - 1) * num_layers_ + s;  // the token before the target, layer s
    if (source <= in.layer) {                       // routed already: its experts
      const std::span<const int> a_set = s == in.layer ? in.experts_now : std::span<const int>(routed[s]);
      for (int a : a_set)
        if (a >= 0 && a < E_) {
          denom += next_count(l, delta, a);
          for (int b = 0; b < E_; ++b) num[b] += next(l, delta, a, b);
        }
    } else {  // predicted: its row, each expert weighted by its probability
      const auto& row = out[static_cast<std::size_t>(source - in.layer - 1)];
      for (int a = 0; a < E_; ++a) {
        if (row[a] <= 0) continue;
        denom += row[a] * next_count(l, delta, a);
        for (int b = 0; b < E_; ++b) num[b] += row[a] * next(l, delta, a, b);
      }
    }
  }
  if (denom > 0)
    for (int b = 0; b < E_; ++b) p[b] = static_cast<float>(num[b] / denom);
  return p;
}

void CooccurrencePredictor::predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) {
  out.clear();
  const float prior = static_cast<float>(top_k_) / E_;
  for (int d = 0; d < lookahead; ++d) {
    if (in.layer + 1 + d >= num_layers_) {  // a later token's layer
      if (!options_.cross_token) break;
      out.push_back(next_token_row(in, d, out));
      continue;
    }
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
      // Chain through layer src (already predicted at d - dd - 1), each expert weighted by its
      // predicted probability: p(b) = sum_a p(a) pair[a][b] / sum_a p(a) count[a].
      const auto& prev = out[src - in.layer - 1];
      for (int a = 0; a < E_; ++a) {
        if (prev[a] <= 0) continue;
        denom += prev[a] * count(src, a);
        for (int b = 0; b < E_; ++b) num[b] += prev[a] * pair(src, dd, a, b);
      }
    }
    if (denom > 0)
      for (int b = 0; b < E_; ++b) p[b] = static_cast<float>(num[b] / denom);
    out.push_back(std::move(p));
  }
}

// The current token is kept in every mode (the cross-token rows read it); only learning adds it.
void CooccurrencePredictor::observe(int layer, std::span<const int> experts, std::span<const float>) {
  if (layer < 0 || layer >= num_layers_) return;
  if (layer <= last_layer_) reset_sequence();  // a token that skipped its last layers: drop it
  current_[layer].assign(experts.begin(), experts.end());
  last_layer_ = layer;
  if (layer == num_layers_ - 1) {
    if (options_.learn_online) add_token(current_, previous_.empty() ? nullptr : &previous_);
    previous_.swap(current_);
    current_.assign(num_layers_, {});
    last_layer_ = -1;
  }
}

std::unique_ptr<Predictor> make_cooccurrence_predictor(int num_layers, int num_experts, int top_k,
                                                       CooccurrenceOptions options) {
  return std::make_unique<CooccurrencePredictor>(num_layers, num_experts, top_k, options);
}

}  // namespace ferry::moe
