#include "moe/engine/generate.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/clock.h"
#include "core/error.h"

namespace ferry::moe {

GenerationResult generate(LanguageModel& model, const TokenBatch& prompts, const SamplingOptions& options,
                          const std::function<void()>& after_prefill) {
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
  if (after_prefill) after_prefill();
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
