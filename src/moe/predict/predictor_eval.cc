#include "moe/predict/predictor_eval.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "core/error.h"

namespace ferry::moe {
namespace {

double ratio(double a, double b) { return b > 0 ? a / b : 0; }
double sum_over_layers(const std::vector<double>& v, int L, int D, int d) {
  double s = 0;
  for (int l = 0; l < L; ++l) s += v[static_cast<std::size_t>(l) * D + d];
  return s;
}

}  // namespace

double PredictorScore::precision(int layer, int d) const {
  const auto i = static_cast<std::size_t>(layer) * lookahead + d;
  return ratio(hits[i], predicted[i]);
}
double PredictorScore::recall(int layer, int d) const {
  const auto i = static_cast<std::size_t>(layer) * lookahead + d;
  return ratio(hits[i], actual[i]);
}
double PredictorScore::precision(int d) const {
  return ratio(sum_over_layers(hits, num_layers, lookahead, d), sum_over_layers(predicted, num_layers, lookahead, d));
}
double PredictorScore::recall(int d) const {
  return ratio(sum_over_layers(hits, num_layers, lookahead, d), sum_over_layers(actual, num_layers, lookahead, d));
}

PredictorScore evaluate_predictor(Predictor& p, const PredictorTrace& t, const std::vector<int>& sequences,
                                  int lookahead, int k) {
  FERRY_REQUIRE_OP(lookahead, >=, 1, "lookahead");
  const RoutingTrace& tr = t.trace;
  const int L = tr.num_layers, E = tr.num_experts, D = lookahead;
  if (k <= 0) k = tr.top_k;
  FERRY_REQUIRE_IN(k, 1, E, "[]", "k");
  PredictorScore s;
  s.predictor = p.name();
  s.num_layers = L;
  s.lookahead = D;
  s.k = k;
  s.hits.assign(static_cast<std::size_t>(L) * D, 0);
  s.predicted = s.actual = s.hits;
  std::vector<std::vector<float>> out;
  std::vector<int> order(E);
  int current_seq = -1;
  using clock = std::chrono::steady_clock;
  for (std::size_t i = 0; i < tr.tokens.size(); ++i) {
    const TraceToken& tok = tr.tokens[i];
    if (!sequences.empty() && std::find(sequences.begin(), sequences.end(), tok.sequence) == sequences.end()) continue;
    if (tok.sequence != current_seq) {
      p.reset_sequence();
      current_seq = tok.sequence;
    }
    ++s.tokens;
    // Rows past the last layer are the next token's (predictors that see past the token).
    const TraceToken* next = i + 1 < tr.tokens.size() && tr.tokens[i + 1].sequence == tok.sequence ? &tr.tokens[i + 1] : nullptr;
    for (int l = 0; l < L; ++l) {
      static const std::vector<float> kNoWeights;
      const auto& w = l < static_cast<int>(tok.weights.size()) ? tok.weights[l] : kNoWeights;
      auto t0 = clock::now();
      p.observe(l, tok.experts[l], w);
      if (l + 1 >= L + (next ? L : 0)) {
        s.predict_seconds += std::chrono::duration<double>(clock::now() - t0).count();
        continue;
      }
      PredictInput in;
      in.layer = l;
      in.hidden = t.has_hidden() ? t.hidden_at(i, l) : nullptr;
      in.num_tokens = in.hidden ? 1 : 0;
      in.hidden_size = t.hidden_size;
      in.experts_now = tok.experts[l];
      in.router_input = true;
      p.predict(in, D, out);
      s.predict_seconds += std::chrono::duration<double>(clock::now() - t0).count();
      for (int d = 0; d < D && l + 1 + d < L + (next ? L : 0); ++d) {
        const int at = l + 1 + d;
        const auto& actual = at < L ? tok.experts[at] : next->experts[at - L];
        if (at >= L && d >= static_cast<int>(out.size())) continue;  // no row past the token: not scored there
        const auto idx = static_cast<std::size_t>(l) * D + d;
        s.predicted[idx] += k;
        s.actual[idx] += static_cast<double>(actual.size());
        if (d >= static_cast<int>(out.size()) || static_cast<int>(out[d].size()) < E) continue;
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return out[d][a] > out[d][b]; });
        for (int j = 0; j < k; ++j) s.hits[idx] += std::count(actual.begin(), actual.end(), order[j]) > 0;
      }
    }
  }
  return s;
}

}  // namespace ferry::moe
