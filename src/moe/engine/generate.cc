#include "moe/engine/generate.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/clock.h"
#include "core/error.h"

namespace ferry::moe {

// Temperature, then top-k, then top-p (Holtzman et al. 2020, "The Curious Case of Neural Text
// Degeneration"): the smallest set of the most likely tokens whose probability reaches top_p.
int sample_token(const float* logits, int vocab, const SamplingOptions& options, std::uint64_t& rng_state) {
  if (options.temperature <= 0) return static_cast<int>(std::max_element(logits, logits + vocab) - logits);
  std::vector<int> idx(vocab);
  std::iota(idx.begin(), idx.end(), 0);
  int k = options.top_k > 0 ? std::min(options.top_k, vocab) : vocab;
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  std::vector<double> p(k);
  const double mx = logits[idx[0]];
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += p[i] = std::exp((logits[idx[i]] - mx) / options.temperature);
  if (options.top_p < 1.0) {
    double kept = 0;
    int n = 0;
    while (n < k && kept < options.top_p * sum) kept += p[n++];
    k = std::max(n, 1);
    sum = kept > 0 ? kept : p[0];
  }
  std::mt19937_64 rng(rng_state);
  rng_state = rng();
  double r = std::uniform_real_distribution<double>(0, sum)(rng);
  for (int i = 0; i < k; ++i)
    if ((r -= p[i]) <= 0) return idx[i];
  return idx[k - 1];
}

GenerationResult generate(LanguageModel& model, const TokenBatch& prompts, const SamplingOptions& options) {
  FERRY_REQUIRE_GE(options.max_new_tokens, 1, "--tokens");
  const int V = model.config().vocab_size;
  const std::size_t B = prompts.size();
  GenerationResult r;
  r.new_tokens.assign(B, {});
  std::uint64_t rng = options.seed;
  model.reset();
  double t0 = now_s();
  auto logits = model.forward(prompts);
  TokenBatch step(B, std::vector<std::int32_t>(1));
  for (std::size_t b = 0; b < B; ++b) {
    step[b][0] = sample_token(logits.data() + b * V, V, options, rng);
    r.new_tokens[b].push_back(step[b][0]);
  }
  r.ttft_s = now_s() - t0;
  t0 = now_s();
  for (int i = 1; i < options.max_new_tokens; ++i) {
    logits = model.forward(step);
    for (std::size_t b = 0; b < B; ++b) {
      step[b][0] = sample_token(logits.data() + b * V, V, options, rng);
      r.new_tokens[b].push_back(step[b][0]);
    }
    ++r.decode_steps;
  }
  r.decode_s = now_s() - t0;
  return r;
}

}  // namespace ferry::moe
