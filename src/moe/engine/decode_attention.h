// Attention for one new position (a decode step), on raw float arrays instead of a libtorch
// operator per step: at small shapes the operators' fixed cost, not the arithmetic, was most of a
// decode token's attention (bench/RESULTS.md, "Where a token's time goes": 450 us a layer at hidden
// 1024 against 1 us of multiply-adds). The engine's attention (engine.cc) takes this path for T = 1
// and its libtorch operators otherwise; both compute the same formulas, so they differ by float
// summation order only.
#pragma once

#include <cstdint>

namespace ferry::moe {

// Rotate-half RoPE in place on `heads` rows of `dim` floats: over the first `rotary` dims, with
// the position's tables cos/sin [rotary] (cat(freqs, freqs), as the engine builds them),
// x_i ← x_i·cos_i − x_{i+R/2}·sin_i for i < R/2 and x_i ← x_i·cos_i + x_{i−R/2}·sin_i above.
void rope_in_place(float* x, std::int64_t heads, std::int64_t dim, std::int64_t rotary, const float* cos,
                   const float* sin);

// The cache of one layer as the attention reads it: key and value of cache index j of KV head h at
// keys + h·head_stride + j·row_stride (values alike), dim floats each; indices [first, count).
struct CachedKv {
  const float* keys = nullptr;
  const float* values = nullptr;
  std::int64_t head_stride = 0, row_stride = 0;
  std::int64_t first = 0, count = 0;
};

// out[h·dim ..] = Σ_j p_hj·v_{h/g, j} for the `heads` query heads q [heads·dim] of `kv_heads` KV
// heads (g = heads / kv_heads), p_h = softmax_j(scale·q_h·k_{h/g, j}); with `sinks` (nullptr: none)
// head h's sink logit joins the softmax's denominator without a value. Parallel over heads.
void attend_one_position(const float* q, std::int64_t heads, std::int64_t kv_heads, std::int64_t dim,
                         const CachedKv& kv, float scale, const float* sinks, float* out);

}  // namespace ferry::moe
