// Co-occurrence table (the statistic MoE-Infinity's activation matrices and the trace README's
// "30 %" baseline use): for each layer l, lookahead d and experts a, b, how many tokens routed to a
// at l and to b at l+1+d. With A the experts active at l,
//   p(b at l+1+d) = sum_{a in A} pair[l][d][a][b] / sum_{a in A} count[l][a],
// i.e. the share of (token, current expert) pairs whose token later went to b. Unseen experts give
// the uniform prior top_k / E.
#pragma once

#include <memory>
#include <vector>

#include "moe/predict/predictor.h"
#include "moe/trace/routing_trace.h"

namespace ferry::moe {

struct CooccurrenceOptions {
  int max_lookahead = 3;    // table depth: lookaheads beyond it are predicted from the deepest one
  bool learn_online = true; // add each observed token to the table (observe()); false: frozen after fit()
};

class CooccurrencePredictor : public Predictor {
 public:
  CooccurrencePredictor(int num_layers, int num_experts, int top_k, CooccurrenceOptions options = {});
  std::string name() const override { return "cooccurrence"; }
  void predict(const PredictInput& in, int lookahead, std::vector<std::vector<float>>& out) override;
  void observe(int layer, std::span<const int> experts, std::span<const float> weights) override;
  void reset_sequence() override { current_.assign(num_layers_, {}); last_layer_ = -1; }

  // Adds every token of `trace` (tokens [begin, end), all when end < 0) to the table.
  void fit(const RoutingTrace& trace, int begin = 0, int end = -1);
  // Adds one token's routing [layer][k].
  void add_token(const std::vector<std::vector<int>>& experts);
  double pair(int layer, int d, int a, int b) const { return pair_[index(layer, d, a) * E_ + b]; }
  double count(int layer, int a) const { return count_[static_cast<std::size_t>(layer) * E_ + a]; }

 private:
  std::size_t index(int layer, int d, int a) const {
    return (static_cast<std::size_t>(layer) * options_.max_lookahead + d) * E_ + a;
  }

  int num_layers_, E_, top_k_;
  CooccurrenceOptions options_;
  std::vector<double> pair_;   // [layer][d][a][b]
  std::vector<double> count_;  // [layer][a]
  std::vector<std::vector<int>> current_;  // the token being observed, [layer] -> experts
  int last_layer_ = -1;
};

std::unique_ptr<Predictor> make_cooccurrence_predictor(int num_layers, int num_experts, int top_k,
                                                       CooccurrenceOptions options = {});

}  // namespace ferry::moe
