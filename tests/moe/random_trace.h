// Random routing traces for the simulator and scheduler tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "moe/trace/routing_trace.h"

namespace ferry::moe::testing {

// Skewed, temporally correlated routing: each layer has a fixed skewed expert popularity, and a
// token reuses the previous token's first expert of a layer with probability 0.4. `sequences` x
// `tokens` decode tokens, uniform gate weights.
inline RoutingTrace random_trace(std::uint32_t seed, int layers, int experts, int top_k, int tokens, int sequences) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  RoutingTrace t;
  t.model = "random";
  t.path = "random-trace";
  t.num_layers = layers;
  t.num_experts = experts;
  t.top_k = top_k;
  std::vector<std::vector<double>> weight(t.num_layers, std::vector<double>(t.num_experts));
  for (auto& w : weight)
    for (auto& x : w) x = std::pow(u(rng), 3) + 0.02;
  std::vector<std::vector<int>> previous(t.num_layers);
  for (int s = 0; s < sequences; ++s)
    for (int i = 0; i < tokens; ++i) {
      TraceToken tok;
      tok.sequence = s;
      tok.position = i;
      for (int l = 0; l < t.num_layers; ++l) {
        std::vector<int> pick;
        if (!previous[l].empty() && u(rng) < 0.4) pick.push_back(previous[l][0]);
        while (static_cast<int>(pick.size()) < t.top_k) {
          std::discrete_distribution<int> d(weight[l].begin(), weight[l].end());
          const int e = d(rng);
          if (std::find(pick.begin(), pick.end(), e) == pick.end()) pick.push_back(e);
        }
        previous[l] = pick;
        tok.experts.push_back(pick);
        tok.weights.push_back(std::vector<float>(pick.size(), 1.f / static_cast<float>(pick.size())));
      }
      t.tokens.push_back(tok);
    }
  return t;
}

}  // namespace ferry::moe::testing
