#include "moe/trace/routing_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace ferry::moe {

RoutingStats routing_stats(const RoutingTrace& t) {
  RoutingStats s;
  const int L = t.num_layers, E = t.num_experts, K = std::max(1, t.top_k);
  s.tokens = static_cast<int>(t.tokens.size());
  s.random_precision = static_cast<double>(K) / E;
  if (t.tokens.empty() || E == 0) return s;
  for (int l = 0; l < L; ++l) {
    std::vector<double> count(E, 0);
    for (const auto& tok : t.tokens)
      for (int e : tok.experts[l]) count[e] += 1;
    const double mean = std::accumulate(count.begin(), count.end(), 0.0) / E;
    double var = 0, ent = 0;
    for (double c : count) {
      var += (c - mean) * (c - mean) / E;
      const double p = c / (mean * E);
      if (p > 0) ent -= p * std::log(p);
    }
    s.load_cv += std::sqrt(var) / mean / L;
    s.max_load_ratio += *std::max_element(count.begin(), count.end()) / mean / L;
    s.load_entropy += ent / std::log(static_cast<double>(E)) / L;
  }
  // Co-occurrence: table[l][a][b] = how often expert a at l and b at l+1 serve the same token.
  const std::size_t half = t.tokens.size() / 2;
  double hit = 0, total = 0, prev_hit = 0, prev_total = 0;
  for (int l = 0; l + 1 < L; ++l) {
    std::vector<std::vector<double>> table(E, std::vector<double>(E, 0));
    for (std::size_t i = 0; i < half; ++i)
      for (int a : t.tokens[i].experts[l])
        for (int b : t.tokens[i].experts[l + 1]) table[a][b] += 1;
    std::vector<int> order(E);
    for (std::size_t i = half; i < t.tokens.size(); ++i) {
      std::vector<double> score(E, 0);
      for (int a : t.tokens[i].experts[l])
        for (int b = 0; b < E; ++b) score[b] += table[a][b];
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return score[a] > score[b]; });
      const auto& actual = t.tokens[i].experts[l + 1];
      for (int k = 0; k < K; ++k) hit += std::count(actual.begin(), actual.end(), order[k]) > 0;
      total += K;
    }
  }
  for (std::size_t i = 1; i < t.tokens.size(); ++i) {
    if (t.tokens[i].sequence != t.tokens[i - 1].sequence) continue;
    for (int l = 0; l < L; ++l) {
      const auto& now = t.tokens[i].experts[l];
      for (int e : t.tokens[i - 1].experts[l]) prev_hit += std::count(now.begin(), now.end(), e) > 0;
      prev_total += K;
    }
  }
  s.next_layer_precision = total > 0 ? hit / total : 0;
  s.previous_token_precision = prev_total > 0 ? prev_hit / prev_total : 0;
  return s;
}

std::string format_routing_stats(const RoutingStats& s) {
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "load CV %.3f, max/mean %.2f, entropy %.3f; next-layer top-k precision %.3f (co-occurrence), "
                "previous token %.3f, random %.3f (%d tokens)",
                s.load_cv, s.max_load_ratio, s.load_entropy, s.next_layer_precision, s.previous_token_precision,
                s.random_precision, s.tokens);
  return buf;
}

std::vector<std::uint64_t> routing_counts(const RoutingTrace& trace, int num_layers, int num_experts) {
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(num_layers) * num_experts, 0);
  for (const auto& t : trace.tokens)
    for (int l = 0; l < std::min(num_layers, static_cast<int>(t.experts.size())); ++l)
      for (int e : t.experts[l])
        if (e >= 0 && e < num_experts) ++counts[static_cast<std::size_t>(l) * num_experts + e];
  return counts;
}

}  // namespace ferry::moe
