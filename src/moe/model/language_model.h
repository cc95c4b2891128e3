// What generation and benchmarks drive: a causal LM with a KV cache over a batch of sequences.
// Implemented by the plain reference forward and by the offloading engine.
#pragma once

#include <cstdint>
#include <vector>

#include "moe/model/config.h"

namespace ferry::moe {

// tokens[b][t]: every row has the same length T (sequences advance in lock step).
using TokenBatch = std::vector<std::vector<std::int32_t>>;

class LanguageModel {
 public:
  virtual ~LanguageModel() = default;
  // Appends `tokens` after what the KV cache holds. Returns float32 logits, row-major:
  // [B][V] of each row's last position, or [B][T][V] of every position when all_positions.
  virtual std::vector<float> forward(const TokenBatch& tokens, bool all_positions = false) = 0;
  // Forgets the KV cache (a new batch of sequences starts at position 0).
  virtual void reset() = 0;
  virtual const MoeConfig& config() const = 0;
};

}  // namespace ferry::moe
