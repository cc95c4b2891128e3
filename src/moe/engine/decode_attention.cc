#include "moe/engine/decode_attention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ferry::moe {

void rope_in_place(float* x, std::int64_t heads, std::int64_t dim, std::int64_t rotary, const float* cos,
                   const float* sin) {
  const std::int64_t half = rotary / 2;
  for (std::int64_t h = 0; h < heads; ++h) {
    float* r = x + h * dim;
    for (std::int64_t i = 0; i < half; ++i) {
      const float a = r[i], b = r[i + half];
      r[i] = a * cos[i] - b * sin[i];
      r[i + half] = b * cos[i + half] + a * sin[i + half];
    }
  }
}

void attend_one_position(const float* q, std::int64_t heads, std::int64_t kv_heads, std::int64_t dim,
                         const CachedKv& kv, float scale, const float* sinks, float* out) {
  const std::int64_t g = heads / kv_heads, n = kv.count - kv.first;
  // Heads per task: at least ~32 K multiply-adds each, so that a short cache stays on one thread.
  const std::int64_t grain = std::max<std::int64_t>(1, 32768 / std::max<std::int64_t>(1, 2 * n * dim));
  at::parallel_for(0, heads, grain, [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> p(static_cast<std::size_t>(n));
    for (std::int64_t h = begin; h < end; ++h) {
      const float* qh = q + h * dim;
      const float* keys = kv.keys + (h / g) * kv.head_stride + kv.first * kv.row_stride;
      const float* values = kv.values + (h / g) * kv.head_stride + kv.first * kv.row_stride;
      float top = sinks != nullptr ? sinks[h] : -std::numeric_limits<float>::infinity();
      for (std::int64_t j = 0; j < n; ++j) {
        const float* k = keys + j * kv.row_stride;
        float s = 0;
#pragma omp simd reduction(+ : s)
        for (std::int64_t d = 0; d < dim; ++d) s += qh[d] * k[d];
        p[j] = s * scale;
        top = std::max(top, p[j]);
      }
      float sum = sinks != nullptr ? std::exp(sinks[h] - top) : 0.f;
      for (std::int64_t j = 0; j < n; ++j) sum += p[j] = std::exp(p[j] - top);
      float* o = out + h * dim;
      std::fill(o, o + dim, 0.f);
      for (std::int64_t j = 0; j < n; ++j) {
        const float w = p[j] / sum;
        const float* v = values + j * kv.row_stride;
#pragma omp simd
        for (std::int64_t d = 0; d < dim; ++d) o[d] += w * v[d];
      }
    }
  });
}

}  // namespace ferry::moe
