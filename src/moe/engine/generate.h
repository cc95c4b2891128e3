// Batched generation over any LanguageModel, with the timings the benchmarks report.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "moe/engine/sampler.h"
#include "moe/model/language_model.h"

namespace ferry::moe {

struct GenerationResult {
  TokenBatch new_tokens;      // [B][max_new_tokens]
  double ttft_s = 0;          // prefill: prompt in, first token out
  double decode_s = 0;        // the remaining steps
  int decode_steps = 0;       // max_new_tokens - 1
  double tpot_s() const { return decode_steps ? decode_s / decode_steps : 0.0; }
  // Decode throughput over the batch: B x steps / decode time.
  double tokens_per_s() const {
    return decode_s > 0 ? static_cast<double>(new_tokens.size()) * decode_steps / decode_s : 0.0;
  }
};

// Resets the model, runs the prompts (equal lengths) and generates; `after_prefill`, when given,
// is called once the first token is out (before the decode steps, outside their time).
GenerationResult generate(LanguageModel& model, const TokenBatch& prompts, const SamplingOptions& options,
                          const std::function<void()>& after_prefill = {});

}  // namespace ferry::moe
