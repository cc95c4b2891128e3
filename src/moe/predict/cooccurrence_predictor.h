// Co-occurrence table (the statistic MoE-Infinity's activation matrices and the trace README's
// "30 %" baseline use): for each layer l, lookahead d and experts a, b, how many tokens routed to a
// at l and to b at l+1+d. With A the experts active at l,
//   p(b at l+1+d) = sum_{a in A} pair[l][d][a][b] / sum_{a in A} count[l][a],
// i.e. the share of (token, current expert) pairs whose token later went to b. Unseen experts give
// the uniform prior top_k / E.
//
// Past the current token (cross-token): for the next token's layer l, the table of transitions
// from this token's routing at l and its neighbours l-1, l+1 (delta = -1, 0, +1) to the next
// token's routing at l,
//   p(b at l, token t+1) = sum_delta sum_{a in A_{l+delta}} next[l][delta][a][b] / sum ... count,
// pooled as above over the source layers; a source layer not routed yet enters by its predicted
// row, each expert weighted by its probability. So a predict() at layer l returns the rest of this
// token and then the next tokens' layers, as far as asked (rows d >= num_layers - 1 - l), which
// idle-link speculation needs (docs/moe.md).
#pragma once

#include <memory>
#include <vector>

#include "moe/predict/predictor.h"
#include "moe/trace/routing_trace.h"

namespace ferry::moe {

struct CooccurrenceOptions {
  int max_lookahead = 3;    // table depth: lookaheads beyond it are predicted from the deepest one
  bool learn_online = true; // add each observed token to the table (observe()); false: frozen after fit()
  bool cross_token = true;  // also predict the next token's layers (the transition table above)
};

class CooccurrencePredictor : public Predictor {
 public:
  CooccurrencePredictor(int num_layers, int num_experts, int top_k, CooccurrenceOptions options = {});
  std::string name() const override { return "cooccurrence"; }
  void predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) override;
  void observe(int layer, std::span<const int> experts, std::span<const float> weights) override;
  bool sees_past_token() const override { return options_.cross_token; }
  void reset_sequence() override {
    current_.assign(num_layers_, {});
    previous_.clear();
    last_layer_ = -1;
  }

  // Adds every token of `trace` (tokens [begin, end), all when end < 0) to the table.
  void fit(const RoutingTrace& trace, int begin = 0, int end = -1);
  // Adds one token's routing [layer][k]; `previous` (the token before it in the same sequence, or
  // null) feeds the cross-token table.
  void add_token(const std::vector<std::vector<int>>& experts, const std::vector<std::vector<int>>* previous = nullptr);
  double pair(int layer, int d, int a, int b) const { return pair_[index(layer, d, a) * E_ + b]; }
  double count(int layer, int a) const { return count_[static_cast<std::size_t>(layer) * E_ + a]; }
  // Tokens whose successor at `layer` went to b after routing to a at layer + delta - 1 (delta 0..2).
  double next(int layer, int delta, int a, int b) const {
    return next_[((static_cast<std::size_t>(layer) * 3 + delta) * E_ + a) * E_ + b];
  }
  double next_count(int layer, int delta, int a) const {
    return next_count_[(static_cast<std::size_t>(layer) * 3 + delta) * E_ + a];
  }

 private:
  std::size_t index(int layer, int d, int a) const {
    return (static_cast<std::size_t>(layer) * options_.max_lookahead + d) * E_ + a;
  }

  int num_layers_, E_, top_k_;
  CooccurrenceOptions options_;
  std::vector<double> pair_;   // [layer][d][a][b]
  std::vector<double> count_;  // [layer][a]
  std::vector<double> next_;        // [layer][delta][a][b], delta = source layer - layer + 1
  std::vector<double> next_count_;  // [layer][delta][a]: tokens with a successor
  std::vector<std::vector<int>> current_;   // the token being observed, [layer] -> experts
  std::vector<std::vector<int>> previous_;  // the last complete token of the sequence (empty: none)
  int last_layer_ = -1;
  // Row d of a predict() at in.layer that lies in a later token: from the token before it at
  // layers l-1..l+1, routed (hard) or predicted in the earlier rows of `out` (soft).
  std::vector<float> next_token_row(const PredictInput& in, int d, const std::vector<std::vector<float>>& out) const;
};

std::unique_ptr<Predictor> make_cooccurrence_predictor(int num_layers, int num_experts, int top_k,
                                                       CooccurrenceOptions options = {});

}  // namespace ferry::moe
