// The keys and values of one sequence, per layer [1, heads, capacity, width] (MoeConfig's
// kv_cache_heads, kv_key_width and kv_value_width: with MLA, the latent as the key and no value).
//
// Layer l holds positions start(l) .. pos() - 1 at cache indices 0 ..; a windowed layer drops the
// keys no later query can see (it keeps at most W - 1 + T positions for a forward of T tokens),
// every other layer starts at 0. It grows by doubling, never past its position limit
// (max_position_embeddings when none is given), so a sequence of limit P never holds more than
// kv_cache_bytes(config, P): the bound the scheduler's KV accounting reserves.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "moe/model/config.h"

namespace ferry::moe {

// Bytes of the keys and values of `positions` positions in every layer (float32; MLA: the latents).
std::uint64_t kv_cache_bytes(const MoeConfig& config, std::int64_t positions);

class KvCache {
 public:
  // max_positions: the limit (0: max_position_embeddings). InvalidArgument past max_position_embeddings.
  KvCache(const MoeConfig& config, std::int64_t max_positions);

  // Room in every layer for T more positions. InvalidArgument past the limit (or
  // max_position_embeddings); nothing changes then.
  void reserve(std::int64_t T);
  // Writes layer l's keys and values of positions pos() .. pos() + T - 1 (k, v: [1, kv, T, D]) and
  // returns the views of every position the layer holds, [1, kv, S, D], with S = pos() + T - start(l).
  // Slides a windowed layer's keys to index 0 first. Needs reserve(T).
  std::pair<torch::Tensor, torch::Tensor> append(int l, const torch::Tensor& k, const torch::Tensor& v);
  // Keeps positions 0 .. positions - 1 only and sets the limit to `max_positions` (0:
  // max_position_embeddings; the cache shrinks to it), so that a prompt sharing those positions
  // continues from there (prefix caching). False, with nothing changed, when a windowed layer has
  // already dropped a key the next position would attend to, or positions exceed pos() or the limit.
  bool rewind(std::int64_t positions, std::int64_t max_positions);
  // After every layer has appended T tokens.
  void advance(std::int64_t T) { pos_ += T; }

  std::int64_t pos() const { return pos_; }
  std::int64_t start(int l) const { return start_[l]; }
  // Positions held now, summed over layers.
  std::int64_t cached_positions() const;
  // Bytes allocated now.
  std::uint64_t bytes() const;

 private:
  // The first position layer l must keep before a forward of more tokens.
  std::int64_t keep_from(int l) const;

  const MoeConfig* config_;  // the engine's, which outlives its sequences
  std::int64_t limit_;
  std::vector<torch::Tensor> k_, v_;
  std::vector<std::int64_t> start_;
  std::int64_t pos_ = 0;
};

}  // namespace ferry::moe
