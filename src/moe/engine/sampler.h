// Drawing the next token from a position's logits, with the knobs OpenAI's API and llama.cpp's
// server take. The chain, in the order vLLM and Hugging Face apply it:
//
//   logit_bias added to the logits of the tokens it names (OpenAI)
//   penalties  over the last `penalty_last_n` tokens of the sequence (prompt and generated):
//              repeat (Keskar et al. 2019, "CTRL", as llama.cpp applies it: l / r when l > 0, else l * r),
//              presence and frequency (OpenAI: l - presence * [count > 0] - frequency * count)
//   greedy     temperature 0: the most likely token
//   softmax    p_i ~ exp(l_i / temperature)
//   top-k      the k most likely tokens
//   top-p      the smallest set of the most likely tokens whose probability reaches top_p
//              (Holtzman et al. 2020, "The Curious Case of Neural Text Degeneration")
//   min-p      tokens with p_i >= min_p * max_j p_j (Nguyen et al. 2024, "Min P Sampling")
//   draw       one uniform number from the sequence's generator
//
// Without top-k and top-p nothing is sorted: one pass over the vocabulary.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace ferry::moe {

struct SamplingOptions {
  int max_new_tokens = 64;         // tokens generated per sequence (the first comes from the prefill)
  double temperature = 0.0;        // 0: greedy
  int top_k = 0;                   // >0: sample among the k most likely tokens
  double top_p = 1.0;              // <1: nucleus sampling
  double min_p = 0.0;              // >0: drop tokens less likely than min_p times the most likely
  double repeat_penalty = 1.0;     // 1: off
  double presence_penalty = 0.0;   // 0: off
  double frequency_penalty = 0.0;  // 0: off
  int penalty_last_n = 64;         // tokens of history the penalties look at (llama.cpp's repeat_last_n; -1: all)
  std::vector<std::pair<std::int32_t, float>> logit_bias;  // added to these tokens' logits first (OpenAI's logit_bias)
  std::uint64_t seed = 1;          // sampling seed
  bool penalized() const {
    return repeat_penalty != 1.0 || presence_penalty != 0.0 || frequency_penalty != 0.0 || !logit_bias.empty();
  }
};

// Index of the next token drawn from `logits` (V values). `history`: the sequence's tokens so far
// (only its last penalty_last_n are read, and only when a penalty is set).
int sample_token(const float* logits, int vocab, const SamplingOptions& options, std::uint64_t& rng_state,
                 std::span<const std::int32_t> history = {});

}  // namespace ferry::moe
