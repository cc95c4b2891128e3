// Shared by the engine tests: random token batches, and running the engine over them against
// the reference forward's logits.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "moe/engine/engine.h"
#include "moe/model/checkpoint.h"
#include "moe/model/reference_model.h"

namespace ferry::moe::testing {

// The engine tests' sequences: a prompt of kPrompt tokens, then kDecode decoded one at a time.
constexpr int kPrompt = 5;
constexpr int kDecode = 3;

inline TokenBatch random_tokens(int batch, int len, std::uint64_t seed) {
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  TokenBatch t(batch, std::vector<std::int32_t>(len));
  for (auto& row : t)
    for (auto& v : row) v = static_cast<std::int32_t>(rng() % 256);
  return t;
}

// Reference logits of every position for `seqs` (the plain forward of the checkpoint in `dir`).
inline std::vector<float> reference_logits(const std::string& dir, const TokenBatch& seqs) {
  auto ck = Checkpoint::open(dir);
  auto ref = ReferenceModel::load(*ck);
  return ref->forward(seqs, true);
}

// Runs the engine over `seqs` (the first `prompt` tokens as one prompt, then one token per step)
// and returns every position's logits in that order: [B][prompt][V], then [B][V] per step.
inline std::vector<float> run_logits(MoeEngine& eng, const TokenBatch& seqs, int prompt = kPrompt) {
  const int B = static_cast<int>(seqs.size()), T = static_cast<int>(seqs[0].size());
  eng.reset();
  TokenBatch first(B);
  for (int b = 0; b < B; ++b) first[b].assign(seqs[b].begin(), seqs[b].begin() + prompt);
  std::vector<float> all = eng.forward(first, true);
  for (int t = prompt; t < T; ++t) {
    TokenBatch step(B);
    for (int b = 0; b < B; ++b) step[b] = {seqs[b][t]};
    const std::vector<float> g = eng.forward(step);
    all.insert(all.end(), g.begin(), g.end());
  }
  return all;
}

// run_logits() against `expect` ([B][T][V]); returns the largest absolute difference.
inline double max_diff_vs(MoeEngine& eng, const TokenBatch& seqs, const std::vector<float>& expect,
                          int prompt = kPrompt) {
  const int B = static_cast<int>(seqs.size()), T = static_cast<int>(seqs[0].size());
  const int V = eng.config().vocab_size;
  const std::vector<float> got = run_logits(eng, seqs, prompt);
  double worst = 0;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < prompt; ++t)
      for (int v = 0; v < V; ++v)
        worst = std::max<double>(worst, std::abs(got[(b * prompt + t) * V + v] - expect[(b * T + t) * V + v]));
  const std::size_t steps_at = static_cast<std::size_t>(B) * prompt * V;
  for (int t = prompt; t < T; ++t)
    for (int b = 0; b < B; ++b)
      for (int v = 0; v < V; ++v)
        worst = std::max<double>(
            worst, std::abs(got[steps_at + (static_cast<std::size_t>(t - prompt) * B + b) * V + v] - expect[(b * T + t) * V + v]));
  return worst;
}

}  // namespace ferry::moe::testing
