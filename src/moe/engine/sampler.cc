#include "moe/engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <unordered_map>

namespace ferry::moe {
namespace {

// The logits with the penalties applied (sampler.h), in `scratch`.
const float* penalize(const float* logits, int vocab, const SamplingOptions& o, std::span<const std::int32_t> history,
                      std::vector<float>& scratch) {
  scratch.assign(logits, logits + vocab);
  for (const auto& [tok, bias] : o.logit_bias)
    if (tok >= 0 && tok < vocab) scratch[static_cast<std::size_t>(tok)] += bias;
  const std::size_t n = o.penalty_last_n < 0 ? history.size()  // -1: the whole sequence (llama.cpp)
                                             : std::min(history.size(), static_cast<std::size_t>(o.penalty_last_n));
  std::unordered_map<std::int32_t, int> counts;
  for (std::size_t i = history.size() - n; i < history.size(); ++i)
    if (history[i] >= 0 && history[i] < vocab) ++counts[history[i]];
  for (const auto& [tok, count] : counts) {
    float& l = scratch[static_cast<std::size_t>(tok)];
    if (o.repeat_penalty != 1.0) l = l > 0 ? static_cast<float>(l / o.repeat_penalty) : static_cast<float>(l * o.repeat_penalty);
    l -= static_cast<float>(o.presence_penalty + o.frequency_penalty * count);
  }
  return scratch.data();
}

double uniform(std::uint64_t& rng_state, double hi) {
  std::mt19937_64 rng(rng_state);
  rng_state = rng();
  return std::uniform_real_distribution<double>(0, hi)(rng);
}

}  // namespace

int sample_token(const float* logits, int vocab, const SamplingOptions& o, std::uint64_t& rng_state,
                 std::span<const std::int32_t> history) {
  thread_local std::vector<float> scratch;
  if (o.penalized()) logits = penalize(logits, vocab, o, history, scratch);
  if (o.temperature <= 0) return static_cast<int>(std::max_element(logits, logits + vocab) - logits);
  const double mx = *std::max_element(logits, logits + vocab);
  // min-p in logit space: p_i >= min_p * p_max  <=>  l_i >= max + temperature * ln(min_p).
  const double floor_logit = o.min_p > 0 ? mx + o.temperature * std::log(o.min_p) : -INFINITY;
  const bool sorted = o.top_k > 0 || o.top_p < 1.0;
  if (!sorted) {  // one pass: weights exp((l - max) / T) of the tokens min-p keeps
    thread_local std::vector<double> p;
    p.resize(static_cast<std::size_t>(vocab));
    double sum = 0;
    for (int i = 0; i < vocab; ++i)
      sum += p[static_cast<std::size_t>(i)] = logits[i] >= floor_logit ? std::exp((logits[i] - mx) / o.temperature) : 0.0;
    double r = uniform(rng_state, sum);
    int last = 0;
    for (int i = 0; i < vocab; ++i) {
      if (p[static_cast<std::size_t>(i)] == 0) continue;
      last = i;
      if ((r -= p[static_cast<std::size_t>(i)]) <= 0) return i;
    }
    return last;
  }
  thread_local std::vector<int> idx;
  idx.resize(static_cast<std::size_t>(vocab));
  std::iota(idx.begin(), idx.end(), 0);
  const int k = o.top_k > 0 ? std::min(o.top_k, vocab) : vocab;
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  thread_local std::vector<double> p;
  p.resize(static_cast<std::size_t>(k));
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += p[static_cast<std::size_t>(i)] = std::exp((logits[idx[i]] - mx) / o.temperature);
  int n = k;
  if (o.top_p < 1.0) {
    double kept = 0;
    n = 0;
    while (n < k && kept < o.top_p * sum) kept += p[static_cast<std::size_t>(n++)];
    n = std::max(n, 1);
    sum = kept > 0 ? kept : p[0];
  }
  if (o.min_p > 0) {  // the candidates are sorted: cut where they fall under the floor
    int m = 1;
    while (m < n && logits[idx[m]] >= floor_logit) ++m;
    for (int i = m; i < n; ++i) sum -= p[static_cast<std::size_t>(i)];
    n = m;
  }
  double r = uniform(rng_state, sum);
  for (int i = 0; i < n; ++i)
    if ((r -= p[static_cast<std::size_t>(i)]) <= 0) return idx[i];
  return idx[n - 1];
}

}  // namespace ferry::moe
